package slurm

import (
	"fmt"
	"strconv"
	"strings"
)

// State is the state of a Slurm job, as squeue %T and sacct State spell it
// (Slurm 22.05, "JOB STATE CODES").
type State string

// The states of a Slurm job.
const (
	StatePending     State = "PENDING"
	StateConfiguring State = "CONFIGURING"
	StateRunning     State = "RUNNING"
	StateCompleting  State = "COMPLETING"
	StateCompleted   State = "COMPLETED"
	StateFailed      State = "FAILED"
	StateCancelled   State = "CANCELLED"
	StateTimeout     State = "TIMEOUT"
	StateOutOfMemory State = "OUT_OF_MEMORY"
	StateNodeFail    State = "NODE_FAIL"
	StatePreempted   State = "PREEMPTED"
	StateBootFail    State = "BOOT_FAIL"
	StateDeadline    State = "DEADLINE"
	StateRequeued    State = "REQUEUED"
	StateRequeueHold State = "REQUEUE_HOLD"
	StateRequeueFed  State = "REQUEUE_FED"
	StateResizing    State = "RESIZING"
	StateRevoked     State = "REVOKED"
	StateSignaling   State = "SIGNALING"
	StateSpecialExit State = "SPECIAL_EXIT"
	StateStageOut    State = "STAGE_OUT"
	StateStopped     State = "STOPPED"
	StateSuspended   State = "SUSPENDED"
	StateResvDelHold State = "RESV_DEL_HOLD"
	StateUnknown     State = "UNKNOWN" // ours: the job was found nowhere
)

// Phase is the pod phase a job state maps to.
type Phase string

// The pod phases.
const (
	PhasePending   Phase = "Pending"
	PhaseRunning   Phase = "Running"
	PhaseSucceeded Phase = "Succeeded"
	PhaseFailed    Phase = "Failed"
	PhaseUnknown   Phase = "Unknown"
)

// Reasons given with a phase.
const (
	ReasonFailed           = "Failed"
	ReasonCancelled        = "Cancelled"
	ReasonDeadlineExceeded = "DeadlineExceeded"
	ReasonOOMKilled        = "OOMKilled"
	ReasonNodeFail         = "NodeFail"
	ReasonPreempted        = "Preempted"
	ReasonBootFail         = "BootFail"
	ReasonRevoked          = "Revoked"
	ReasonRequeued         = "Requeued"
	ReasonHeld             = "Held"
	ReasonSuspended        = "Suspended"
	ReasonLost             = "Lost"
)

// stateInfo is what sluice makes of a Slurm state.
type stateInfo struct {
	phase  Phase
	reason string
	// final: the job will not run again; Slurm's record is complete.
	final bool
	// ran: the job holds or held an allocation, so its containers may have
	// left logs and exit codes in its directory.
	ran bool
}

var states = map[State]stateInfo{
	StatePending:     {phase: PhasePending},
	StateConfiguring: {phase: PhasePending},
	StateRequeued:    {phase: PhasePending, reason: ReasonRequeued},
	StateRequeueHold: {phase: PhasePending, reason: ReasonRequeued},
	StateRequeueFed:  {phase: PhasePending, reason: ReasonRequeued},
	StateSpecialExit: {phase: PhasePending, reason: ReasonRequeued},
	StateResvDelHold: {phase: PhasePending, reason: ReasonHeld},

	StateRunning:    {phase: PhaseRunning, ran: true},
	StateCompleting: {phase: PhaseRunning, ran: true},
	StateResizing:   {phase: PhaseRunning, ran: true},
	StateSignaling:  {phase: PhaseRunning, ran: true},
	StateStageOut:   {phase: PhaseRunning, ran: true},
	StateStopped:    {phase: PhaseRunning, reason: ReasonSuspended, ran: true},
	StateSuspended:  {phase: PhaseRunning, reason: ReasonSuspended, ran: true},

	StateCompleted:   {phase: PhaseSucceeded, final: true, ran: true},
	StateFailed:      {phase: PhaseFailed, reason: ReasonFailed, final: true, ran: true},
	StateCancelled:   {phase: PhaseFailed, reason: ReasonCancelled, final: true, ran: true},
	StateTimeout:     {phase: PhaseFailed, reason: ReasonDeadlineExceeded, final: true, ran: true},
	StateDeadline:    {phase: PhaseFailed, reason: ReasonDeadlineExceeded, final: true, ran: true},
	StateOutOfMemory: {phase: PhaseFailed, reason: ReasonOOMKilled, final: true, ran: true},
	StateNodeFail:    {phase: PhaseFailed, reason: ReasonNodeFail, final: true, ran: true},
	StatePreempted:   {phase: PhaseFailed, reason: ReasonPreempted, final: true, ran: true},
	StateBootFail:    {phase: PhaseFailed, reason: ReasonBootFail, final: true, ran: true},
	StateRevoked:     {phase: PhaseFailed, reason: ReasonRevoked, final: true},

	StateUnknown: {phase: PhaseUnknown, reason: ReasonLost},
}

// PodPhase maps a job state to a pod phase and, for anything but a plain
// pending, running or succeeded job, a reason. A requeued job is pending
// again. An unrecognised state is Unknown.
func PodPhase(s State) (Phase, string) {
	info, ok := states[s]
	if !ok {
		return PhaseUnknown, ReasonLost
	}
	return info.phase, info.reason
}

// Final reports whether a job in state s will not run again.
func (s State) Final() bool { return states[s].final }

// ran reports whether a job in state s holds or held an allocation.
func (s State) ran() bool { return states[s].ran }

// ParseState parses a job state as squeue or sacct prints it, including
// sacct's "CANCELLED by <uid>".
func ParseState(s string) (State, error) {
	word, by, hasBy := strings.Cut(s, " ")
	st := State(word)
	if _, ok := states[st]; !ok || st == StateUnknown {
		return "", fmt.Errorf("slurm: unknown job state %q", s)
	}
	if hasBy {
		uid, ok := strings.CutPrefix(by, "by ")
		if st != StateCancelled || !ok || !isDigits(uid) {
			return "", fmt.Errorf("slurm: unknown job state %q", s)
		}
	}
	return st, nil
}

// ExitCode is a job's exit code as Slurm reports it: the code, and the
// signal that ended it, if one did.
type ExitCode struct {
	Code   int
	Signal int
}

func (e ExitCode) String() string { return strconv.Itoa(e.Code) + ":" + strconv.Itoa(e.Signal) }

// ParseExitCode parses sacct's "<code>:<signal>".
func ParseExitCode(s string) (ExitCode, error) {
	code, sig, ok := strings.Cut(s, ":")
	c, err1 := parseSmall(code, 255)
	g, err2 := parseSmall(sig, 255)
	if !ok || err1 != nil || err2 != nil {
		return ExitCode{}, fmt.Errorf("slurm: invalid exit code %q", s)
	}
	return ExitCode{Code: c, Signal: g}, nil
}

// parseSmall parses a decimal number from 0 to max, written as Slurm and
// the shell write it: at most three digits, no leading zero.
func parseSmall(s string, max int) (int, error) {
	if !isDigits(s) || len(s) > 3 || len(s) > 1 && s[0] == '0' {
		return 0, fmt.Errorf("slurm: invalid number %q", s)
	}
	n, err := strconv.Atoi(s)
	if err != nil || n > max {
		return 0, fmt.Errorf("slurm: invalid number %q", s)
	}
	return n, nil
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
