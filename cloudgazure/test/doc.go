// Package test holds the tests of package cloudgazure, which drive real
// ARM clients cloudgazure itself does not require (resource groups,
// virtual networks) besides Resource Graph, against a fake ARM endpoint
// written here, in memory and on 127.0.0.1. It is a module of its own, so
// that a user of cloudgazure never downloads those clients.
package test
