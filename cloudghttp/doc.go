// Package cloudghttp governs any HTTP API with the process-wide governor
// of package resilience: a Transport is an http.RoundTripper that paces,
// retries and counts every request of the http.Client it is installed in.
//
//	client := &http.Client{Transport: cloudghttp.NewTransport(nil, cloudghttp.GitHub("my-org"))}
//
// Each request is one logical call of a resilience.Guard, whose scope the
// Transport's scope function gives (GitHub, or a function of your own),
// and each attempt of it is governed as cloudgazure governs an ARM
// attempt: the breaker, the deadline, one counted call, a token of the
// provider, account and leaf buckets, and a bulkhead slot held while the
// attempt is on the wire. The answer is classified by its status (429 and
// 503 throttle: the leaf's rate is halved and paused for Retry-After; 408,
// 500, 502 and 504, a CDN's answers that it could not reach the origin
// (Cloudflare's 520 to 524) and connection errors are transient; other
// error statuses are fatal answers, unless the status line mentions
// throttling, as in "400 Rate Exceeded"), except for GitHub's scopes,
// whose rate-limit headers are read too, and the body of a 403 or 429
// that they say nothing of, for a secondary rate limit (see GitHub).
//
// The Transport retries by itself what is safe to send again (see
// Transport.RoundTrip), never sooner than the provider's hint, within the
// attempts, deadline and retry budget of the provider's policy. The caller
// gets the last response as a response, so the client's own handling of
// error statuses keeps working.
//
// The package is part of the core module and adds no dependency to it:
// it imports the standard library, package resilience and the core's
// internal packages. cloudggcp uses it to govern Google's REST clients.
package cloudghttp
