package hostname

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	long := strings.Repeat("a", 63)
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"node1", true},
		{"gpu_01", true}, // Slurm node names may hold '_'
		{"_gpu", false},
		{"gpu_", true},
		{"a._b.c", false},
		{"gpu-01.cluster.example.org", true},
		{"Node1.Example", true},
		{"a", true},
		{long + "." + long + "." + long + "." + strings.Repeat("a", 61), true},  // 253
		{long + "." + long + "." + long + "." + strings.Repeat("a", 62), false}, // 254
		{long, true},
		{long + "a", false},
		{"", false},
		{"-oProxyCommand=x", false},
		{"node-", false},
		{"a.-b", false},
		{"node 1", false},
		{"node;id", false},
		{"node$(id)", false},
		{"node`id`", false},
		{"node'1", false},
		{"node\n1", false},
		{"node\x00", false},
		{"nöde", false},
		{"node%eth0", false},
		{"node/1", false},
		{"node:22", false},
		{"node1.", false},
		{".node1", false},
		{"a..b", false},
		{"10.1", false},
		{"2130706433", false},
		{"0x7f", false},
		{"node.01", false},
		{"127.0.0.1", false}, // an address, not a name: CheckHost takes it
	} {
		err := Check(tc.name)
		if (err == nil) != tc.ok {
			t.Errorf("Check(%q) = %v; want ok %t", tc.name, err, tc.ok)
		}
		var he *Error
		if err != nil && (!errors.As(err, &he) || he.Name != tc.name || he.Rule == "") {
			t.Errorf("Check(%q) = %#v; want an *Error naming it and a rule", tc.name, err)
		}
	}
}

func TestCheckHost(t *testing.T) {
	for _, tc := range []struct {
		host string
		ok   bool
	}{
		{"gpu_01", true},
		{"10.0.0.1", true},
		{"fd00::1", true},
		{"::ffff:10.0.0.1", true},
		{"fe80::1%eth0", false},
		{"10.1", false},
		{"[fd00::1]", false},
		{"-x", false},
		{"", false},
	} {
		if err := CheckHost(tc.host); (err == nil) != tc.ok {
			t.Errorf("CheckHost(%q) = %v; want ok %t", tc.host, err, tc.ok)
		}
	}
}

// FuzzCheckHost: whatever passes is safe for a shell word, an ssh argument
// and an /etc/hosts line, and is either an IP address or a name whose last
// label cannot read as a number.
func FuzzCheckHost(f *testing.F) {
	for _, s := range []string{"gpu_01", "node1.example.org", "10.0.0.1", "fd00::1", "fe80::1%eth0", "-x", "a..b", "10.1", "0x7f", "a b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if CheckHost(s) != nil {
			return
		}
		if a, err := netip.ParseAddr(s); err == nil {
			if a.Zone() != "" {
				t.Fatalf("CheckHost(%q) accepted a zoned address", s)
			}
			return
		}
		if len(s) == 0 || len(s) > MaxLen || s[0] == '-' || s[0] == '_' || s[0] == '.' || s[len(s)-1] == '.' {
			t.Fatalf("CheckHost(%q) accepted a name of bad length or edges", s)
		}
		for i := 0; i < len(s); i++ {
			c := s[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
				t.Fatalf("CheckHost(%q) accepted byte %q", s, c)
			}
		}
		last := s[strings.LastIndexByte(s, '.')+1:]
		if last[0] >= '0' && last[0] <= '9' {
			t.Fatalf("CheckHost(%q) accepted a name that reads as a number", s)
		}
	})
}

func TestCheckHostPort(t *testing.T) {
	for _, ok := range []string{"gw:22", "sluice-gateway.sluice.svc:2222", "10.0.0.1:1", "[fd00::1]:65535"} {
		if err := CheckHostPort(ok); err != nil {
			t.Errorf("CheckHostPort(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "gw", "gw:", "gw:0", "gw:65536", "gw:ssh", ":22", "-o=x:22", "[fe80::1%eth0]:22", "fd00::1:22"} {
		if err := CheckHostPort(bad); err == nil {
			t.Errorf("CheckHostPort(%q) accepted", bad)
		}
	}
}
