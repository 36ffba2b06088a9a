package socks

import (
	"strings"
	"testing"
)

// badHostnames are names validHostname refuses.
var badHostnames = []string{
	"",
	".",
	"..",
	".example.org",
	"example..org",
	"example.org..",
	"_http._tcp.example.org",
	"-a",
	"a-",
	"a.-b.c",
	"a\x00b",
	"a\nb",
	"a\tb",
	"a b",
	"a\x7fb",
	"ex%ample",
	"exämple.org",
	"a/b",
	"a:b",
	"[::1]",
	strings.Repeat("a", 64),
	strings.Repeat("a.", 126) + "bc", // 254 characters
	"10.1",
	"1.2.3.4.5",
	"0x7f",
	"2130706433",
	"example.123",
}

func TestValidHostname(t *testing.T) {
	good := []string{
		"a",
		"localhost",
		"minio",
		"redis.default.svc.cluster.local",
		"kubernetes.default.svc.cluster.local.",
		"A-B.c-D",
		"1password.com",
		"a_b", // Slurm node names hold '_': one rule for every host name
		"x.y2",
		strings.Repeat("a", 63),
		strings.Repeat("a.", 126) + "b", // 253 characters
	}
	for _, h := range good {
		if !validHostname(h) {
			t.Errorf("validHostname(%q): got false; want true", h)
		}
	}
	for _, h := range badHostnames {
		if validHostname(h) {
			t.Errorf("validHostname(%q): got true; want false", h)
		}
	}
}
