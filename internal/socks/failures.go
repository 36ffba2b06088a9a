package socks

import (
	"log/slog"
	"sync/atomic"
)

// failureKind is a kind of failure the server counts and logs: one per
// Stage, and accept errors.
type failureKind int

const failAccept = failureKind(numStages)

const numFailureKinds = numStages + 1

var failureMessages = [numFailureKinds]string{
	StageGreeting: "socks greeting failed",
	StageRequest:  "socks request refused",
	StageDial:     "socks dial failed",
	StageReply:    "socks reply failed",
	StageRelay:    "socks relay failed",
	failAccept:    "socks accept failed",
}

// logEvery is how often a kind of failure is logged after its first time.
const logEvery = 1000

// failureLog logs each kind of failure the first time and then every
// logEvery-th time, with the running count, as internal/relay does: anyone
// who can reach the listener could otherwise grow the log at will. Its
// zero value is ready to use.
type failureLog struct {
	counts [numFailureKinds]atomic.Uint64
}

// record counts one failure of kind k and logs it to log if its turn has
// come.
func (f *failureLog) record(log *slog.Logger, k failureKind, args ...any) {
	n := f.counts[k].Add(1)
	if (n-1)%logEvery != 0 {
		return
	}
	log.Warn(failureMessages[k], append(args, "count", n)...)
}

// count returns how many failures of kind k were recorded.
func (f *failureLog) count(k failureKind) uint64 { return f.counts[k].Load() }
