// Package test holds the tests of package fleet that talk to Redis:
// against miniredis in the process (which runs the Lua scripts), against a
// real redis-server and against a real three-node Redis Cluster on
// 127.0.0.1 when ./scripts/test starts them, and against redis-server
// processes a test starts itself (TLS, Sentinel). It is a module of its
// own, so that fleet never requires miniredis.
package test
