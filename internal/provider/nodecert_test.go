package provider

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/config"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
)

// TestNodeCertificate: SSHCertificateValid follows the check, each turn
// to False pushes the node and sends one Warning Event on it.
func TestNodeCertificate(t *testing.T) {
	n := config.Node{}
	n.Default()
	node, err := NewNode("hpc", n, 10250, time.Now())
	if err != nil {
		t.Fatalf("NewNode: %v", err)
	}
	answers := []struct {
		ok     bool
		reason string
	}{
		{true, ReasonCertificateValid},
		{true, ReasonCertificateValid},
		{true, ReasonCertificateExpiresSoon},
		{false, ReasonCertificateNotValid},
		{true, ReasonCertificateValid},
	}
	i := 0
	rec := record.NewFakeRecorder(10)
	s := &NodeStatus{Node: node, Recorder: rec, Certificate: func(time.Time) (bool, string, string) {
		a := answers[i]
		return a.ok, a.reason, "ssh certificate /c: " + a.reason
	}}
	var got []string
	s.NotifyNodeStatus(context.Background(), func(n *corev1.Node) {
		c := condition(n, ConditionSSHCertificate)
		got = append(got, string(c.Status)+"/"+c.Reason)
	})
	for i = range answers {
		s.checkOnce(context.Background())
	}
	want := "True/CertificateValid False/CertificateExpiresSoon False/CertificateNotValid True/CertificateValid"
	if strings.Join(got, " ") != want {
		t.Errorf("pushes %v; want %s", got, want)
	}
	close(rec.Events)
	var events []string
	for e := range rec.Events {
		events = append(events, e)
	}
	wantEvents := "Warning CertificateExpiresSoon ssh certificate /c: CertificateExpiresSoon|Warning CertificateNotValid ssh certificate /c: CertificateNotValid"
	if strings.Join(events, "|") != wantEvents {
		t.Errorf("events %q; want %q", events, wantEvents)
	}
}
