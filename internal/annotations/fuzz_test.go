package annotations

import (
	"errors"
	"net"
	"net/netip"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/sluice-hpc/sluice/internal/salt"
)

// The seed corpus lives in testdata/fuzz/<target>/; go test runs it as
// plain tests, and go test -fuzz=<target> starts from it.

var (
	// dnsName is RFC 1123 host-name syntax with the '_' of Slurm node
	// names, written apart from checkName.
	dnsName = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?(\.[A-Za-z0-9]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?)*$`)
	// safeDial is what may appear in a shell line or an ssh request
	// unquoted: no whitespace, no shell metacharacter.
	safeDial = regexp.MustCompile(`^[A-Za-z0-9.:\[\]-]+$`)
	// dnsLabel is a Kubernetes namespace.
	dnsLabel = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
)

func FuzzParseForwards(f *testing.F) {
	f.Fuzz(func(t *testing.T, value, ns string) {
		fs, err := ParseForwards(value, ns)
		if err != nil {
			checkForwardsError(t, value, ns, err)
			return
		}
		if len(splitEntries(value)) > 0 && !dnsLabel.MatchString(ns) {
			t.Fatalf("ParseForwards(%q, %q): accepted namespace %q", value, ns, ns)
		}
		if len(fs) > MaxForwards {
			t.Fatalf("ParseForwards(%q): %d forwards; at most %d may be taken", value, len(fs), MaxForwards)
		}
		listen := map[int]bool{}
		for _, fw := range fs {
			checkForward(t, fw, ns)
			if listen[fw.ListenPort] {
				t.Fatalf("ParseForwards(%q): listen port %d twice", value, fw.ListenPort)
			}
			listen[fw.ListenPort] = true
		}
		entries := make([]string, len(fs))
		for i, fw := range fs {
			entries[i] = fw.String()
		}
		again, err := ParseForwards(strings.Join(entries, " "), ns)
		if err != nil || !reflect.DeepEqual(again, fs) {
			t.Fatalf("round trip of %q: got %+v, %v; want %+v", entries, again, err, fs)
		}
	})
}

func checkForwardsError(t *testing.T, value, ns string, err error) {
	t.Helper()
	var r *Refusal
	if !errors.As(err, &r) {
		if dnsLabel.MatchString(ns) {
			t.Fatalf("ParseForwards(%q, %q): got %v; want a *Refusal", value, ns, err)
		}
		return
	}
	if r.Reason == ReasonTooManyForwards {
		if n := len(splitEntries(value)); n <= MaxForwards || r.Entry != "" {
			t.Fatalf("ParseForwards(%q): %d entries refused as too many: %+v", value, n, *r)
		}
		return
	}
	if r.Annotation != ReverseForwards || r.Entry == "" || r.Rule == "" || len(r.Entry) > maxQuoted+3 {
		t.Fatalf("ParseForwards(%q): got refusal %+v; want one naming the annotation, the entry and the rule", value, *r)
	}
	if r.Reason != ReasonMalformed && r.Reason != ReasonPortRepeats {
		t.Fatalf("ParseForwards(%q): got reason %s", value, r.Reason)
	}
}

func checkForward(t *testing.T, fw Forward, ns string) {
	t.Helper()
	if fw.ListenPort < 1 || fw.ListenPort > 65535 || fw.Port < 1 || fw.Port > 65535 {
		t.Fatalf("%+v: port out of 1-65535", fw)
	}
	a, ipErr := netip.ParseAddr(fw.Host)
	switch {
	case ipErr == nil:
		// Only addresses a shadow can dial: unicast, no zone, so no IPv6
		// link-local; v4-mapped ones judged as IPv4.
		v4 := a.Unmap()
		if a.Zone() != "" || v4.IsUnspecified() || v4.IsMulticast() || v4 == netip.AddrFrom4([4]byte{255, 255, 255, 255}) ||
			v4.Is6() && v4.IsLinkLocalUnicast() || v4.Is4() && v4.As4()[0] == 0 {
			t.Fatalf("%+v: accepted address %v, which no shadow can dial", fw, a)
		}
	case len(fw.Host) > 253 || !dnsName.MatchString(fw.Host):
		t.Fatalf("%+v: host is neither an IP address nor a DNS name", fw)
	}
	if !safeDial.MatchString(fw.Dial) {
		t.Fatalf("%+v: Dial holds a character unsafe in a shell line", fw)
	}
	host, port, err := net.SplitHostPort(fw.Dial)
	if err != nil || port != strconv.Itoa(fw.Port) {
		t.Fatalf("%+v: Dial does not split into host and port %d: %v", fw, fw.Port, err)
	}
	want := fw.Host
	if ipErr != nil && !strings.Contains(fw.Host, ".") && !strings.EqualFold(fw.Host, "localhost") {
		want = fw.Host + "." + ns
	}
	if host != want {
		t.Fatalf("%+v: dials host %q; want %q", fw, host, want)
	}
}

func FuzzParseBind(f *testing.F) {
	loopback := netip.MustParsePrefix("127.0.0.0/8")
	forbidden := map[netip.Addr]bool{
		netip.MustParseAddr("127.0.0.0"):       true,
		netip.MustParseAddr("127.0.0.1"):       true,
		netip.MustParseAddr("127.255.255.255"): true,
	}
	f.Fuzz(func(t *testing.T, value string) {
		a, err := ParseBind(value)
		empty := strings.TrimSpace(value) == ""
		if err != nil {
			var r *Refusal
			if empty || !errors.As(err, &r) || r.Reason != ReasonBadBind || r.Annotation != ReverseBind {
				t.Fatalf("ParseBind(%q): got error %v", value, err)
			}
			return
		}
		if empty {
			if a.IsValid() {
				t.Fatalf("ParseBind(%q): got %v; want the zero Addr, left to DeriveBind", value, a)
			}
			return
		}
		// One rule for derived and chosen addresses: outside 127.0.0.0/16.
		if !a.Is4() || !loopback.Contains(a) || forbidden[a] || a.As4()[1] == 0 {
			t.Fatalf("ParseBind(%q): got %v; want an IPv4 loopback address in 127.1.0.0-127.255.255.254", value, a)
		}
	})
}

// FuzzDeriveBind: every salted address passes the rule ParseBind holds
// chosen addresses to, and the same uid and salt give it again.
func FuzzDeriveBind(f *testing.F) {
	f.Add("0b8f5a3c-6a53-4bd5-8c41-3a2f7a1d9e10", testSalt)
	f.Fuzz(func(t *testing.T, uid, podSalt string) {
		a, err := DeriveBind(uid, podSalt)
		if err != nil {
			if uid != "" && salt.Check(podSalt) == nil {
				t.Fatalf("DeriveBind(%q, %q): got error %v", uid, podSalt, err)
			}
			return
		}
		if again, err := ParseBind(a.String()); err != nil || again != a {
			t.Fatalf("DeriveBind(%q, %q) gave %v, which ParseBind refuses: %v", uid, podSalt, a, err)
		}
		if again, _ := DeriveBind(uid, podSalt); again != a {
			t.Fatalf("DeriveBind(%q, %q): got %v then %v", uid, podSalt, a, again)
		}
	})
}

func FuzzParseSocksPort(f *testing.F) {
	f.Fuzz(func(t *testing.T, value string) {
		port, ok, err := ParseSocksPort(value)
		v := strings.TrimSpace(value)
		switch {
		case err != nil:
			var r *Refusal
			if !errors.As(err, &r) || r.Annotation != ReverseSocksPort || ok || port != 0 || v == "" {
				t.Fatalf("ParseSocksPort(%q): got %d, %v, %v", value, port, ok, err)
			}
		case ok:
			if port < 1 || port > 65535 || strconv.Itoa(port) != v {
				t.Fatalf("ParseSocksPort(%q): got %d", value, port)
			}
		case v != "" || port != 0:
			t.Fatalf("ParseSocksPort(%q): got %d, false, nil for a value", value, port)
		}
	})
}

// FuzzParseCheck runs Parse and Check on the four annotations together under
// every site: a pod that passes Check must be one the site can honour.
func FuzzParseCheck(f *testing.F) {
	f.Fuzz(func(t *testing.T, forwards, bind, socks, vpn string) {
		ann := map[string]string{ReverseForwards: forwards, ReverseBind: bind, ReverseSocksPort: socks, PodVPN: vpn,
			RetiredReverseOwnerOnly: forwards, RetiredReverseNodeExec: socks}
		r, err := Parse(ann, "team-a")
		if err != nil {
			var ref *Refusal
			if !errors.As(err, &ref) || r != nil {
				t.Fatalf("Parse(%q): got %+v, %v; want nil and a *Refusal", ann, r, err)
			}
			return
		}
		if r != nil && r.SocksPort != 0 {
			for _, fw := range r.Forwards {
				if fw.ListenPort == r.SocksPort {
					t.Fatalf("Parse(%q): SOCKS port %d is also a listen port", ann, r.SocksPort)
				}
			}
		}
		for bits := range 16 {
			site := SiteRules{ReverseEnabled: bits&1 != 0, ShadowModeSSH: bits&2 != 0, TunnelEnabled: bits&4 != 0, AllowSocks: bits&8 != 0}
			err := Check(r, ann, site)
			if r == nil {
				if err != nil {
					t.Fatalf("Check(nil): got %v", err)
				}
				continue
			}
			honoured := site.ReverseEnabled && site.ShadowModeSSH && site.TunnelEnabled && vpn == "" && (r.SocksPort == 0 || site.AllowSocks)
			if (err == nil) != honoured {
				t.Fatalf("Check(%+v, %q, %+v): got %v; want refused=%v", r, ann, site, err, !honoured)
			}
		}
	})
}
