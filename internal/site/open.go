package site

import (
	"fmt"
	"log/slog"
	"net"
	"strconv"

	"github.com/sluice-hpc/sluice/internal/config"
	"github.com/sluice-hpc/sluice/internal/sshx"
	"golang.org/x/crypto/ssh"
)

// Open returns the runner the configuration asks for: an SSH connection to
// the login node with the key (and its certificate, read again at each
// connection) and pinned known_hosts the configuration names, or the local
// runner. The SSH connection is made on first use, through Dialer(c) (a
// bastion, pacing).
func Open(c *config.Config, log *slog.Logger) (Runner, error) {
	if log == nil {
		log = slog.Default()
	}
	if c.Site.Access == config.AccessLocal {
		return &Local{}, nil
	}
	h := c.Network.SSH
	auth, err := loginAuth(h, log)
	if err != nil {
		return nil, err
	}
	var hostKeys ssh.HostKeyCallback
	if h.InsecureIgnoreHostKeys {
		log.Warn("host key checks are OFF for the login node: anyone on the path can read and change what sluice sends (Network.SSH.InsecureIgnoreHostKeys)",
			"host", h.LoginHost)
		hostKeys = ssh.InsecureIgnoreHostKey() //nolint:gosec // chosen on purpose by the site, logged above
	} else if hostKeys, err = sshx.HostKeys(h.KnownHostsFile); err != nil {
		return nil, fmt.Errorf("open site: Network.SSH.KnownHostsFile: %w", err)
	}
	dial, err := Dialer(c, log)
	if err != nil {
		return nil, fmt.Errorf("open site: %w", err)
	}
	r, err := NewSSH(SSHConfig{
		Dial:            dial,
		Addr:            net.JoinHostPort(h.LoginHost, strconv.Itoa(h.Port)),
		User:            h.User,
		Auth:            []ssh.AuthMethod{auth},
		HostKeyCallback: hostKeys,
		Logger:          log,
	})
	if err != nil {
		return nil, fmt.Errorf("open site: %w", err)
	}
	return r, nil
}

// loginAuth returns how the virtual kubelet logs in to the login node:
// Kerberos (with the TGT delegated under Reverse.NodeExec srun, SPEC S5),
// or the key (and its certificate, read again at each connection).
func loginAuth(h config.SSH, log *slog.Logger) (ssh.AuthMethod, error) {
	if h.Auth == "kerberos" {
		src, err := KerberosSource(h)
		if err != nil {
			return nil, fmt.Errorf("open site: %w", err)
		}
		return sshx.KerberosAuth(src, h.LoginHost, h.Reverse.NodeExec == "srun"), nil
	}
	signer, err := sshx.Signer(h.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("open site: Network.SSH.KeyFile: %w", err)
	}
	auth := ssh.PublicKeys(signer)
	if h.CertificateFile != "" {
		cs, err := sshx.NewCertSigner(signer, h.CertificateFile)
		if err != nil {
			return nil, fmt.Errorf("open site: Network.SSH.CertificateFile: %w", err)
		}
		cs.WarnBefore, cs.Logger = h.CertificateWarnBefore, log
		auth = cs.AuthMethod()
	}
	return auth, nil
}
