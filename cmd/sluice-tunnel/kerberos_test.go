package main

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/sluice-hpc/sluice/internal/tunnel"
)

var kerberosArgs = map[string]string{"key": "-", "keytab": "/etc/sluice/krb/keytab", "principal": "alice@SLUICE.RIG", "realm": "SLUICE.RIG", "kdc": "10.251.1.2,kdc2:8888"}

func TestParseArgsKerberos(t *testing.T) {
	c, err := parseArgs(modeForward, argv(forwardFlags, kerberosArgs))
	if err != nil {
		t.Fatal(err)
	}
	want := kerberosFlags{keytab: "/etc/sluice/krb/keytab", principal: "alice@SLUICE.RIG", realm: "SLUICE.RIG", kdcs: "10.251.1.2,kdc2:8888"}
	if c.kerberos != want || c.keyFile != "" {
		t.Fatalf("got %+v key %q; want %+v and no key", c.kerberos, c.keyFile, want)
	}
	conf := map[string]string{"key": "-", "keytab": "/k", "principal": "alice", "krb5-conf": "/etc/krb5.conf"}
	if _, err := parseArgs(modeForward, argv(forwardFlags, conf)); err != nil {
		t.Fatalf("--krb5-conf: %v", err)
	}
}

func TestParseArgsKerberosRejected(t *testing.T) {
	with := func(changes map[string]string) map[string]string {
		m := map[string]string{}
		for k, v := range kerberosArgs {
			m[k] = v
		}
		for k, v := range changes {
			m[k] = v
		}
		return m
	}
	for _, tc := range []struct {
		name    string
		changes map[string]string
		want    string
	}{
		{"no principal", with(map[string]string{"principal": "-"}), "--principal is required"},
		{"no kdc", with(map[string]string{"kdc": "-"}), "--realm and --kdc"},
		{"both", with(map[string]string{"krb5-conf": "/etc/krb5.conf"}), "not both"},
		{"bad kdc", with(map[string]string{"kdc": "-oProxyCommand=x"}), "--kdc"},
		{"principal without keytab", map[string]string{"principal": "alice"}, "need --keytab"},
		{"neither key nor keytab", map[string]string{"key": "-"}, "--key is required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseArgs(modeReverse, argv(reverseFlags, tc.changes))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v; want an error with %q", err, tc.want)
			}
		})
	}
}

// TestDelegates: the TGT goes to the login hop of a reverse tunnel carried
// by srun, and nowhere else.
func TestDelegates(t *testing.T) {
	for _, tc := range []struct {
		mode, nodeExec string
		login, want    bool
	}{
		{modeReverse, tunnel.NodeExecSrun, true, true},
		{modeReverse, tunnel.NodeExecSrun, false, false},
		{modeReverse, tunnel.NodeExecSSH, true, false},
		{modeForward, "", true, false},
		{modeForward, tunnel.NodeExecSrun, true, false},
	} {
		if got := delegates(&config{mode: tc.mode, nodeExec: tc.nodeExec}, tc.login); got != tc.want {
			t.Errorf("%s, node exec %q, login hop %v: got %v; want %v", tc.mode, tc.nodeExec, tc.login, got, tc.want)
		}
	}
}

// TestLoadHopKerberos: with --keytab and no --key the hop logs in with
// gssapi-with-mic only; a bad krb5.conf is an error naming the flag.
func TestLoadHopKerberos(t *testing.T) {
	f := writeSiteFiles(t)
	c := f.config()
	c.keyFile = ""
	c.kerberos = kerberosFlags{keytab: "/etc/sluice/krb/keytab", principal: "alice", realm: "SLUICE.RIG", kdcs: "10.251.1.2"}
	hop, err := loadHop(c, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	if len(hop.Auth) != 0 || hop.GSSAPI == nil || hop.GSSAPI("login", true) == nil {
		t.Fatalf("hop: %d key methods, GSSAPI set %v; want Kerberos only", len(hop.Auth), hop.GSSAPI != nil)
	}
	c.kerberos = kerberosFlags{keytab: "/k", principal: "alice", krb5Conf: "/nonexistent/krb5.conf"}
	if _, err := loadHop(c, slog.Default()); err == nil || !strings.Contains(err.Error(), "--krb5-conf") {
		t.Fatalf("a missing krb5.conf: got %v; want an error naming --krb5-conf", err)
	}
}
