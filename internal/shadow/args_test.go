package shadow

import (
	"slices"
	"testing"
)

// TestForwardArgsEntry: the forward goes through the relay's entry only
// where the job runs a relay (RunsRelay) and the node's sshd
// carries the forward; else it dials the port as before.
func TestForwardArgsEntry(t *testing.T) {
	const entry = "--entry-dir-file=/etc/sluice/node/socket-dir"
	cases := []struct {
		target  string
		relayed bool
		want    bool
	}{
		{"node", true, true},
		{"node", false, false},
		{"login", true, false},
		{"login", false, false},
	}
	for _, tc := range cases {
		args := Spec{ForwardTarget: tc.target}.forwardArgs([]int32{8080}, 9464, tc.relayed)
		if got := slices.Contains(args, entry); got != tc.want {
			t.Errorf("target %s, relay %v: %s in %q is %v; want %v", tc.target, tc.relayed, entry, args, got, tc.want)
		}
	}
}
