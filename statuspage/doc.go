// Package statuspage serves a live status page of a governor's scopes: an
// http.Handler, standard library only, for a program's debug listener
// (such as /debug/cloudg).
//
// The page lists every live scope of the governor (resilience.Governor's
// Scopes), the most troubled first: an open breaker, then a half-open one,
// then a pause, then a rate held below its ceiling, then calls queued for
// a slot, with the scopes that gave up or skipped calls and were throttled
// most first within each. Each row shows the scope's parts, its rate
// against its ceiling as a bar, how long it is paused for, its breaker in
// colour, its account's calls in flight against the cap and waiting, its
// provider's retry budget, and the throttles, retries, give-ups and
// skipped calls counted for its service. It reloads itself every few
// seconds. The same rows, in the same order, are JSON at ?format=json.
//
// The page is read-only (GET and HEAD; nothing it serves changes the
// governor), has no external assets (its style is inline, allowed by a
// Content-Security-Policy hash, and it runs no script), and escapes every
// scope string: a scope is caller data, and html/template writes it as
// text.
package statuspage
