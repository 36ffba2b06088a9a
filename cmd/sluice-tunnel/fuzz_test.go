package main

import (
	"strconv"
	"strings"
	"testing"

	"github.com/sluice-hpc/sluice/internal/tunnel"
)

// FuzzParseEndpoint checks that --forward values never panic, and that an
// accepted one holds valid ports and a checked host, and reads back the
// same from its canonical form.
func FuzzParseEndpoint(f *testing.F) {
	for _, s := range []string{
		"6379=redis.default:6379", "8443=[fd00::1]:443", "80=localhost:8080", "1=1.2.3.4:65535",
		"", "=", "6379=redis", "0=a:1", "6379=[::1%lo]:1", "6379=a:b:c", "6379=[a]:1", "x=y=z:1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e, err := parseEndpoint(s)
		if err != nil {
			if e != (tunnel.Endpoint{}) {
				t.Fatalf("parseEndpoint(%q) returned %+v with error %v", s, e, err)
			}
			return
		}
		if e.ListenPort < 1 || e.ListenPort > 65535 || e.Port < 1 || e.Port > 65535 {
			t.Fatalf("parseEndpoint(%q) = %+v: port out of range", s, e)
		}
		if err := checkHost(e.Host); err != nil {
			t.Fatalf("parseEndpoint(%q) = %+v: host refused by checkHost: %v", s, e, err)
		}
		if strings.ContainsAny(e.Host, " \t\n\"'$`;|&<>\\%/") {
			t.Fatalf("parseEndpoint(%q) = %+v: host holds a forbidden character", s, e)
		}
		back, err := parseEndpoint(e.String())
		if err != nil || back != e {
			t.Fatalf("round trip of %q: %q gives %+v, %v; want %+v", s, e.String(), back, err, e)
		}
	})
}

// FuzzParsePorts checks that --ports values never panic, and that an
// accepted list holds distinct ports in range that read back the same.
func FuzzParsePorts(f *testing.F) {
	for _, s := range []string{"8080", "8080,9090", "", ",", "0", "65536", "08080", "1,1", "+1", "1, 2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ports, err := parsePorts(s)
		if err != nil {
			if ports != nil {
				t.Fatalf("parsePorts(%q) returned %v with error %v", s, ports, err)
			}
			return
		}
		if len(ports) == 0 {
			t.Fatalf("parsePorts(%q) accepted no port", s)
		}
		seen := map[int]bool{}
		text := make([]string, len(ports))
		for i, p := range ports {
			if p < 1 || p > 65535 || seen[p] {
				t.Fatalf("parsePorts(%q) = %v: bad or repeated port %d", s, ports, p)
			}
			seen[p] = true
			text[i] = strconv.Itoa(p)
		}
		if back := strings.Join(text, ","); back != s {
			t.Fatalf("parsePorts(%q) = %v, which reads %q", s, ports, back)
		}
	})
}

// FuzzParseListenAddr checks that --metrics values never panic and that an
// accepted one reads back the same.
func FuzzParseListenAddr(f *testing.F) {
	for _, s := range []string{"127.0.0.1:9464", ":9464", "fd00::5:9464", "[::1]:1", "x:1", "", ":", "1.2.3.4:0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		addr, err := parseListenAddr(s)
		if err != nil {
			return
		}
		back, err := parseListenAddr(addr)
		if err != nil || back != addr {
			t.Fatalf("parseListenAddr(%q) = %q, which reads %q, %v", s, addr, back, err)
		}
	})
}

// FuzzObjectRef checks that --host-key-secret and --publish-host-keys values
// never panic, that an accepted one names a namespace and an object with
// no slash, and that it reads back the same.
func FuzzObjectRef(f *testing.F) {
	for _, s := range []string{"sluice/gw-host-key", "sluice/a.b", "x", "/x", "ns/", "a/b/c", "NS/x", "ns/X", "ns/../x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var r objectRef
		if err := r.Set(s); err != nil {
			if r != (objectRef{}) {
				t.Fatalf("Set(%q) failed (%v) but kept %+v", s, err, r)
			}
			return
		}
		if r.ns == "" || r.name == "" || strings.Contains(r.name, "/") || r.name == ".." {
			t.Fatalf("Set(%q) accepted %+v", s, r)
		}
		var back objectRef
		if err := back.Set(r.String()); err != nil || back != r {
			t.Fatalf("Set(%q) = %+v, which reads %+v, %v", s, r, back, err)
		}
	})
}
