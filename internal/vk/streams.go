package vk

import (
	"fmt"
	"log/slog"
	"net"
	"strconv"

	"github.com/sluice-hpc/sluice/internal/config"
	"github.com/sluice-hpc/sluice/internal/kubeletstream"
	"github.com/sluice-hpc/sluice/internal/site"
	"github.com/sluice-hpc/sluice/internal/slurm"
	"github.com/sluice-hpc/sluice/internal/sshx"
	"github.com/sluice-hpc/sluice/internal/tunnel"
	"golang.org/x/crypto/ssh"
)

// streamServer is the site's end of kubectl port-forward, exec and attach.
// Without Network.SSH.NodeKnownHostsFile (or with local site access) it has
// no connections, and port-forward answers an error saying what to set.
func streamServer(cfg *config.Config, jobs kubeletstream.Jobs, log *slog.Logger) (*kubeletstream.Server, error) {
	s := &kubeletstream.Server{
		Jobs:    jobs,
		Runtime: slurm.Runtime(cfg.Site.ContainerRuntime),
		Limits:  kubeletstream.Limits{PerPod: cfg.Node.KubeletAPI.MaxSessionsPerPod, PerNode: cfg.Node.KubeletAPI.MaxSessionsPerNode},
		Logger:  log,
	}
	h := cfg.Network.SSH
	if cfg.Site.Access != config.AccessSSH || h.NodeKnownHostsFile == "" {
		return s, nil
	}
	auth, gssapi, err := streamAuth(h)
	if err != nil {
		return nil, err
	}
	var loginKeys ssh.HostKeyCallback
	if h.InsecureIgnoreHostKeys {
		loginKeys = ssh.InsecureIgnoreHostKey() //nolint:gosec // chosen by the site, logged by site.Open
	} else if loginKeys, err = sshx.HostKeys(h.KnownHostsFile); err != nil {
		return nil, fmt.Errorf("kubelet API streams: Network.SSH.KnownHostsFile: %w", err)
	}
	nodeKeys, err := sshx.HostKeys(h.NodeKnownHostsFile)
	if err != nil {
		return nil, fmt.Errorf("kubelet API streams: Network.SSH.NodeKnownHostsFile: %w", err)
	}
	s.Conns = &kubeletstream.Conns{
		Hop: &tunnel.Hop{
			LoginAddr:     net.JoinHostPort(h.LoginHost, strconv.Itoa(h.Port)),
			User:          h.User,
			Auth:          auth,
			GSSAPI:        gssapi,
			LoginHostKeys: loginKeys,
			NodeHostKeys:  nodeKeys,
		},
		Logger: log,
	}
	return s, nil
}

// streamAuth returns the key, or with Kerberos the gssapi-with-mic method of
// each hop (never delegating: streams run no srun).
func streamAuth(h config.SSH) ([]ssh.AuthMethod, func(string, bool) ssh.AuthMethod, error) {
	if h.Auth == "kerberos" {
		src, err := site.KerberosSource(h)
		if err != nil {
			return nil, nil, fmt.Errorf("kubelet API streams: %w", err)
		}
		return nil, func(host string, _ bool) ssh.AuthMethod { return sshx.KerberosAuth(src, host, false) }, nil
	}
	signer, err := sshx.Signer(h.KeyFile)
	if err != nil {
		return nil, nil, fmt.Errorf("kubelet API streams: Network.SSH.KeyFile: %w", err)
	}
	return []ssh.AuthMethod{ssh.PublicKeys(signer)}, nil, nil
}
