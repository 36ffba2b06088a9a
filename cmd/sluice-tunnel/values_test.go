package main

import (
	"strings"
	"testing"

	"github.com/sluice-hpc/sluice/internal/tunnel"
)

func TestParsePort(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
		err  string
	}{
		{"1", 1, ""},
		{"22", 22, ""},
		{"65535", 65535, ""},
		{"", 0, "port is empty"},
		{"0", 0, "not in 1-65535"},
		{"65536", 0, "not in 1-65535"},
		{"99999999999999999999", 0, "not in 1-65535"},
		{"022", 0, "leading zero"},
		{"00", 0, "leading zero"},
		{"+22", 0, "not a decimal number"},
		{"-1", 0, "not a decimal number"},
		{" 22", 0, "not a decimal number"},
		{"0x16", 0, "not a decimal number"},
		{"٢٢", 0, "not a decimal number"},
	} {
		got, err := parsePort(tc.in)
		if tc.err == "" {
			if err != nil || got != tc.want {
				t.Errorf("parsePort(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("parsePort(%q) = %d, %v; want an error containing %q", tc.in, got, err, tc.err)
		}
	}
}

func TestParsePorts(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int
		err  string
	}{
		{"8080", []int{8080}, ""},
		{"8080,9090", []int{8080, 9090}, ""},
		{"1,2,3", []int{1, 2, 3}, ""},
		{"", nil, "no port given"},
		{",", nil, "port is empty"},
		{"8080,", nil, "port is empty"},
		{"8080,,9090", nil, "port is empty"},
		{"8080, 9090", nil, "not a decimal number"},
		{"8080 9090", nil, "not a decimal number"},
		{"8080,8080", nil, "port 8080 is listed twice"},
		{"8080,0", nil, "not in 1-65535"},
	} {
		got, err := parsePorts(tc.in)
		if tc.err == "" {
			if err != nil || !equalInts(got, tc.want) {
				t.Errorf("parsePorts(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("parsePorts(%q) = %v, %v; want an error containing %q", tc.in, got, err, tc.err)
		}
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestParseEndpoint(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want tunnel.Endpoint
		err  string
	}{
		{"6379=redis.default:6379", tunnel.Endpoint{ListenPort: 6379, Host: "redis.default", Port: 6379}, ""},
		{"9000=minio.ns.svc.cluster.local:9000", tunnel.Endpoint{ListenPort: 9000, Host: "minio.ns.svc.cluster.local", Port: 9000}, ""},
		{"8443=kubernetes.default.svc.cluster.local:443", tunnel.Endpoint{ListenPort: 8443, Host: "kubernetes.default.svc.cluster.local", Port: 443}, ""},
		{"80=localhost:8080", tunnel.Endpoint{ListenPort: 80, Host: "localhost", Port: 8080}, ""},
		{"5432=10.96.0.12:5432", tunnel.Endpoint{ListenPort: 5432, Host: "10.96.0.12", Port: 5432}, ""},
		{"8443=[fd00::1]:443", tunnel.Endpoint{ListenPort: 8443, Host: "fd00::1", Port: 443}, ""},
		{"", tunnel.Endpoint{}, "want LISTENPORT=HOST:PORT"},
		{"redis:6379", tunnel.Endpoint{}, "want LISTENPORT=HOST:PORT"},
		{"6379:redis:6379", tunnel.Endpoint{}, "want LISTENPORT=HOST:PORT"},
		{"=redis:6379", tunnel.Endpoint{}, "listen port is empty"},
		{"0=redis:6379", tunnel.Endpoint{}, "listen port \"0\" is not in 1-65535"},
		{"06379=redis:6379", tunnel.Endpoint{}, "listen port \"06379\" has a leading zero"},
		{"6379=redis", tunnel.Endpoint{}, "want LISTENPORT=HOST:PORT"},
		{"6379=redis:", tunnel.Endpoint{}, "destination port is empty"},
		{"6379=redis:70000", tunnel.Endpoint{}, "destination port \"70000\" is not in 1-65535"},
		{"6379=redis:6379=1", tunnel.Endpoint{}, "destination port \"6379=1\" is not a decimal number"},
		{"6379=:6379", tunnel.Endpoint{}, "host \"\" is not a host name"},
		{"6379=red is:6379", tunnel.Endpoint{}, "is not a host name"},
		{"6379=redis.:6379", tunnel.Endpoint{}, "is not a host name"},
		{"6379=-redis:6379", tunnel.Endpoint{}, "is not a host name"},
		{"6379=$(reboot):6379", tunnel.Endpoint{}, "is not a host name"},
		{"6379=" + strings.Repeat("a.", 127) + "b:6379", tunnel.Endpoint{}, "is not a host name"},
		{"443=fd00::1:443", tunnel.Endpoint{}, "IPv6 addresses in brackets"},
		{"443=[fe80::1%eth0]:443", tunnel.Endpoint{}, "zoned addresses"},
		{"443=0.0.0.0:443", tunnel.Endpoint{}, "not a unicast address"},
		{"443=[::]:443", tunnel.Endpoint{}, "not a unicast address"},
		{"443=224.0.0.1:443", tunnel.Endpoint{}, "not a unicast address"},
		{"443=255.255.255.255:443", tunnel.Endpoint{}, "not a unicast address"},
	} {
		got, err := parseEndpoint(tc.in)
		if tc.err == "" {
			if err != nil || got != tc.want {
				t.Errorf("parseEndpoint(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
			}
			if back := got.String(); back != tc.in {
				t.Errorf("%+v.String() = %q; want %q", got, back, tc.in)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("parseEndpoint(%q) = %+v, %v; want an error containing %q", tc.in, got, err, tc.err)
		}
	}
}

func TestParseHostPort(t *testing.T) {
	for _, tc := range []struct {
		in, want, err string
	}{
		{"10.251.1.2:2222", "10.251.1.2:2222", ""},
		{"login.site.example:22", "login.site.example:22", ""},
		{"login", "login:22", ""},
		{"10.0.0.1", "10.0.0.1:22", ""},
		{"fd00::1", "[fd00::1]:22", ""},
		{"[fd00::1]:2222", "[fd00::1]:2222", ""},
		{"", "", "is not a host name"},
		{":22", "", "is not a host name"},
		{"login:", "", "port is empty"},
		{"login:ssh", "", "not a decimal number"},
		{"login:0", "", "not in 1-65535"},
		{"fd00::1:22:x", "", "want HOST:PORT"},
		{"a:b:c", "", "want HOST:PORT"},
		{"log in:22", "", "is not a host name"},
		{"0.0.0.0:22", "", "not a unicast address"},
	} {
		got, err := parseHostPort(tc.in, 22)
		if tc.err == "" {
			if err != nil || got != tc.want {
				t.Errorf("parseHostPort(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("parseHostPort(%q) = %q, %v; want an error containing %q", tc.in, got, err, tc.err)
		}
	}
}

func TestParseListenAddr(t *testing.T) {
	for _, tc := range []struct {
		in, want, err string
	}{
		{"127.80.0.5:9464", "127.80.0.5:9464", ""},
		{":9464", ":9464", ""},
		{"0.0.0.0:9464", "0.0.0.0:9464", ""},
		{"[fd00::5]:9464", "[fd00::5]:9464", ""},
		{"fd00::5:9464", "[fd00::5]:9464", ""}, // $(POD_IP):9464 with an IPv6 pod IP
		{"9464", "", "want ADDR:PORT"},
		{"127.0.0.1", "", "want ADDR:PORT"},
		{"localhost:9464", "", "is not an IP address"},
		{"127.0.0.1:0", "", "not in 1-65535"},
		{"127.0.0.1:", "", "port is empty"},
		{"[fe80::1%eth0]:9464", "", "zoned addresses"},
		{"224.0.0.1:9464", "", "multicast"},
	} {
		got, err := parseListenAddr(tc.in)
		if tc.err == "" {
			if err != nil || got != tc.want {
				t.Errorf("parseListenAddr(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("parseListenAddr(%q) = %q, %v; want an error containing %q", tc.in, got, err, tc.err)
		}
	}
}
