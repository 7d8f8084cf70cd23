// Package test holds the tests of package cloudghttp that need a
// third-party client: the real go-github client against a fake GitHub API
// written here, in memory (in virtual time) and on 127.0.0.1. It is a
// module of its own, so that the core module never requires go-github.
package test
