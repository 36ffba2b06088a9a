package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestGatewayFlags(t *testing.T) {
	gw := []string{"--gateway=gw.sluice:2222", "--gateway-known-hosts=/kh", "--gateway-token=/tok", "--node-file=/node"}
	for _, tc := range []struct {
		name string
		args []string
		want string // "" for accepted
	}{
		{"forward", append(gw, "--ports=8080"), ""},
		{"reverse", append(gw, "--socket-dir=/run/s/u", "--forward=6379=redis:6379"), ""},
		{"default port", []string{"--gateway=gw.sluice", "--gateway-known-hosts=/kh", "--gateway-token=/tok", "--node-file=/n", "--ports=1"}, ""},
		{"no known hosts", []string{"--gateway=gw", "--gateway-token=/tok", "--node-file=/n", "--ports=1"}, "--gateway-known-hosts is required"},
		{"no token", []string{"--gateway=gw", "--gateway-known-hosts=/kh", "--node-file=/n", "--ports=1"}, "--gateway-token is required"},
		{"site flags", append(gw, "--ports=1", "--user=alice", "--key=/k", "--login=l"), "--login, --user, --key not allowed"},
		{"target login", append(gw, "--ports=1", "--target=login"), "the gateway forwards to the node only"},
		{"socks", append(gw, "--socket-dir=/run/s/u", "--socks-port=1080"), "not carried by the gateway yet"},
		{"userspace", append(gw, "--socket-dir=/run/s/u", "--forward=1=h:1", "--sshd=userspace"), "not carried by the gateway yet"},
	} {
		mode := modeForward
		if strings.Contains(strings.Join(tc.args, " "), "--socket-dir") {
			mode = modeReverse
		}
		c, err := parseArgs(mode, tc.args)
		if tc.want == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			} else if !strings.Contains(c.gateway.addr, ":") {
				t.Errorf("%s: gateway address %q has no port", tc.name, c.gateway.addr)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want an error with %q", tc.name, err, tc.want)
		}
	}
}

func TestReadToken(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		content, want string // want "" for refused
	}{
		{"eyJhbGciOi.x.y\n", "eyJhbGciOi.x.y"},
		{"", ""},
		{"two words", ""},
		{strings.Repeat("a", maxTokenFile+1), ""},
	} {
		file := filepath.Join(dir, "token")
		if err := os.WriteFile(file, []byte(tc.content), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := readToken(file)
		if tc.want == "" && err == nil {
			t.Errorf("%.20q: accepted as %.20q", tc.content, got)
		}
		if tc.want != "" && (err != nil || got != tc.want) {
			t.Errorf("%.20q: got %q, %v", tc.content, got, err)
		}
	}
}
