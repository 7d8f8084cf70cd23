// Package gcpaccount is Google Cloud's grammar of the ids of the
// resources the governor's GCP scopes take for accounts (projects,
// organizations and folders), in one place: cloudggcp reads the account
// of a call with it, and the mcpscan example checks the account an agent
// asks it to scan with it, so that the two take the same ids. It imports
// nothing but the standard library, so that a module may use it without
// cloudggcp's SDK dependencies.
package gcpaccount

import (
	"strconv"
	"strings"
)

// ValidID reports whether id is, by Google Cloud's grammar, the id of a
// resource of kind ("projects", "organizations" or "folders"): an
// organization's or a folder's number; a project's number, its id, or a
// legacy domain-scoped project's id (example.com:my-project). A number is
// 1 to 20 digits, a 64-bit number's (Google Cloud's APIs give
// them as int64s, Compute's a project's as a uint64). A project's id is 6 to 30 lower-case letters,
// digits and hyphens, a letter first and no hyphen last, as Google Cloud
// gives them; with short set, ids of 1 to 5 such characters are taken too
// (p1, test), which Google Cloud gives no project but an emulator answers.
// A domain is two labels or more of lower-case letters, digits and
// hyphens, none starting or ending with a hyphen, 63 characters at most
// each and 253 in all. A wildcard (- or _) is none, nor is an id that
// holds anything else: a newline, a space, an upper-case letter, a slash.
func ValidID(kind, id string, short bool) bool {
	switch kind {
	case "organizations", "folders":
		return number(id)
	case "projects":
		if domain, p, ok := strings.Cut(id, ":"); ok {
			return validDomain(domain) && projectID(p, short)
		}
		return number(id) || projectID(id, short)
	}
	return false
}

// Valid reports whether account is a resource's name, kind/id, whose id
// is valid for its kind (see ValidID): projects/my-project,
// organizations/123, folders/456.
func Valid(account string, short bool) bool {
	kind, id, ok := strings.Cut(account, "/")
	return ok && ValidID(kind, id, short)
}

// number reports whether id is a resource's number: decimal digits of a
// 64-bit number, as Google Cloud's APIs type them (Resource Manager's an
// int64, Compute's a project's a uint64), 18446744073709551615 at most
// (20 digits; 99999999999999999999, 20 digits too, is none).
func number(id string) bool {
	_, err := strconv.ParseUint(id, 10, 64)
	return err == nil
}

func projectID(id string, short bool) bool {
	if len(id) > 30 || len(id) < 6 && !short || id == "" || id[0] < 'a' || id[0] > 'z' || id[len(id)-1] == '-' {
		return false
	}
	for _, c := range []byte(id) {
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// validDomain reports whether d is the domain of a domain-scoped project
// (example.com in example.com:my-project): two labels or more of
// lower-case letters, digits and hyphens, none starting or ending with a
// hyphen, 63 characters at most each and 253 in all.
func validDomain(d string) bool {
	labels := strings.Split(d, ".")
	if len(d) > 253 || len(labels) < 2 {
		return false
	}
	for _, l := range labels {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		for _, c := range []byte(l) {
			if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}
