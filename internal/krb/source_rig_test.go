//go:build rig

package krb

import (
	"bytes"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/testrig"
)

// TestRigSourceRenews: against the rig's KDC, a TGT is kept while it is
// fresh and a new one is got from the keytab when its end nears (the clock
// moved to an hour before it), as are service tickets.
//
//	flock /tmp/sluice-rig.lock go test -tags rig -run TestRigSourceRenews ./internal/krb/
func TestRigSourceRenews(t *testing.T) {
	r := testrig.Load(t)
	if _, ok := r.Lookup("RIG_KRB5_REALM"); !ok {
		testrig.Unavailable(t, "the rig has no KDC (hack/rig/rig.sh start kdc)")
	}
	cfg, err := NewConfig(r.Get(t, "RIG_KRB5_REALM"), []string{r.Get(t, "RIG_KRB5_KDC")})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	s := &Source{KeytabFile: r.Get(t, "RIG_KRB5_KEYTAB"), Principal: r.Get(t, "RIG_KRB5_PRINCIPAL"), Config: cfg,
		Now: func() time.Time { return now }}
	first, err := s.TGT()
	if err != nil {
		t.Fatal(err)
	}
	svc1, err := s.ServiceTicket("host", r.Get(t, "RIG_LOGIN_ADDR"))
	if err != nil {
		t.Fatal(err)
	}
	again, err := s.TGT()
	if err != nil || !bytes.Equal(again.Part.Key.KeyValue, first.Part.Key.KeyValue) {
		t.Fatalf("a fresh TGT: got a new one (%v); want the one held", err)
	}
	now = first.Part.EndTime.Add(-time.Hour) // 10 h tickets: within the last sixth
	renewed, err := s.TGT()
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(renewed.Part.Key.KeyValue, first.Part.Key.KeyValue) {
		t.Fatal("an hour before its end: got the same TGT; want a new one")
	}
	svc2, err := s.ServiceTicket("host", r.Get(t, "RIG_LOGIN_ADDR"))
	if err != nil || bytes.Equal(svc2.Part.Key.KeyValue, svc1.Part.Key.KeyValue) {
		t.Fatalf("service ticket after renewal: %v, same key %v; want a new ticket", err, err == nil)
	}
}
