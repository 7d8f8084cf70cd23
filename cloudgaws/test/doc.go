// Package test holds the tests of package cloudgaws that drive real AWS
// SDK clients cloudgaws itself does not require (EC2 and Secrets Manager,
// with STS) against a fake AWS endpoint written here, in memory and on
// 127.0.0.1. It is a module of its own, so that a user of cloudgaws never
// downloads those clients.
package test
