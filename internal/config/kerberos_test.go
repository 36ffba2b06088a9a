package config

import (
	"strings"
	"testing"
)

// kerberos turns minimal into a Kerberos configuration with Realm and KDCs.
func kerberos(extra string) string {
	return strings.Replace(minimal, "    KeyFile: /k\n",
		"    Auth: kerberos\n    Principal: alice@SLUICE.RIG\n    KeytabFile: /etc/sluice/alice.keytab\n"+extra, 1)
}

func TestKerberosAccepted(t *testing.T) {
	for name, src := range map[string]string{
		"realm and KDCs": kerberos("    Realm: SLUICE.RIG\n    KDCs: [10.251.1.2, \"kdc.example.org:8888\"]\n"),
		"krb5.conf":      kerberos("    Krb5ConfFile: /etc/krb5.conf\n"),
		"shadows":        shadowKerberos("    KeytabSecret: hpc-keytab\n    Realm: SLUICE.RIG\n    KDCs: [10.251.1.2]\n"),
		"shadows behind a bastion": shadowKerberos("    KeytabSecret: hpc-keytab\n    Realm: SLUICE.RIG\n    KDCs: [10.251.1.2]\n" +
			"    Bastion:\n      Host: 10.0.0.9\n      KeyFile: /bk\n      KnownHostsFile: /bkh\n      HostKeys: hpc-bastion-hosts\n      KeySecret: hpc-bastion-key\n"),
		// the gateway logs in: the shadows name nothing of the site's
		"shadows through the gateway": strings.Replace(shadowKerberos("    Realm: SLUICE.RIG\n    KDCs: [10.251.1.2]\n"+
			"    Bastion:\n      Host: 10.0.0.9\n      KeyFile: /bk\n      KnownHostsFile: /bkh\n"),
			"  EnableTunnel: true\n", "  EnableTunnel: true\n  Gateway:\n    Address: gw.sluice.svc:2222\n", 1),
	} {
		t.Run(name, func(t *testing.T) {
			c, err := Parse([]byte(src))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if h := c.Network.SSH; h.Auth != "kerberos" || h.Principal != "alice@SLUICE.RIG" || h.KeytabFile != "/etc/sluice/alice.keytab" {
				t.Fatalf("got Auth %q Principal %q KeytabFile %q", h.Auth, h.Principal, h.KeytabFile)
			}
		})
	}
}

func TestKerberosRejected(t *testing.T) {
	ok := "    Realm: SLUICE.RIG\n    KDCs: [10.251.1.2]\n"
	for _, tt := range []struct {
		name, src, want string
	}{
		{"no principal", strings.Replace(kerberos(ok), "    Principal: alice@SLUICE.RIG\n", "", 1), "Network.SSH.Principal"},
		{"bad principal", strings.Replace(kerberos(ok), "alice@SLUICE.RIG", `"alice;id"`, 1), "Network.SSH.Principal"},
		{"no keytab", strings.Replace(kerberos(ok), "    KeytabFile: /etc/sluice/alice.keytab\n", "", 1), "Network.SSH.KeytabFile"},
		{"relative keytab", strings.Replace(kerberos(ok), "/etc/sluice/alice.keytab", "alice.keytab", 1), "Network.SSH.KeytabFile"},
		{"no realm", kerberos("    KDCs: [10.251.1.2]\n"), "Network.SSH.Realm"},
		{"no KDC", kerberos("    Realm: SLUICE.RIG\n"), "Network.SSH.KDCs"},
		{"bad KDC", kerberos("    Realm: SLUICE.RIG\n    KDCs: [\"-oProxy=x\"]\n"), "Network.SSH.KDCs"},
		{"bad KDC port", kerberos("    Realm: SLUICE.RIG\n    KDCs: [\"kdc:0\"]\n"), "Network.SSH.KDCs"},
		{"both", kerberos(ok + "    Krb5ConfFile: /etc/krb5.conf\n"), "Network.SSH.Krb5ConfFile"},
		{"bad secret", kerberos(ok + "    KeytabSecret: Bad_Name\n"), "Network.SSH.KeytabSecret"},
		{"keys without kerberos", strings.Replace(minimal, "    KeyFile: /k\n", "    KeyFile: /k\n    Principal: alice\n", 1), "Network.SSH.Principal"},
		{"shadows without a keytab secret", shadowKerberos(ok), "Network.SSH.KeytabSecret: is required with Network.EnableTunnel"},
		{"shadows with a krb5.conf", shadowKerberos("    KeytabSecret: hpc-keytab\n    Krb5ConfFile: /etc/krb5.conf\n"),
			"Network.SSH.Krb5ConfFile: the shadows cannot read a krb5.conf"},
		{"shadows behind a bastion without its key secret", shadowKerberos(ok + "    KeytabSecret: hpc-keytab\n" +
			"    Bastion:\n      Host: 10.0.0.9\n      KeyFile: /bk\n      KnownHostsFile: /bkh\n      HostKeys: hpc-bastion-hosts\n"),
			"Network.SSH.Bastion.KeySecret: is required with Auth kerberos"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.src))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v; want an error naming %s", err, tt.want)
			}
		})
	}
}

// shadowKerberos is kerberos(extra) with the tunnel on (shadows over SSH).
func shadowKerberos(extra string) string {
	return strings.Replace(kerberos(extra), "Network:\n", "Network:\n  EnableTunnel: true\n", 1)
}
