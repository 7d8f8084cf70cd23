package resilience

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"sync"

	"github.com/cloudg/cloudg/internal/errread"
)

// The classifier reads every error of the process, an application's or an
// SDK's, through that error's own methods (Error, Unwrap, ErrorCode,
// HTTPStatusCode, the readers the integrations register, ...). Some panic:
// a typed nil pointer whose methods read their receiver (a nil
// *smithy.OperationError, *azcore.ResponseError or *googleapi.Error, an
// application's own type), or an SDK's response error without its
// response. Such a panic is the error's, not the governor's, and must not
// crash the process in the governor's code: the read that met it recovers,
// and the error is unreadable. An unreadable error is FATAL and no
// provider's answer (a local error: a governed call that ends with it is
// lost as errored), carries no hint, and its description says which
// method of which type panicked, and how; the first such panic of each
// type is logged, at Warn.
// What was read whole before the panic stands when it decides (see
// facts.unreadable): an outer layer's code, or the error's own when only
// its Unwrap panicked.
// Only a panic of the error's methods, or of a registered errread.Reader
// reading it, is recovered: a panic of the classifier's own code between
// those calls is a bug of cloudg's, and goes on.

// unreadableWhy is what the description of an unreadable error says of
// it: which method (or readerMethod) of which error's panicked, and the
// panic. It runs only once a method has panicked.
func unreadableWhy(e error, method string, r any) string {
	return fmt.Sprintf("a method of %T (%s) panicked: %v", e, method, r)
}

// readerMethod names, in an unreadable error's description, the read of
// an error by a reader an integration registered (errread.Register),
// which reads it through its methods and fields.
const readerMethod = "read by an integration's reader"

// readMessage returns err's message; when err's Error method panics, the
// message is "" and why says so (see unreadableWhy).
func readMessage(err error) (msg, why string) {
	msg, r := errread.Message(err)
	if r != nil {
		return "", unreadableWhy(err, "Error", r)
	}
	return msg, ""
}

// errorText is err's message, or, when its Error method panics, a
// description of err that says so. The governor reads the messages of the
// errors it is given (a call's answer, to list it in the ledger, log it
// and describe it) through it.
func errorText(err error) string {
	msg, why := readMessage(err)
	if why != "" {
		return "unreadable error (" + why + ")"
	}
	return msg
}

// describeUnreadable is the description of an unreadable error of kind
// k, whose unreadableWhy is why: that, and its message when its Error
// method did not panic, prefixed "throttled: " as describe does when k is
// Throttled (an outer layer's code decided it).
func describeUnreadable(k Kind, err error, why string) string {
	d := "unreadable error (" + why + ")"
	if msg, bad := readMessage(err); bad == "" && msg != "" {
		d += ": " + msg
	}
	if k == Throttled {
		return "throttled: " + d
	}
	return d
}

// unreadableLog records the types of the unreadable errors a logger has
// logged, so that each is logged once: the process's for the package's
// functions (Classify, RetryAfter, ...), which log to slog.Default, and a
// Governor's for its calls' answers, which go to its logger. The zero
// value logs every type once; it is safe for concurrent use.
type unreadableLog struct{ seen sync.Map } // reflect.Type -> struct{}

// processUnreadable is the process's unreadableLog.
var processUnreadable unreadableLog

// note logs, at Warn on l (slog.Default when nil), the first unreadable
// error of f.badType: f describes an error a method of which panicked
// (f.why is set; its callers test it, so that a readable error costs no
// call). It takes no lock the governor holds.
func (u *unreadableLog) note(l *slog.Logger, f *facts) {
	if _, seen := u.seen.LoadOrStore(f.badType, struct{}{}); seen {
		return
	}
	if l == nil {
		l = slog.Default()
	}
	l.LogAttrs(context.Background(), slog.LevelWarn,
		"cloudg: an error's method panicked while the governor read it; the error reads as FATAL, not a provider's answer, unless what was read before the panic decides (logged once for its type)",
		slog.String("type", f.badType.String()), slog.String("why", f.why))
}

// unreadable marks f as the facts of err, an unreadable error: e, an
// error of its walk, panicked with r in its method named method (or a
// reader's on it, readerMethod), and the walk read the first whole errors
// whole. Those
// are the errors before e (outer layers, and the siblings before it in a
// joined tree), and e too when the method that panicked was its Unwrap,
// asked for e's cause once its own methods had said what they say. What
// e said otherwise is dropped, half of a shape maybe, and so is all
// below it. The errors read whole stand when they decide (a code, a
// status on a list, cloudg's own error, a reader's verdict, a network
// error; their first word wins over anything below, as it would without
// the panic): a throttle an outer layer, or the error whose cause could
// not be read, carries still slows the scope. Otherwise nothing is kept:
// FATAL, no answer. The walk runs again for them, on this rare path only,
// and does not ask the last of them for its cause.
func (f *facts) unreadable(err, e error, method string, whole int, r any) {
	forHint := f.forHint
	*f = facts{forHint: forHint}
	if whole > 0 {
		if o := walkFirst(err, whole, forHint); o.why == "" {
			if _, ok := o.decide(); ok {
				*f = o
				f.outer = true
			}
		}
	}
	f.why, f.badType = unreadableWhy(e, method, r), reflect.TypeOf(e)
}

// read classifies err, a call's answer: its facts and its kind. An
// unreadable one is logged on the governor's logger, once for its type.
func (gd *Guard) read(err error) (facts, Kind) {
	f := inspect(err)
	k := f.kind(err)
	if f.why != "" {
		gd.g.unreadable.note(gd.g.logger, &f)
	}
	return f, k
}

// isAnswer is IsProviderAnswer for a call's answer, read as read reads it.
func (gd *Guard) isAnswer(err error) bool {
	if err == nil {
		return false
	}
	f := inspect(err)
	if f.why != "" {
		gd.g.unreadable.note(gd.g.logger, &f)
	}
	return f.answer && !f.hasOwn
}

// isFatalAnswer reports whether err, a call's answer, is the provider's
// fatal answer: Classify's Fatal and IsProviderAnswer, read once.
func (gd *Guard) isFatalAnswer(err error) bool {
	f, k := gd.read(err)
	return k == Fatal && f.answer && !f.hasOwn
}

// describeRead is DescribeError for err, read already: its facts f and
// kind k.
func describeRead(f *facts, k Kind, err error) string {
	if f.why != "" {
		return describeUnreadable(k, err, f.why)
	}
	return describe(k, err)
}

// said is how the ledger and the log word the answer: its desc when it
// has one, or else as DescribeError words it.
func (a *answer) said() string {
	if a.desc != "" {
		return a.desc
	}
	return describe(a.kind, a.err)
}
