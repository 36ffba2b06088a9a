package slurm

import "testing"

func TestPodPhase(t *testing.T) {
	tests := []struct {
		state  State
		phase  Phase
		reason string
		final  bool
	}{
		{StatePending, PhasePending, "", false},
		{StateConfiguring, PhasePending, "", false},
		{StateRequeued, PhasePending, ReasonRequeued, false},
		{StateRequeueHold, PhasePending, ReasonRequeued, false},
		{StateRequeueFed, PhasePending, ReasonRequeued, false},
		{StateSpecialExit, PhasePending, ReasonRequeued, false},
		{StateResvDelHold, PhasePending, ReasonHeld, false},
		{StateRunning, PhaseRunning, "", false},
		{StateCompleting, PhaseRunning, "", false},
		{StateResizing, PhaseRunning, "", false},
		{StateSignaling, PhaseRunning, "", false},
		{StateStageOut, PhaseRunning, "", false},
		{StateStopped, PhaseRunning, ReasonSuspended, false},
		{StateSuspended, PhaseRunning, ReasonSuspended, false},
		{StateCompleted, PhaseSucceeded, "", true},
		{StateFailed, PhaseFailed, ReasonFailed, true},
		{StateCancelled, PhaseFailed, ReasonCancelled, true},
		{StateTimeout, PhaseFailed, ReasonDeadlineExceeded, true},
		{StateDeadline, PhaseFailed, ReasonDeadlineExceeded, true},
		{StateOutOfMemory, PhaseFailed, ReasonOOMKilled, true},
		{StateNodeFail, PhaseFailed, ReasonNodeFail, true},
		{StatePreempted, PhaseFailed, ReasonPreempted, true},
		{StateBootFail, PhaseFailed, ReasonBootFail, true},
		{StateRevoked, PhaseFailed, ReasonRevoked, true},
		{StateUnknown, PhaseUnknown, ReasonLost, false},
		{State("NO_SUCH_STATE"), PhaseUnknown, ReasonLost, false},
	}
	covered := map[State]bool{}
	for _, tt := range tests {
		covered[tt.state] = true
		phase, reason := PodPhase(tt.state)
		if phase != tt.phase || reason != tt.reason {
			t.Errorf("PodPhase(%s) = %s, %q; want %s, %q", tt.state, phase, reason, tt.phase, tt.reason)
		}
		if got := tt.state.Final(); got != tt.final {
			t.Errorf("%s.Final() = %v; want %v", tt.state, got, tt.final)
		}
	}
	for s := range states {
		if !covered[s] {
			t.Errorf("state %s is not in the table", s)
		}
	}
}

func TestParseState(t *testing.T) {
	for s := range states {
		if s == StateUnknown {
			continue
		}
		got, err := ParseState(string(s))
		if err != nil || got != s {
			t.Errorf("ParseState(%q) = %q, %v; want %q", s, got, err, s)
		}
	}
	tests := []struct {
		in   string
		want State
		ok   bool
	}{
		{"CANCELLED by 1001", StateCancelled, true},
		{"CANCELLED by 0", StateCancelled, true},
		{"CANCELLED by", "", false},
		{"CANCELLED by alice", "", false},
		{"CANCELLED  by 1", "", false},
		{"COMPLETED by 1001", "", false},
		{"UNKNOWN", "", false},
		{"running", "", false},
		{"RUNNING ", "", false},
		{"", "", false},
		{"CANCELLED+", "", false},
	}
	for _, tt := range tests {
		got, err := ParseState(tt.in)
		if got != tt.want || (err == nil) != tt.ok {
			t.Errorf("ParseState(%q) = %q, %v; want %q, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func TestParseExitCode(t *testing.T) {
	tests := []struct {
		in   string
		want ExitCode
		ok   bool
	}{
		{"0:0", ExitCode{0, 0}, true},
		{"1:0", ExitCode{1, 0}, true},
		{"0:15", ExitCode{0, 15}, true},
		{"255:9", ExitCode{255, 9}, true},
		{"256:0", ExitCode{}, false},
		{"0", ExitCode{}, false},
		{":", ExitCode{}, false},
		{"-1:0", ExitCode{}, false},
		{"1:2:3", ExitCode{}, false},
		{"0:15 ", ExitCode{}, false},
		{"0001:0", ExitCode{}, false},
		{"", ExitCode{}, false},
	}
	for _, tt := range tests {
		got, err := ParseExitCode(tt.in)
		if got != tt.want || (err == nil) != tt.ok {
			t.Errorf("ParseExitCode(%q) = %v, %v; want %v, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
		if err == nil && got.String() != tt.in {
			t.Errorf("ParseExitCode(%q).String() = %q; want the input back", tt.in, got.String())
		}
	}
}
