package krb

import (
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jcmturner/gokrb5/v8/iana/etypeID"
	"github.com/jcmturner/gokrb5/v8/keytab"
)

func writeKeytab(t *testing.T, principal, realm string) string {
	t.Helper()
	kt := keytab.New()
	if err := kt.AddEntry(principal, realm, "secret", time.Now(), 1, etypeID.AES256_CTS_HMAC_SHA1_96); err != nil {
		t.Fatal(err)
	}
	b, err := kt.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "keytab")
	if err := os.WriteFile(f, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestSourceKDCUnreachable: a KDC that refuses connections gives a clear
// error with its reason.
func TestSourceKDCUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	cfg, err := NewConfig("SLUICE.TEST", []string{addr})
	if err != nil {
		t.Fatal(err)
	}
	cfg.LibDefaults.UDPPreferenceLimit = 1 // TCP only: a closed port refuses at once
	s := &Source{KeytabFile: writeKeytab(t, "alice", "SLUICE.TEST"), Principal: "alice", Config: cfg}
	_, err = s.TGT()
	if ReasonOf(err) != ReasonKDCUnreachable {
		t.Fatalf("got %v (reason %q); want %s", err, ReasonOf(err), ReasonKDCUnreachable)
	}
}

func TestSourceBadInput(t *testing.T) {
	cfg, err := NewConfig("SLUICE.TEST", []string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Realms[0].KDC[0]; got != "127.0.0.1:88" {
		t.Fatalf("KDC: got %s; want port 88 added", got)
	}
	if _, err := NewConfig("", []string{"k"}); err == nil {
		t.Fatal("NewConfig without a realm: got no error")
	}
	if _, err := (&Source{KeytabFile: "/nonexistent", Principal: "alice", Config: cfg}).TGT(); err == nil {
		t.Fatal("a missing keytab: got no error")
	}
	if _, err := (&Source{Principal: "alice"}).TGT(); err == nil {
		t.Fatal("no configuration: got no error")
	}
	s := &Source{Principal: "alice@OTHER.REALM", Config: cfg}
	if s.Realm() != "OTHER.REALM" {
		t.Fatalf("Realm: got %s; want OTHER.REALM", s.Realm())
	}
}

func TestFresh(t *testing.T) {
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	s := &Source{Now: func() time.Time { return now }}
	c := testCredential(t)
	c.Part.StartTime, c.Part.EndTime = now.Add(-time.Hour), now.Add(5*time.Hour) // 6 h: renewed in the last hour
	if !s.fresh(&c) {
		t.Fatal("5 h left of 6: want fresh")
	}
	c.Part.EndTime = now.Add(10 * time.Minute)
	if s.fresh(&c) {
		t.Fatal("10 min left of 70 (a sixth is 11.7): want renewal")
	}
	s.RenewBefore = 5 * time.Minute
	if !s.fresh(&c) {
		t.Fatal("10 min left, RenewBefore 5 min: want fresh")
	}
	if s.fresh(nil) {
		t.Fatal("no ticket: want not fresh")
	}
}
