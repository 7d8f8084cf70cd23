package yamlconf

import "testing"

func TestParseSection(t *testing.T) {
	var dec Decoder
	type sdk struct {
		MaxRetries *int   `yaml:"max_retries"`
		RetryMode  string `yaml:"retry_mode"`
	}
	doc := []byte("ratelimit: {aws: {max_rps: 5}}\naws:\n  max_retries: 3\n  retry_mode: standard\n  regions: [eu-west-1]\n")
	var s sdk
	if err := dec.ParseSection(doc, "aws", &s); err != nil || *s.MaxRetries != 3 || s.RetryMode != "standard" {
		t.Fatalf("%+v %v", s, err)
	}
	var none sdk
	if err := dec.ParseSection([]byte("ratelimit: {}\n"), "aws", &none); err != nil || none.MaxRetries != nil {
		t.Fatal("a document without the section changed dst")
	}
	if err := dec.ParseSection([]byte(""), "aws", &none); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ doc, want string }{
		{"aws: {max_retries: three}\n", `aws.max_retries: "three" is not a number`},
		{"aws: {max_retries: 1.5}\n", `aws.max_retries: "1.5" is not a whole number`},
		{"aws: {retry_mode: [a]}\n", "aws.retry_mode: must be a single value"},
		{"aws: {max_retries: 1, max_retries: 2}\n", "aws.max_retries: duplicate key"},
		{"aws: 3\n", "aws: must be a mapping"},
		{"[1]\n", "aws: must be a mapping"},
	} {
		var s sdk
		if err := dec.ParseSection([]byte(c.doc), "aws", &s); err == nil || err.Error() != c.want {
			t.Errorf("%q: %v, want %s", c.doc, err, c.want)
		}
	}
	if err := dec.ParseSection(doc, "aws", sdk{}); err == nil {
		t.Fatal("a non-pointer dst was accepted")
	}
}

func TestSkipPassesOverAnotherReadersKeys(t *testing.T) {
	type section struct {
		MaxRPS float64 `yaml:"max_rps"`
		AWS    struct {
			Burst float64 `yaml:"burst"`
		} `yaml:"aws"`
	}
	dec := Decoder{Skip: map[string]bool{"ratelimit.live_x": true, "ratelimit.aws.live_y": true}}
	n, err := Document([]byte("max_rps: 2\nlive_x: [whatever]\naws: {burst: 3, live_y: -1}\n"), "ratelimit")
	if err != nil {
		t.Fatal(err)
	}
	var s section
	if err := dec.Decode(&s, n, "ratelimit", false); err != nil || s.MaxRPS != 2 || s.AWS.Burst != 3 {
		t.Fatalf("%+v %v", s, err)
	}
	// Only the listed paths are skipped: the same key elsewhere is unknown.
	n, err = Document([]byte("aws: {live_x: 1}\n"), "ratelimit")
	if err != nil {
		t.Fatal(err)
	}
	if err := dec.Decode(&s, n, "ratelimit", false); err == nil || err.Error() != "ratelimit.aws.live_x: unknown key" {
		t.Fatalf("got %v", err)
	}
}
