// Package test holds the tests of package cloudggcp that need a Google
// client cloudggcp itself does not require: the real Compute Engine REST
// client against a fake written here on 127.0.0.1, and RESTScope against
// every method of the discovery documents google.golang.org/api ships. It
// is a module of its own, so that cloudggcp never requires the compute
// client.
package test
