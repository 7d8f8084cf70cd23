package resilience

import "testing"

// A rate refused as too slow for deadline_seconds says how often its
// token comes with the digits that show it apart from the deadline: a
// rate a hair under one token per deadline (0.142857 rps against 7 s)
// said "a token every 7 s, longer than deadline_seconds (7 s)". What the
// error says to set is accepted.
func TestATooSlowRateShowsItsTokenApartFromTheDeadline(t *testing.T) {
	wantMistakes(t, "providers: {acme: {deadline_seconds: 7, max_rps: 0.142857}}\n",
		"ratelimit.providers.acme.max_rps: 0.142857 rps is a token every 7.00001 s, longer than deadline_seconds (7 s): a call that waits for one would be refused; set it to 0.143 rps or more, or ratelimit.providers.acme.deadline_seconds to 7.01 s or more")
	wantMistakes(t, "providers: {acme: {deadline_seconds: 3, services: {orders: {max_rps: 0.333333333}}}}\n",
		"ratelimit.providers.acme.services.orders.max_rps: 0.333333333 rps is a token every 3.000000003 s, longer than deadline_seconds (3 s): a call that waits for one would be refused; set it to 0.334 rps or more, or ratelimit.providers.acme.deadline_seconds to 3.01 s or more")
	// Where it is the deadline exactly, it says so, with three digits.
	wantMistakes(t, "providers: {acme: {deadline_seconds: 8, max_rps: 0.125}}\n",
		"ratelimit.providers.acme.max_rps: 0.125 rps is a token every 8 s, as long as deadline_seconds (8 s): a call that waits for one would be refused; set it to 0.126 rps or more, or ratelimit.providers.acme.deadline_seconds to 8.01 s or more")
	for _, doc := range []string{
		"providers: {acme: {deadline_seconds: 7, max_rps: 0.143}}\n",
		"providers: {acme: {deadline_seconds: 7.01, max_rps: 0.142857}}\n",
		"providers: {acme: {deadline_seconds: 3, services: {orders: {max_rps: 0.334}}}}\n",
		"providers: {acme: {deadline_seconds: 3.01, services: {orders: {max_rps: 0.333333333}}}}\n",
		"providers: {acme: {deadline_seconds: 8, max_rps: 0.126}}\n",
		"providers: {acme: {deadline_seconds: 8.01, max_rps: 0.125}}\n",
	} {
		accepted(t, doc)
	}
}

// A max_rps too slow for deadline_seconds and below the floor set for its
// leaf is two mistakes, both reported at once, as every mistake of a
// document is: the first alone said to set it to 0.00112 rps, or
// deadline_seconds to 2010 s, each of which the floor then refused.
// Setting what both say is accepted.
func TestATooSlowRateBelowAFloorIsBothMistakesAtOnce(t *testing.T) {
	wantMistakes(t, "aws: {min_rps: 0.5, services: {iam: {max_rps: 0.0005}}}\n",
		"ratelimit.aws.services.iam.max_rps: 0.0005 rps is a token every 2000 s, longer than deadline_seconds (900 s, the default): a call that waits for one would be refused; set it to 0.00112 rps or more, or ratelimit.aws.deadline_seconds to 2010 s or more",
		"ratelimit.aws.services.iam.max_rps: 0.0005 rps is below the floor of the adaptive rate in force here (0.5 rps, ratelimit.aws.min_rps): set min_rps here at or below it to go this low")
	wantMistakes(t, "aws: {services: {iam: {min_rps: 0.5}, iam.ListRoles: {max_rps: 0.0005}}}\n",
		"ratelimit.aws.services.iam.ListRoles.max_rps: 0.0005 rps is a token every 2000 s, longer than deadline_seconds (900 s, the default): a call that waits for one would be refused; set it to 0.00112 rps or more, or ratelimit.aws.deadline_seconds to 2010 s or more",
		"ratelimit.aws.services.iam.ListRoles.max_rps: 0.0005 rps is below the floor of the adaptive rate in force here (0.5 rps, ratelimit.aws.services.iam.min_rps): set min_rps here at or below it to go this low")
	accepted(t, "aws: {min_rps: 0.5, services: {iam: {max_rps: 0.00112, min_rps: 0.00112}}}\n")
	accepted(t, "aws: {min_rps: 0.5, deadline_seconds: 2010, services: {iam: {max_rps: 0.0005, min_rps: 0.0005}}}\n")
}
