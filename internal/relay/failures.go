package relay

import (
	"log/slog"
	"sync/atomic"
)

// failureKind is one kind of failure the relay counts and logs.
type failureKind int

const (
	ownerRefused       failureKind = iota // the client is not the job's user
	lookupFailed                          // the client's owner could not be found
	notHeld                               // the client's socket is closed by its process, or over
	dirGone                               // the socket directory is gone: nothing is passed on
	tunnelDown                            // the unix socket is missing, refuses or is not the job user's
	acceptError                           // accept on a listener failed
	copyError                             // copying a connection failed
	forwardPeer                           // a forward entry client not of the job's user
	forwardBadHeader                      // a forward header missing or malformed
	forwardPortFile                       // the port file unreadable or malformed
	forwardOwner                          // the port's listener is another user's
	forwardNoListener                     // nothing listens on the port
	forwardDial                           // the connect to the job's listener failed
	forwardNotAccepted                    // the job's listener did not accept in time
	numFailureKinds
)

var failureMessages = [numFailureKinds]string{
	ownerRefused: "connection refused: not the job's user",
	lookupFailed: "connection refused: owner lookup failed",
	notHeld:      "connection refused: the client's socket is closed by its process or no longer established",
	dirGone:      "connection refused: the socket directory is gone",
	tunnelDown:   "connection closed: tunnel down",
	acceptError:  "accept failed",
	copyError:    "copy failed",

	forwardPeer:        "forward refused: the client is not the job's user",
	forwardBadHeader:   "forward refused: bad header",
	forwardPortFile:    "forward refused: bad port file",
	forwardOwner:       "forward refused: listener of another user",
	forwardNoListener:  "forward refused: nothing listens",
	forwardDial:        "forward refused: connect failed",
	forwardNotAccepted: "forward refused: not accepted",
}

// logEvery is how often a kind of failure is logged after its first time.
const logEvery = 1000

// failureLog logs each kind of failure the first time and then every
// logEvery-th time, with the running count: the log is the job's output,
// which any user of the node could otherwise grow by connecting in a loop.
type failureLog struct {
	log    *slog.Logger
	counts [numFailureKinds]atomic.Uint64
}

// record counts one failure of kind k and logs it if its turn has come.
func (f *failureLog) record(k failureKind, args ...any) {
	n := f.counts[k].Add(1)
	if (n-1)%logEvery != 0 {
		return
	}
	f.log.Warn(failureMessages[k], append(args, "count", n)...)
}

// count returns how many failures of kind k were recorded.
func (f *failureLog) count(k failureKind) uint64 { return f.counts[k].Load() }
