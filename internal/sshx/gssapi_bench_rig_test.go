//go:build rig

package sshx

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/krb"
	"github.com/sluice-hpc/sluice/internal/sshx/sshxtest"
	"github.com/sluice-hpc/sluice/internal/testrig"
	"golang.org/x/crypto/ssh"
)

// BenchmarkRigLoginAuth is the cost of one connection to the rig's login
// sshd (TCP, key exchange, authentication, close) by each way of logging
// in, side by side: alice's key; a key with a user certificate (read again
// from its file at each connection, as sluice does) of a CA the login sshd
// trusts (TrustedUserCAKeys, set for the run); Kerberos with the service
// ticket held
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
	certAuth := rigUserCertificate(b, r)
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
		{"certificate", func() ssh.AuthMethod { return certAuth }},
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

// rigUserCertificate makes a user CA the login sshd trusts while b runs, a
// new key and its certificate for the rig's user, and returns the method
// that offers them.
func rigUserCertificate(b *testing.B, r *testrig.Rig) ssh.AuthMethod {
	dir := b.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	ca, key := sshxtest.NewSigner(b), sshxtest.NewSigner(b)
	caFile, certFile := filepath.Join(dir, "user_ca.pub"), filepath.Join(dir, "id-cert.pub")
	if err := os.WriteFile(caFile, ssh.MarshalAuthorizedKey(ca.PublicKey()), 0o644); err != nil {
		b.Fatal(err)
	}
	now := time.Now()
	sshxtest.WriteCertificate(b, certFile, sshxtest.Certificate(b, ca, key.PublicKey(), ssh.UserCert,
		[]string{r.Get(b, "RIG_USER")}, now.Add(-time.Hour), now.Add(24*time.Hour)))
	r.OverrideLoginSSHD(b, "TrustedUserCAKeys "+caFile+"\n")
	cs, err := NewCertSigner(key, certFile)
	if err != nil {
		b.Fatal(err)
	}
	return cs.AuthMethod()
}
