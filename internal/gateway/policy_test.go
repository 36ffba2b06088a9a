package gateway

import (
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
)

func testGrant() *Grant {
	return &Grant{
		Pod:          PodRef{Namespace: "ns", Name: "web", UID: "u1"},
		Node:         "c1",
		SocketDir:    "/run/sluice/u1",
		ForwardPorts: []int32{8080, 9090},
		SocketNames:  []string{"rev-6379.sock"},
	}
}

func TestParseForward(t *testing.T) {
	g := testGrant()
	for _, tc := range []struct {
		host string
		port uint32
		want string // "" for allowed
	}{
		{"127.0.0.1", 8080, ""},
		{"127.0.0.1", 9090, ""},
		{"127.0.0.1", 22, "not a container port"},
		{"localhost", 8080, "only 127.0.0.1"},
		{"10.0.0.1", 8080, "only 127.0.0.1"},
		{"127.0.0.1", 0, "out of range"},
		{"127.0.0.1", 65536 + 8080, "out of range"},
	} {
		p := ssh.Marshal(directTCPIP{Host: tc.host, Port: tc.port})
		port, err := parseForward(g, p)
		if tc.want == "" {
			if err != nil || uint32(port) != tc.port {
				t.Errorf("%s:%d: got %d, %v; want allowed", tc.host, tc.port, port, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s:%d: got %v; want an error with %q", tc.host, tc.port, err, tc.want)
		}
	}
	if _, err := parseForward(g, []byte{0, 0, 0, 9, 'x'}); err == nil {
		t.Error("a truncated payload was accepted")
	}
}

func TestParseSocket(t *testing.T) {
	g := testGrant()
	for _, tc := range []struct {
		path, name string // name "" for refused
	}{
		{"rev-6379.sock", "rev-6379.sock"},
		{"/run/sluice/u1/rev-6379.sock", "rev-6379.sock"},
		{"/run/sluice/u1//rev-6379.sock", ""},
		{"/run/sluice/u2/rev-6379.sock", ""},
		{"/run/sluice/u1/../u2/rev-6379.sock", ""},
		{"/run/sluice/u1/rev-1.sock", ""},
		{"rev-1.sock", ""},
		{"", ""},
		{"/run/sluice/u1/", ""},
		{strings.Repeat("a", 200), ""},
	} {
		asked, name, err := parseSocket(g, ssh.Marshal(streamLocal{Path: tc.path}))
		if tc.name == "" {
			if err == nil {
				t.Errorf("%q: allowed as %q, want refused", tc.path, name)
			}
			continue
		}
		if err != nil || name != tc.name || asked != tc.path {
			t.Errorf("%q: got %q %q %v; want %q", tc.path, asked, name, err, tc.name)
		}
	}
	g.SocketDir = ""
	if _, _, err := parseSocket(g, ssh.Marshal(streamLocal{Path: "/rev-6379.sock"})); err == nil {
		t.Error("a path was allowed for a grant with no socket directory")
	}
}

// FuzzParse checks that no payload panics, and that what is allowed is
// exactly one of the grant's ports or sockets.
func FuzzParse(f *testing.F) {
	f.Add(ssh.Marshal(directTCPIP{Host: "127.0.0.1", Port: 8080}))
	f.Add(ssh.Marshal(streamLocal{Path: "/run/sluice/u1/rev-6379.sock"}))
	f.Add([]byte{0, 0, 0, 0})
	g := testGrant()
	f.Fuzz(func(t *testing.T, payload []byte) {
		if port, err := parseForward(g, payload); err == nil && port != 8080 && port != 9090 {
			t.Fatalf("port %d allowed", port)
		}
		if _, name, err := parseSocket(g, payload); err == nil && name != "rev-6379.sock" {
			t.Fatalf("socket %q allowed", name)
		}
	})
}
