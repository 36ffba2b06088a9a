package relay

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
)

func TestConfigValidate(t *testing.T) {
	good := func() Config {
		return Config{Addr: netip.MustParseAddr("127.4.5.6"), Ports: []uint16{9000, 6379}, Dir: "/tmp/x", UID: 1001}
	}
	cases := []struct {
		name   string
		change func(*Config)
		err    string
	}{
		{"good", func(*Config) {}, ""},
		{"v4-mapped address", func(c *Config) { c.Addr = netip.MustParseAddr("::ffff:127.4.5.6") }, ""},
		{"no address", func(c *Config) { c.Addr = netip.Addr{} }, "addr: missing"},
		{"127.0.0.1", func(c *Config) { c.Addr = netip.MustParseAddr("127.0.0.1") }, "addr: 127.0.0.1"},
		{"v4-mapped 127.0.0.1", func(c *Config) { c.Addr = netip.MustParseAddr("::ffff:127.0.0.1") }, "addr: 127.0.0.1"},
		{"not loopback", func(c *Config) { c.Addr = netip.MustParseAddr("10.0.0.1") }, "not an IPv4 loopback"},
		{"ipv6 loopback", func(c *Config) { c.Addr = netip.IPv6Loopback() }, "not an IPv4 loopback"},
		{"no ports", func(c *Config) { c.Ports = nil }, "ports: none"},
		{"port 0", func(c *Config) { c.Ports = []uint16{0} }, "port 0"},
		{"port twice", func(c *Config) { c.Ports = []uint16{6379, 6379} }, "port 6379 given twice"},
		{"no dir", func(c *Config) { c.Dir = "" }, "dir: missing"},
		{"negative parent", func(c *Config) { c.ParentPID = -1 }, "parent-pid"},
		{"forward without ports", func(c *Config) { c.Ports, c.Forward = nil, true }, ""},
		{"forward with a port file", func(c *Config) { c.Forward, c.PortFile = true, "/home/a/job/ports" }, ""},
		{"port file without forward", func(c *Config) { c.PortFile = "/home/a/job/ports" }, "port-file"},
		{"relative port file", func(c *Config) { c.Forward, c.PortFile = true, "job/ports" }, "port-file"},
	}
	for _, tc := range cases {
		c := good()
		tc.change(&c)
		err := c.Validate()
		if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%s: got error %v; want %q", tc.name, err, tc.err)
		}
	}
}

func TestParsePorts(t *testing.T) {
	cases := []struct {
		in   string
		want []uint16
		err  bool
	}{
		{"9000", []uint16{9000}, false},
		{"9000,6379", []uint16{9000, 6379}, false},
		{" 9000 , 6379 ", []uint16{9000, 6379}, false},
		{"65535", []uint16{65535}, false},
		{"", nil, true},
		{"9000,", nil, true},
		{"0", nil, true},
		{"65536", nil, true},
		{"-1", nil, true},
		{"90a0", nil, true},
		{"+80", nil, true},
	}
	for _, tc := range cases {
		got, err := ParsePorts(tc.in)
		if (err != nil) != tc.err || !slices.Equal(got, tc.want) {
			t.Errorf("ParsePorts(%q) = %v, %v; want %v, error %v", tc.in, got, err, tc.want, tc.err)
		}
	}
}

func FuzzParsePorts(f *testing.F) {
	for _, s := range []string{"9000", "9000,6379", "", ",", "0", "65536"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ports, err := ParsePorts(s)
		if err != nil {
			return
		}
		if len(ports) == 0 {
			t.Fatalf("ParsePorts(%q) gave no ports and no error", s)
		}
		for _, p := range ports {
			if p == 0 {
				t.Fatalf("ParsePorts(%q) gave port 0", s)
			}
		}
	})
}
