package annotations

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"
)

func TestParseBindAccepts(t *testing.T) {
	tests := []struct{ value, want string }{
		{"127.1.0.0", "127.1.0.0"},
		{"127.1.0.5", "127.1.0.5"},
		{" 127.10.20.30\n", "127.10.20.30"},
		{"127.255.255.254", "127.255.255.254"},
		{"::ffff:127.1.0.5", "127.1.0.5"},
		{"::FFFF:127.1.2.3", "127.1.2.3"},
		{"::ffff:7f01:5", "127.1.0.5"},
	}
	for _, tt := range tests {
		got, err := ParseBind(tt.value)
		if err != nil || got != netip.MustParseAddr(tt.want) || !got.Is4() {
			t.Errorf("ParseBind(%q): got %v, %v; want %s", tt.value, got, err, tt.want)
		}
	}
}

func TestParseBindRefuses(t *testing.T) {
	tests := []struct{ value, rule string }{
		{"127.0.0.1", `value "127.0.0.1" is 127.0.0.1, shared by every user of the node`},
		{"::ffff:127.0.0.1", `value "::ffff:127.0.0.1" is 127.0.0.1, shared by every user of the node`},
		{"::ffff:7f00:1", `value "::ffff:7f00:1" is 127.0.0.1`},
		{"127.0.0.0", "is in 127.0.0.0/16"},
		{"127.255.255.255", "is the broadcast address of 127.0.0.0/8"},
		// The node's own addresses, which DeriveBind avoids too.
		{"127.0.0.53", `value "127.0.0.53" is in 127.0.0.0/16, which holds the node's own addresses`},
		{"127.0.0.54", "is in 127.0.0.0/16"},
		{"127.0.1.1", "is in 127.0.0.0/16"},
		{"127.0.0.2", "is in 127.0.0.0/16"},
		{"127.0.255.255", "is in 127.0.0.0/16"},
		{"::ffff:127.0.0.53", "is in 127.0.0.0/16"},
		{"::ffff:7f00:101", "is in 127.0.0.0/16"},
		{"::1", `value "::1" is IPv6; the relay binds IPv4 only`},
		{"fd00::1", "is IPv6"},
		{"::127.0.0.5", "is IPv6"},
		{"fe80::1%lo", "has an IPv6 zone"},
		{"::ffff:127.0.0.5%lo", "has an IPv6 zone"},
		{"10.0.0.1", `value "10.0.0.1" is not a loopback address`},
		{"0.0.0.0", "is not a loopback address"},
		{"localhost", `value "localhost" is not an IP address`},
		{"127.0.0.01", "is not an IP address"},
		{"127.1", "is not an IP address"},
		{"2130706434", "is not an IP address"},
		{"127.0.0.2:80", "is not an IP address"},
		{"127.0.0.2 127.0.0.3", "is not an IP address"},
		{strings.Repeat("1", 1000), `value "` + strings.Repeat("1", maxQuoted) + `..." is not an IP address`},
	}
	for _, tt := range tests {
		_, err := ParseBind(tt.value)
		var r *Refusal
		if !errors.As(err, &r) || r.Reason != ReasonBadBind || r.Annotation != ReverseBind || !strings.Contains(r.Rule, tt.rule) {
			t.Errorf("ParseBind(%q): got %v; want a %s refusal containing %q", tt.value, err, ReasonBadBind, tt.rule)
		}
	}
	_, err := ParseBind("::ffff:127.0.0.1")
	want := `interlink.eu/reverse-bind: value "::ffff:127.0.0.1" is 127.0.0.1, shared by every user of the node: want an address in 127.1.0.0-127.255.255.254`
	if err == nil || err.Error() != want {
		t.Errorf("got %v; want %s", err, want)
	}
}

// testSalt is a salt as salt.New draws them.
const testSalt = "00112233445566778899aabbccddeeff"

func TestDeriveBind(t *testing.T) {
	// Fixed values, computed apart from this code (Python's hmac and
	// hashlib, by the formula in DeriveBind's comment). The same uid under
	// another salt gets another address: without the salt, the UID that
	// squeue shows every user of the site does not tell it.
	fixed := []struct{ uid, salt, want string }{
		{"0b8f5a3c-6a53-4bd5-8c41-3a2f7a1d9e10", testSalt, "127.178.89.132"},
		{"0b8f5a3c-6a53-4bd5-8c41-3a2f7a1d9e10", "ffeeddccbbaa99887766554433221100", "127.91.208.114"},
		{"x", testSalt, "127.20.59.217"},
	}
	for _, tt := range fixed {
		got, err := DeriveBind(tt.uid, tt.salt)
		if err != nil || got.String() != tt.want {
			t.Errorf("DeriveBind(%q, %q): got %v, %v; want %s", tt.uid, tt.salt, got, err, tt.want)
		}
	}
	seen := map[netip.Addr]string{}
	for i := range 20000 {
		uid := fmt.Sprintf("uid-%d", i)
		a, err := DeriveBind(uid, testSalt)
		if err != nil {
			t.Fatal(err)
		}
		b := a.As4()
		if !a.Is4() || b[0] != 127 || b[1] == 0 || a == netip.MustParseAddr("127.255.255.255") {
			t.Fatalf("DeriveBind(%q): got %v; want an address in 127.1.0.0-127.255.255.254", uid, a)
		}
		if other, ok := seen[a]; ok {
			t.Logf("DeriveBind: %q and %q share %v (expected rarely)", uid, other, a)
		}
		seen[a] = uid
	}
	if len(seen) < 19900 {
		t.Errorf("20000 uids gave %d addresses; want nearly all distinct", len(seen))
	}
	for _, bad := range []struct{ uid, salt string }{{"", testSalt}, {"x", ""}, {"x", "00112233"}, {"x", strings.ToUpper(testSalt)}} {
		if a, err := DeriveBind(bad.uid, bad.salt); err == nil {
			t.Errorf("DeriveBind(%q, %q): got %v; want an error", bad.uid, bad.salt, a)
		}
	}
	if a, err := ParseBind("  "); err != nil || a.IsValid() {
		t.Errorf("ParseBind of nothing: got %v, %v; want the zero Addr, left to DeriveBind", a, err)
	}
}
