package resilience

import "time"

// The proactive pauses an integration makes when an answer says the quota
// is nearly spent, before any throttling.

// Pause holds every call of the scope's leaf for d (capped at MaxPause),
// without touching its rate: a proactive pause, such as Resource Graph's
// quota reaching zero.
func (gd *Guard) Pause(d time.Duration) {
	if gd.e != nil {
		gd.live()
		gd.recordPause(gd.e.leaf, "leaf", d)
	}
}

// PauseAccount holds every call of the scope's account for d (capped at
// MaxPause), whatever the service; without an account bucket it pauses the
// leaf. ARM's low remaining-reads header uses it.
func (gd *Guard) PauseAccount(d time.Duration) {
	if gd.e == nil {
		return
	}
	gd.live()
	b, level := gd.e.acct.bucket, "account"
	if b == nil {
		b, level = gd.e.leaf, "leaf"
	}
	gd.recordPause(b, level, d)
}
