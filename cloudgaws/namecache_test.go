package cloudgaws

import "testing"

// The service-name cache answers a known ID without allocating, and the
// installation's overrides win.
func TestNameCache(t *testing.T) {
	var c nameCache
	over := map[string]string{"Fancy Service": "fancy"}
	if got := c.lookup("Fancy Service", over); got != "fancy" {
		t.Fatal(got)
	}
	if got := c.lookup("Secrets Manager", over); got != "secretsmanager" {
		t.Fatal(got)
	}
	if n := testing.AllocsPerRun(100, func() { _ = c.lookup("Secrets Manager", over) }); n != 0 {
		t.Fatalf("%v allocations per lookup", n)
	}
}
