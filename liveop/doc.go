// Package liveop guards whole live operations (a collection of an AWS
// account, an Azure subscription, a GCP project) one level above the
// per-call governor of package resilience. It is for programs, such as an
// MCP server behind an AI agent, that start live collections far more often
// than a person would: where the governor paces each API call, a Guard
// decides whether a new collection may start at all, and when it refuses,
// the refusal tells the caller when to retry and to use its cached dataset
// meanwhile.
//
// # Rules
//
// Run admits an operation under these rules, in this order:
//
//  1. Single flight. A Request whose Key matches an operation still
//     running joins it: the operation is not started again, every caller
//     gets the same result or the same error, and Status counts the join.
//     Joining uses no quota and is never refused, but where it would
//     wait for itself: a Run given the context of an operation's function
//     for the key of that operation (or of one it runs inside, or of one
//     that waits for it, such as an operation whose function joined it
//     or waits for a slot only it holds: see Caps) returns an error
//     matching ErrNested at once (an operation it runs inside waits for
//     it only while that operation's Run for it has not returned). Key
//     makes keys from the parts of a request, so the same request in
//     another key order is the same operation.
//  2. Quota. A caller starts at most Config.CallerMaxOperations operations
//     in a sliding window of Config.CallerWindowSeconds; past that it is
//     refused (ErrQuota) until the oldest start leaves the window.
//  3. Cooldown. When an operation ends, each of its scopes cools down for
//     the provider's cooldown (Config.CooldownSeconds, or the provider's
//     entry of Config.ProviderCooldownSeconds; the provider is the text
//     of the scope before its first "/" or ":"), after a failure too
//     unless Config.CooldownAfterFailure is false. An operation touching a
//     cooling scope is refused (ErrCooldown) with the longest time left,
//     unless its Request sets Bypass.
//  4. Caps. At most Config.MaxConcurrent operations run per scope and
//     Config.MaxConcurrentTotal in all; past that a new operation is
//     refused (ErrBusy), or, with Request.Wait, waits for a slot (its
//     context bounds the wait) and joins an identical operation that
//     starts meanwhile. Waiting callers get slots in the order they
//     came: a freed slot goes to the first of them it lets start, and is
//     kept for it, so that no caller that came later (waiting or not)
//     takes it; and a caller that needs two scopes, one of them still
//     full, keeps the free slot of the other, so that a caller that came
//     later for that scope alone does not take it. A Run inside an
//     operation's function takes such a slot all the same (the caller
//     that keeps it may be waiting for that operation, which waits for
//     the Run): a Run made on the function's goroutine, with whatever
//     context (a helper's own, context.Background), or on another
//     goroutine with a context derived from the function's, for as long
//     as the function runs (work that outlives it, with a
//     context.WithoutCancel of its context, is inside no operation once
//     the function has returned, even a Run of it that was waiting for a
//     slot then). (On the function's goroutine, one Guard's Run cannot
//     tell whose operation it is inside: a Run of another Guard there
//     takes that Guard's kept slots too, ahead of its waiting callers.) A
//     Run made with the function's context, or one derived from it, that
//     would wait for a slot only that operation (or one it runs inside,
//     or one that waits for it, such as an operation whose function
//     joined it) can free is refused at once, the busy refusal wrapping
//     ErrNested, whose message says to make it once the operation it
//     runs inside has returned.
//     Those refusals, and single flight's, need the context: a Run with
//     a context of its own cannot tell which operation it is inside.
//
// An admitted operation takes its slots and its quota entry before it
// starts, so a caller racing it sees them.
//
// # Lifetimes
//
// The operation runs on its own goroutine with a context that keeps the
// values of the first caller's context but not its cancellation. It is
// cancelled after its timeout (Request.Timeout, or
// Config.OperationTimeoutSeconds), and its callers then get a timeout
// refusal (ErrTimeout) at once; it is also cancelled when every caller
// waiting for it has gone (each gets its own context's error; the
// function's context has the cause ErrAbandoned). Its slots are freed,
// and its scopes start cooling down, when its function returns:
// normally, with an error, or by panicking (the callers then get a
// *PanicError, matching ErrPanicked, with the panic's value and stack,
// or ErrGoexit for a function that called runtime.Goexit).
// A function that ignores its context keeps its slots until it returns,
// because it may still be calling the cloud.
//
// # Time
//
// Every wait is a select on a channel and the context, and time is read
// with time.Now, so a Guard used inside a testing/synctest bubble runs in
// virtual time. A Guard keeps no channel or timer of a bubble once the
// bubble's operations have ended and its callers have gone, so that one
// Guard per process serves test after test, each in a bubble of its own
// (but not two bubbles at once, nor a bubble and goroutines outside it).
// It keeps the bubble's cooldowns and callers' starts, though, at the
// times of the bubble's clock, which starts again at midnight UTC on
// 2000-01-01 in the next bubble: there a cooldown begun an hour into the
// last has that hour and its length left, longer than any cooldown, and
// a start is in the quota window for that much longer. Call ResetAll
// between such tests.
package liveop
