package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/sluice-hpc/sluice/internal/sshx"
	"github.com/sluice-hpc/sluice/internal/tunnel"
	"golang.org/x/crypto/ssh"
)

// loadHop reads the files c names (the key and its certificate, both
// known_hosts files, the node file) and returns the hop to the site. Any of them missing or
// unusable is a configuration error naming its flag.
func loadHop(c *config, log *slog.Logger) (*tunnel.Hop, error) {
	var errs []error
	var (
		signer ssh.Signer
		err    error
		auth   ssh.AuthMethod
		gssapi func(string, bool) ssh.AuthMethod
	)
	if c.kerberos.keytab != "" {
		if gssapi, err = c.kerberos.gssapi(c); err != nil {
			errs = append(errs, err)
		}
	}
	if c.keyFile != "" {
		// The key comes from a Secret shared through the pod's fsGroup:
		// the group may read it.
		if signer, err = sshx.PodSigner(c.keyFile); err != nil {
			errs = append(errs, fmt.Errorf("--key: %w", err))
		}
	}
	if signer != nil {
		auth = ssh.PublicKeys(signer)
	}
	if signer != nil && c.certFile != "" {
		// Read again at each connection: a Secret updated with a renewed
		// certificate is used without restarting the shadow.
		cs, err := sshx.NewCertSigner(signer, c.certFile)
		if err != nil {
			errs = append(errs, fmt.Errorf("--certificate: %w", err))
		} else {
			cs.Logger = log
			auth = cs.AuthMethod()
		}
	}
	loginKeys, err := sshx.HostKeys(c.loginKnownHosts)
	if err != nil {
		errs = append(errs, fmt.Errorf("--login-known-hosts: %w", err))
	}
	nodeKeys, err := sshx.HostKeys(c.nodeKnownHosts)
	if err != nil {
		errs = append(errs, fmt.Errorf("--node-known-hosts: %w", err))
	}
	// The node file's content changes with the job (and is checked each
	// time it is read); the file itself must be there from the start. The
	// gateway has none: each shadow's grant names its node.
	if c.mode != modeGateway {
		if _, err := os.ReadFile(c.nodeFile); err != nil {
			errs = append(errs, fmt.Errorf("--node-file: %w", err))
		}
	}
	var methods []ssh.AuthMethod
	if auth != nil {
		methods = []ssh.AuthMethod{auth}
	}
	hop := &tunnel.Hop{
		LoginAddr:     c.login,
		User:          c.user,
		Auth:          methods,
		GSSAPI:        gssapi,
		LoginHostKeys: loginKeys,
		NodeHostKeys:  nodeKeys,
		NodePort:      c.nodePort,
	}
	errs = append(errs, c.access.load(hop, c.user, auth, log)...)
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return hop, nil
}
