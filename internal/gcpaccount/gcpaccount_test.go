package gcpaccount

import (
	"strings"
	"testing"
)

// Google Cloud's account forms are valid, each by its documented rule: a
// project's id of 6 to 30 lower-case letters, digits and hyphens, a
// letter first and no hyphen last (1 to 30 with short); a domain-scoped
// project's, whose domain is two labels or more, 253 characters at most;
// a project's, an organization's or a folder's number, a 64-bit one
// (18446744073709551615 at most, 20 digits).
// Anything else is not, short or not.
func TestValidTakesGoogleCloudsAccountFormsOnly(t *testing.T) {
	label := strings.Repeat("a", 63)
	for account, want := range map[string][2]bool{ // valid, valid with short
		"projects/abcdef":                          {true, true},
		"projects/a23456789012345678901234567890":  {true, true},
		"projects/my-project-1":                    {true, true},
		"projects/example.com:my-project":          {true, true},
		"projects/123456789012":                    {true, true},
		"projects/18446744073709551615":            {true, true},
		"folders/18446744073709551615":             {true, true},
		"projects/18446744073709551616":            {false, false},
		"projects/" + strings.Repeat("9", 20):      {false, false},
		"projects/+123456789012":                   {false, false},
		"organizations/123456789012":               {true, true},
		"folders/987654321098":                     {true, true},
		"projects/p1":                              {false, true},
		"projects/abcde":                           {false, true},
		"projects/example.com:p1":                  {false, true},
		"projects/a234567890123456789012345678901": {false, false},
		"projects/" + strings.Repeat("9", 21):      {false, false},
		"folders/" + strings.Repeat("9", 21):       {false, false},
		"organizations/my-org":                     {false, false},
		"folders/":                                 {false, false},
		"projects/":                                {false, false},
		"projects/my-project-":                     {false, false},
		"projects/1project":                        {false, false},
		"projects/My-Project":                      {false, false},
		"projects/-":                               {false, false},
		"projects/_":                               {false, false},
		"projects/my-project\n":                    {false, false},
		"projects/my project":                      {false, false},
		"projects/my-project/topics":               {false, false},
		"projects/com:my-project":                  {false, false},
		"projects/.com:my-project":                 {false, false},
		"projects/-example.com:my-project":         {false, false},
		"projects/" + strings.Repeat(label+".", 3) + "com:my-project": {true, true},   // 196 characters
		"projects/" + strings.Repeat(label+".", 4) + "com:my-project": {false, false}, // 259
		"projects/" + label + "a.com:my-project":                      {false, false}, // a label of 64
		"buckets/my-bucket":                                           {false, false},
		"my-project":                                                  {false, false},
	} {
		if got := [2]bool{Valid(account, false), Valid(account, true)}; got != want {
			t.Errorf("Valid(%q, false), Valid(%q, true) = %v; want %v", account, account, got, want)
		}
	}
}
