//go:build rig

package sshx

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/krb"
	"golang.org/x/crypto/ssh"
)

// BenchmarkRigLoginAuth is the cost of one connection to the rig's login
// sshd (TCP, key exchange, authentication, close) by each way of logging
// in, side by side: alice's key; Kerberos with the service ticket held
// (what each new connection of a running sluice pays); Kerberos
// delegating (a forwarded TGT from the KDC for each connection, as under
// NodeExec srun); and Kerberos from nothing (a new Source each time: AS
// and TGS exchanges with the KDC, as after a restart or a renewal).
//
//	flock /tmp/sluice-rig.lock go test -tags rig -run '^$' -bench RigLoginAuth -benchtime 100x ./internal/sshx/
func BenchmarkRigLoginAuth(b *testing.B) {
	r, src, host := rigKerberos(b)
	key, err := Signer(r.Get(b, "RIG_KEY"))
	if err != nil {
		b.Fatal(err)
	}
	hosts, err := HostKeys(r.Get(b, "RIG_KNOWN_HOSTS"))
	if err != nil {
		b.Fatal(err)
	}
	addr := net.JoinHostPort(host, r.Get(b, "RIG_LOGIN_PORT"))
	connect := func(b *testing.B, auth ssh.AuthMethod) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := Dial(ctx, dialer(), addr, &ssh.ClientConfig{
			User: r.Get(b, "RIG_USER"), Auth: []ssh.AuthMethod{auth},
			HostKeyCallback: hosts, HostKeyAlgorithms: HostKeyAlgorithms(hosts, addr),
		})
		if err != nil {
			b.Fatal(err)
		}
		_ = c.Close()
	}
	for _, bc := range []struct {
		name string
		auth func() ssh.AuthMethod
	}{
		{"key", func() ssh.AuthMethod { return ssh.PublicKeys(key) }},
		{"kerberos", func() ssh.AuthMethod { return KerberosAuth(src, host, false) }},
		{"kerberos-delegate", func() ssh.AuthMethod { return KerberosAuth(src, host, true) }},
		{"kerberos-cold", func() ssh.AuthMethod {
			return KerberosAuth(&krb.Source{KeytabFile: src.KeytabFile, Principal: src.Principal, Config: src.Config}, host, false)
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			connect(b, bc.auth()) // warm: the held ticket, the sshd's caches
			b.ResetTimer()
			for b.Loop() {
				connect(b, bc.auth())
			}
		})
	}
}
