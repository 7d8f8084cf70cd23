package statuspage

import (
	"slices"
	"unicode/utf8"
)

// maxShown is the most characters of a string of caller or store data
// (a scope's part, a provider's name, why a breaker opened) the HTML
// page shows: such a string may be of any length, and the page's size
// is bounded by its limit of rows only if each row's is.
const maxShown = 128

// clip returns s when it is at most maxShown characters long, and
// otherwise its first maxShown-1 characters and an ellipsis (…).
func clip(s string) string {
	if len(s) <= maxShown || utf8.RuneCountInString(s) <= maxShown {
		return s
	}
	n := 0
	for i := range s {
		if n == maxShown-1 {
			return s[:i] + "…"
		}
		n++
	}
	return s
}

// clipped returns the page as its HTML shows it: p with every string of
// caller or store data it shows cut to maxShown characters (see clip),
// and each row's key that of its scope's parts so cut. p is left as it
// is: its JSON holds those strings whole.
func (p page) clipped() page {
	p.Scopes = slices.Clone(p.Scopes)
	for i := range p.Scopes {
		r := &p.Scopes[i]
		sc := &r.Scope
		sc.Provider, sc.Account, sc.Region, sc.Service, sc.Operation = clip(sc.Provider), clip(sc.Account), clip(sc.Region), clip(sc.Service), clip(sc.Operation)
		r.Key = sc.Key()
		r.Reason = clip(r.Reason)
	}
	p.Accounts = slices.Clone(p.Accounts)
	for i := range p.Accounts {
		a := &p.Accounts[i]
		a.Provider, a.Account = clip(a.Provider), clip(a.Account)
	}
	p.Providers = slices.Clone(p.Providers)
	for i := range p.Providers {
		p.Providers[i].Name = clip(p.Providers[i].Name)
	}
	p.Disabled = slices.Clone(p.Disabled)
	for i, name := range p.Disabled {
		p.Disabled[i] = clip(name)
	}
	return p
}
