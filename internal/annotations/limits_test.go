package annotations

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// forwardsList is n entries listening on ports 1, 2, … n.
func forwardsList(n int) string {
	entries := make([]string, n)
	for i := range entries {
		entries[i] = fmt.Sprintf("%d:redis:6379", 1+i)
	}
	return strings.Join(entries, " ")
}

func TestForwardsAreBounded(t *testing.T) {
	if fs, err := ParseForwards(forwardsList(MaxForwards), "lab"); err != nil || len(fs) != MaxForwards {
		t.Fatalf("ParseForwards of %d entries: got %d, %v; want them all", MaxForwards, len(fs), err)
	}
	for _, n := range []int{MaxForwards + 1, 65535} {
		for name, parse := range map[string]func() error{
			"ParseForwards": func() error { _, err := ParseForwards(forwardsList(n), "lab"); return err },
			"Parse": func() error {
				_, err := Parse(map[string]string{ReverseForwards: forwardsList(n)}, "lab")
				return err
			},
		} {
			var r *Refusal
			if err := parse(); !errors.As(err, &r) || r.Reason != ReasonTooManyForwards || r.Annotation != ReverseForwards ||
				!strings.Contains(r.Rule, fmt.Sprintf("%d forwards; a pod may ask for at most %d", n, MaxForwards)) {
				t.Errorf("%s of %d entries: got %v; want a %s refusal", name, n, err, ReasonTooManyForwards)
			}
		}
	}
	// A Reverse built by hand is held to the bound by Check too.
	fs, _ := ParseForwards(forwardsList(MaxForwards), "lab")
	r := &Reverse{Forwards: append(fs, Forward{ListenPort: 9, Host: "redis", Port: 9, Dial: "redis.lab:9"})}
	var ref *Refusal
	if err := r.validate(); !errors.As(err, &ref) || ref.Reason != ReasonTooManyForwards {
		t.Errorf("validate of %d forwards: got %v; want a %s refusal", len(r.Forwards), err, ReasonTooManyForwards)
	}
}

// Targets no shadow can ever dial are refused when the pod is created.
func TestUndialableTargetsRefused(t *testing.T) {
	for _, tt := range []struct{ entry, rule string }{
		{"[fe80::1]:80", "IPv6 link-local address: it cannot be dialled without a zone"},
		{"[febf::1]:80", "link-local"},
		{"[fe80::1%eth0]:80", "must not have a zone"},
		{"0.0.0.0:80", "unspecified"},
		{"[::]:80", "unspecified"},
		{"[::ffff:0.0.0.0]:80", "unspecified"},
		{"0.1.2.3:80", "0.0.0.0/8"},
		{"[::ffff:0.1.2.3]:80", "0.0.0.0/8"},
		{"224.0.0.1:80", "unicast"},
		{"[ff02::1]:80", "unicast"},
		{"[::ffff:239.1.1.1]:80", "unicast"},
		{"255.255.255.255:80", "unicast"},
		{"[::ffff:255.255.255.255]:80", "unicast"},
	} {
		_, err := ParseForwards(tt.entry, "lab")
		var r *Refusal
		if !errors.As(err, &r) || r.Reason != ReasonMalformed || r.Entry != tt.entry || !strings.Contains(r.Rule, tt.rule) {
			t.Errorf("ParseForwards(%q): got %v; want a %s refusal containing %q", tt.entry, err, ReasonMalformed, tt.rule)
		}
	}
	for _, ok := range []string{"169.254.1.1:80", "[fd00::1]:80", "[::ffff:10.0.0.1]:80", "127.0.0.1:80", "[::1]:80", "1.0.0.0:80"} {
		if _, err := ParseForwards(ok, "lab"); err != nil {
			t.Errorf("ParseForwards(%q): %v; want it taken", ok, err)
		}
	}
}

// DeriveBind and ParseBind hold relay addresses to one rule.
func TestDerivedBindsPassParseBind(t *testing.T) {
	if first := nodeLocal.Masked().Addr().As4(); derivedFirst != 0x010000 || first[1] != 0 || nodeLocal.Bits() != 16 {
		t.Fatalf("nodeLocal %v and derivedFirst %#x disagree", nodeLocal, derivedFirst)
	}
	for i := range 10000 {
		uid := fmt.Sprintf("00000000-0000-4000-8000-%012d", i)
		a, err := DeriveBind(uid, testSalt)
		if err != nil {
			t.Fatal(err)
		}
		if rule := checkRelayAddr(a); rule != "" {
			t.Fatalf("DeriveBind(%s) = %v, which the rule refuses: %s", uid, a, rule)
		}
	}
}
