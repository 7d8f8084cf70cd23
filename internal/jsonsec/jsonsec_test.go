package jsonsec

import (
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// bound is the longest duration whose seconds, a float64, read back to
// the nanosecond: 2^23 s, about 97 days. Below it a float64 of seconds is
// spaced by 2^-30 s at most, less than a nanosecond; from it on by 2^-29
// s, about 1.9 ns, and Duration rounds to a neighbour.
const bound = time.Duration(1<<23) * time.Second

// Every duration of at most 2^23 s either way reads back from its
// seconds to the nanosecond, as the package's godoc says: each of the
// last million nanoseconds below the bound and above its negative, and
// a million drawn from the whole span.
func TestDurationReadsBackToTheNanosecondUpTo2To23Seconds(t *testing.T) {
	check := func(d time.Duration) {
		t.Helper()
		if got := Duration(d.Seconds()); got != d {
			t.Fatalf("Duration(%v.Seconds()) = %v, %d ns off; want it back", d, got, got-d)
		}
	}
	for i := range time.Duration(1_000_000) {
		check(bound - i)
		check(-bound + i)
	}
	r := rand.New(rand.NewPCG(23, 97))
	for range 1_000_000 {
		check(time.Duration(r.Int64N(2*int64(bound)+1)) - bound)
	}
}

// Past 2^23 s a duration may read back a nanosecond off (of the first
// million nanoseconds past the bound, some do), and never further off
// than half the spacing of a float64 of seconds there, in nanoseconds
// rounded up: 1 ns below 2^24 s, 954 ns at the end of a Duration's range,
// whose ends read back as themselves.
func TestDurationPast2To23SecondsIsOffByHalfAFloatsSpacingAtMost(t *testing.T) {
	off := 0
	for i := range time.Duration(1_000_000) {
		d := bound + 1 + i
		got := Duration(d.Seconds())
		if got != d {
			off++
		}
		if e := got - d; e > 1 || e < -1 {
			t.Fatalf("Duration(%v.Seconds()) = %v, %d ns off; want 1 at most below 2^24 s", d, got, e)
		}
	}
	if off == 0 {
		t.Fatal("every one of the first million nanoseconds past 2^23 s read back exactly; the bound is further")
	}
	r := rand.New(rand.NewPCG(24, 63))
	for range 1_000_000 {
		d := bound + time.Duration(r.Int64N(math.MaxInt64-int64(bound)))
		if r.IntN(2) == 0 {
			d = -d
		}
		secs := d.Seconds()
		half := math.Ceil((math.Nextafter(math.Abs(secs), math.Inf(1)) - math.Abs(secs)) * 1e9 / 2)
		if e := math.Abs(float64(Duration(secs) - d)); e > half {
			t.Fatalf("Duration(%v.Seconds()) is %v ns off; want %v at most", d, e, half)
		}
	}
	for _, d := range []time.Duration{math.MaxInt64, math.MinInt64} {
		if got := Duration(d.Seconds()); got != d {
			t.Errorf("Duration(%v.Seconds()) = %v; want it back", d, got)
		}
	}
}

// Unmarshal reads a number of seconds beyond a Duration's range as its
// largest or smallest, one beyond a float64's (1e400) included, which
// encoding/json refuses to read into a float64; a value that is no number
// is a *json.UnmarshalTypeError that names its key, and null or a key
// left out leaves the duration as it was.
func TestUnmarshalReadsSecondsBeyondTheRangeAsItsEnds(t *testing.T) {
	for _, c := range []struct {
		doc  string
		want time.Duration
	}{
		{`{"w": 1e400}`, math.MaxInt64},
		{`{"w": -1e400}`, math.MinInt64},
		{`{"w": 1e300}`, math.MaxInt64},
		{`{"w": -1e19}`, math.MinInt64},
		{`{"w": 1.5}`, 1500 * time.Millisecond},
		{`{"w": 1e-400}`, 0},
		{`{"w": null}`, 7},
		{`{}`, 7},
	} {
		d := time.Duration(7)
		var v struct{}
		if err := Unmarshal([]byte(c.doc), &v, "w", &d); err != nil || d != c.want {
			t.Errorf("Unmarshal(%s) = %v, %v; want %v", c.doc, d, err, c.want)
		}
	}
	for _, doc := range []string{`{"w": "5"}`, `{"w": true}`, `{"w": [1e400]}`, `{"w": {"x": 1}}`} {
		d := time.Duration(7)
		var v struct{}
		err := Unmarshal([]byte(doc), &v, "w", &d)
		var te *json.UnmarshalTypeError
		if !errors.As(err, &te) || te.Field != "w" || d != 7 {
			t.Errorf("Unmarshal(%s) = %v, %v; want a *json.UnmarshalTypeError of field w, the duration left as it was", doc, d, err)
		}
	}
}

// A Float writes a finite value as the number it is and every other as
// null, and reads null back as NaN, a number as itself.
func TestFloatWritesNullForNoNumber(t *testing.T) {
	for _, c := range []struct {
		f    float64
		json string
	}{{0, "0"}, {-2.5, "-2.5"}, {1e300, "1e+300"}, {math.NaN(), "null"}, {math.Inf(1), "null"}, {math.Inf(-1), "null"}} {
		b, err := json.Marshal(Float(c.f))
		if err != nil || string(b) != c.json {
			t.Errorf("Float(%v) is %s, %v; want %s", c.f, b, err, c.json)
		}
		var back Float = 7
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if want := c.f; math.IsInf(want, 0) || math.IsNaN(want) {
			if !math.IsNaN(float64(back)) {
				t.Errorf("%s read back as %v, want NaN", b, back)
			}
		} else if float64(back) != want {
			t.Errorf("%s read back as %v, want %v", b, back, want)
		}
	}
	var f Float
	if err := json.Unmarshal([]byte(`"1"`), &f); err == nil {
		t.Error("a string read as a Float")
	}
}
