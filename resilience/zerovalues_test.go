package resilience

import (
	"context"
	"strings"
	"testing"
)

// A zero Bound and a zero Survey are not usable (their godoc says so):
// their methods panic with a message that names the type and the way to
// make one, not with a nil pointer dereference.
func TestZeroBoundAndSurveyPanicSayingSo(t *testing.T) {
	nop := func(context.Context) error { return nil }
	for name, call := range map[string]func(){
		"Bound.Do":       func() { new(Bound).Do(context.Background(), nop) },
		"Bound.Begin":    func() { new(Bound).Begin(context.Background()) },
		"Survey.Look":    func() { new(Survey).Look(ec2Vpcs) },
		"Survey.Inspect": func() { new(Survey).Inspect(ec2Vpcs) },
	} {
		typ, _, _ := strings.Cut(name, ".")
		msg := panicOf(call)
		if !strings.Contains(msg, "zero "+typ) || !strings.Contains(msg, "make one with Governor.") {
			t.Errorf("%s of a zero %s panicked with %q, want a message naming the zero %s and how to make one", name, typ, msg, typ)
		}
	}
}

// panicOf returns what f panicked with, as a string ("" if it did not).
func panicOf(f func()) (msg string) {
	defer func() {
		if v := recover(); v != nil {
			if err, ok := v.(error); ok {
				msg = err.Error()
			} else {
				msg, _ = v.(string)
			}
		}
	}()
	f()
	return ""
}
