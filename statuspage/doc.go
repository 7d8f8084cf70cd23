// Package statuspage serves a live status page of a governor's scopes: an
// http.Handler, standard library only, for a program's debug listener
// (such as /debug/cloudg).
//
// The page fits a window 1280 pixels wide without a horizontal scroll,
// and a wider one gives the room it has to the values a narrower one
// cuts short: a region such as europe-west1 and a service's operation of
// 40 characters are whole in a laptop's 1366 or 1440, a provider of 24
// characters, a region such as northamerica-northeast1 and a service's
// operation of 56 characters in a desktop's 1920. It shows, from the
// top:
//
//   - a card per state with the live scopes in it and what the state means,
//     which is the page's legend: open (the breaker refuses calls until its
//     probe; a breaker in a state that is none of closed, half-open and
//     open is counted here too, its row saying its state is unknown),
//     half-open (one probe is out), paused (a pause holds every
//     call), dead (every answer fails: throttled for good, or down),
//     slowed (the rate is held below its ceiling), queued (callers wait for
//     a token of the scope's bucket, its account's or its provider's) and
//     ok;
//   - the governor's totals, the calls lost by kind (gave up, skipped,
//     failed, refused, cancelled, errored, panicked, denied), the longest wait for
//     a token, each provider's retry budget, once (still after its
//     scopes are reclaimed, while the governor holds it spent: only
//     successes refund a budget; resilience.Governor.Providers, its
//     tokens below its size, both read at once by
//     resilience.Governor.BudgetAndSize, whatever the page read before), each
//     provider's provider-wide bucket (global_max_rps) with the callers
//     queued on it, once, and the
//     providers disabled, whose calls go straight through, ungoverned
//     (each one the page has seen, for as long as it is disabled, though
//     the governor forgets such a provider between its calls; what their
//     scopes learned is shown nowhere on the page: it is not where their
//     calls stand);
//   - the live scopes (resilience.Governor's Scopes) of the providers
//     enabled, trouble first: the
//     rows of a service scope together, the services by their worst row's
//     state and then by key, a service's rows by state and then by key, so
//     that a row stays where it is from one refresh to the next while its
//     state holds. A row shows its state, its parts (a long one abbreviated,
//     the whole on hover), its rate against its ceiling as a bar, the time
//     left in the longest pause holding it (its account's marked acct, its
//     provider bucket's prov, when longer than its own), its breaker with the time to its probe and why it
//     opened (throttling or errors after retries; a dead scope throttled
//     for good or down), and the callers queued for its tokens, or for
//     its account's bucket (marked acct) or its provider's (prov) when
//     more wait there, where its next call would wait behind them; the
//     throttles, retries and lost calls, which the governor counts per
//     service, fill one cell spanning the rows of the service (a count
//     past 99,999 in three figures and a unit, 123k or 12.3M, the whole
//     on hover, so that a long-running governor's counts keep the table's
//     width; a kind of lost calls stays on one line with its count, 12345
//     cancelled, and an account's mark goes under the time left in its
//     pause when the table needs the room);
//   - each account once: its slots in use against the cap, the callers
//     waiting for a slot, and its own bucket where the provider has one,
//     with the time left in its pause and the callers queued on it (or
//     its provider bucket's pause, which holds the account's calls too,
//     and the callers queued there, each marked prov, when longer or more).
//
// Narrower windows degrade: below 1260 pixels the rate bars and the calls
// column go and long values are cut shorter (a service's operation goes
// on a second line instead, never cut, broken between the words of its
// name: Describe, Vpc, Endpoint of a CamelCase one); below 960 each row
// becomes a block of labelled values. The page reloads itself every few seconds; the
// same rows, accounts and providers, in the same order, are JSON at
// ?format=json, with the values the cells show: a row's or an account's
// queued is its queued cell's count, the callers its next call would
// wait behind, and queued_on names the bucket they wait on when it is
// not its own ("account" or "provider", the cell's acct or prov); an
// account's paused_seconds is its paused cell's time, and a row's or an
// account's paused_on names whose pause it is when not its own, in the
// same way. A queue or a pause of an account's or a provider's bucket is
// in each row (and account) it holds; the provider's own queue is in its
// provider's queued, once. A value a state.Store answered that is no
// finite number (a rate, a balance or a retry budget of NaN, +Inf or
// -Inf, which JSON cannot write) is null in the JSON, which no number
// is, and NaN, +Inf or -Inf on the page: the page is served all the same.
//
// A scope's parts are caller data, of any length. The HTML shows each
// (and a provider's name, and why a breaker opened) at most 128
// characters long, its first 127 and an ellipsis, in its cell, its
// tooltip and its row's data-scope alike, so that the page's size is
// bounded by the limit of rows (WithLimit) whatever the parts' lengths;
// the whole on hover is the whole of a value up to that length. The JSON
// holds every value whole, as the governor holds it, for a program to
// match rows by key: its size grows with the parts' lengths.
//
// The page is read-only (GET and HEAD; nothing it serves changes the
// governor), has no external assets (its style is inline, allowed by a
// Content-Security-Policy hash, and it runs no script), and escapes every
// scope string: a scope is caller data, and html/template writes it as
// text, isolated from the text around it, so that a bidi control it
// holds (U+202E) turns no other figure around, and in the page's
// direction, left to right, whatever script it is written in. A tooltip,
// plain text where nothing isolates, holds a scope's part alone (the
// whole of a provider, an account or a region cut short), never beside
// other text.
package statuspage
