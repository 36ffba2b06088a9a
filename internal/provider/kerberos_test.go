package provider

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/config"
	"github.com/sluice-hpc/sluice/internal/krb"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
)

// TestSiteUnreachableKerberosReason: a login that failed for want of a
// ticket says why in the SiteReachable condition's reason and in one
// Warning Event on the node.
func TestSiteUnreachableKerberosReason(t *testing.T) {
	n := config.Node{}
	n.Default()
	for _, tc := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("ssh: handshake failed: %w", &krb.Error{Op: "get a ticket", Reason: krb.ReasonClockSkew, Err: errors.New("KRB_AP_ERR_SKEW")}), "KerberosClockSkew"},
		{&krb.Error{Op: "get a ticket", Reason: krb.ReasonKDCUnreachable, Err: errors.New("timeout")}, "KerberosKDCUnreachable"},
		{&krb.Error{Op: "get a ticket", Reason: krb.ReasonOther, Err: errors.New("?")}, "KerberosError"},
		{errors.New("connection refused"), "SiteUnreachable"},
	} {
		node, err := NewNode("hpc", n, 10250, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		rec := record.NewFakeRecorder(4)
		s := &NodeStatus{Node: node, Check: func(context.Context) error { return tc.err }, Recorder: rec}
		s.checkOnce(context.Background())
		s.checkOnce(context.Background()) // unchanged: no second Event
		c := condition(s.Node, ConditionSiteReachable)
		if c.Status != corev1.ConditionFalse || c.Reason != tc.want || c.Message != tc.err.Error() {
			t.Errorf("%v: got %s %s %q; want False %s and the error", tc.err, c.Status, c.Reason, c.Message, tc.want)
		}
		var events []string
		for len(rec.Events) > 0 {
			events = append(events, <-rec.Events)
		}
		want := []string{"Warning " + tc.want + " " + tc.err.Error()}
		if tc.want == "SiteUnreachable" {
			want = nil
		}
		if !slices.Equal(events, want) {
			t.Errorf("%v: Events %q; want %q", tc.err, events, want)
		}
	}
}
