package liveop

import (
	"reflect"
	"testing"
)

// Check, Status and CooldownRemaining read a Guard and change nothing of
// it, the zero Guard too: it stays zero (its settings those of a zero
// Config, given the first time a Run or MarkCompleted uses it), and Check
// answers as a Guard made by New(Config{}) does.
func TestReadingTheZeroGuardLeavesItZero(t *testing.T) {
	var g Guard
	fresh := newGuard(t, Config{})
	for _, r := range []Request{req("k", "aws/1"), req("k", "aws/1", "aws/1"), {Key: "k"}} {
		got, want := g.Check(r), fresh.Check(r)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("Check(%+v) of the zero Guard: %v, want %v (New(Config{})'s)", r, got, want)
		}
	}
	g.Status()
	g.CooldownRemaining("aws/1")
	v := reflect.ValueOf(&g).Elem()
	for i := range v.NumField() {
		if name := v.Type().Field(i).Name; name != "mu" && !v.Field(i).IsZero() {
			t.Errorf("the zero Guard's %s after Check, Status and CooldownRemaining: not zero, want it unwritten", name)
		}
	}
}
