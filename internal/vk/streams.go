package vk

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strconv"

	"github.com/sluice-hpc/sluice/internal/config"
	"github.com/sluice-hpc/sluice/internal/jobscript"
	"github.com/sluice-hpc/sluice/internal/kubeletstream"
	"github.com/sluice-hpc/sluice/internal/site"
	"github.com/sluice-hpc/sluice/internal/sshx"
	"github.com/sluice-hpc/sluice/internal/tunnel"
	"golang.org/x/crypto/ssh"
)

// streamServer is the site's end of kubectl port-forward, exec and attach.
// Without Network.SSH.NodeKnownHostsFile (or with local site access) it has
// no connections, and port-forward answers an error saying what to set;
// with Reverse.NodeExec srun and no node host keys port-forward goes
// through srun (relay places the relay binary it runs).
func streamServer(cfg *config.Config, jobs kubeletstream.Jobs, output kubeletstream.Output, relay func(context.Context) (string, error), log *slog.Logger) (*kubeletstream.Server, error) {
	siteOpts, err := jobscript.NewSiteOptions(cfg.Site)
	if err != nil {
		return nil, fmt.Errorf("kubelet API streams: %w", err)
	}
	s := &kubeletstream.Server{
		Jobs:    jobs,
		Output:  output,
		Runtime: jobscript.Runtime(cfg.Site.ContainerRuntime),
		Site:    siteOpts,
		Limits: kubeletstream.Limits{PerPod: cfg.Node.KubeletAPI.MaxSessionsPerPod, PerNode: cfg.Node.KubeletAPI.MaxSessionsPerNode,
			Confined: cfg.Network.TenantNamespace != "" && cfg.Network.RefuseForeignPods},
		Logger: log,
	}
	h := cfg.Network.SSH
	// srun carries port-forward only where the node hop cannot: with node
	// host keys the streams keep the node's sshd, whose channels open in a
	// third of the time of an srun step (bench/RESULTS.md).
	bySrun := h.Reverse.NodeExec == "srun" && h.NodeKnownHostsFile == ""
	if cfg.Site.Access != config.AccessSSH || h.NodeKnownHostsFile == "" && !bySrun {
		return s, nil
	}
	auth, gssapi, err := streamAuth(h, log)
	if err != nil {
		return nil, err
	}
	var loginKeys ssh.HostKeyCallback
	if h.InsecureIgnoreHostKeys {
		loginKeys = ssh.InsecureIgnoreHostKey() //nolint:gosec // chosen by the site, logged by site.Open
	} else if loginKeys, err = sshx.HostKeys(h.KnownHostsFile); err != nil {
		return nil, fmt.Errorf("kubelet API streams: Network.SSH.KnownHostsFile: %w", err)
	}
	nodeKeys := refuseNodeKeys
	if h.NodeKnownHostsFile != "" {
		if nodeKeys, err = sshx.HostKeys(h.NodeKnownHostsFile); err != nil {
			return nil, fmt.Errorf("kubelet API streams: Network.SSH.NodeKnownHostsFile: %w", err)
		}
	}
	dial, err := site.Dialer(cfg, log) // the runner's: a bastion, one pacing bucket
	if err != nil {
		return nil, fmt.Errorf("kubelet API streams: %w", err)
	}
	s.Conns = &kubeletstream.Conns{
		Hop: &tunnel.Hop{
			LoginAddr:     net.JoinHostPort(h.LoginHost, strconv.Itoa(h.Port)),
			User:          h.User,
			Auth:          auth,
			GSSAPI:        gssapi,
			LoginHostKeys: loginKeys,
			NodeHostKeys:  nodeKeys,
			Dial:          dial,
		},
		Logger: log,
	}
	if bySrun {
		s.Srun = &kubeletstream.SrunCarrier{Relay: relay}
	}
	return s, nil
}

// refuseNodeKeys refuses every compute node's host key: the node hop of a
// site whose streams go through srun, without pinned node keys.
func refuseNodeKeys(hostname string, _ net.Addr, _ ssh.PublicKey) error {
	return fmt.Errorf("node %s: no pinned node host keys (Network.SSH.NodeKnownHostsFile is empty)", hostname)
}

// streamAuth returns the key (with its certificate, read again at each
// connection, when CertificateFile is set), or with Kerberos the
// gssapi-with-mic method of each hop, delegating on the login hop by the
// runner's rule (Reverse.NodeExec srun: exec's srun runs there).
func streamAuth(h config.SSH, log *slog.Logger) ([]ssh.AuthMethod, func(string, bool) ssh.AuthMethod, error) {
	if h.Auth == "kerberos" {
		src, err := site.KerberosSource(h)
		if err != nil {
			return nil, nil, fmt.Errorf("kubelet API streams: %w", err)
		}
		delegate := h.Reverse.NodeExec == "srun"
		return nil, func(host string, login bool) ssh.AuthMethod { return sshx.KerberosAuth(src, host, login && delegate) }, nil
	}
	signer, err := sshx.Signer(h.KeyFile)
	if err != nil {
		return nil, nil, fmt.Errorf("kubelet API streams: Network.SSH.KeyFile: %w", err)
	}
	if h.CertificateFile != "" {
		cs, err := sshx.NewCertSigner(signer, h.CertificateFile)
		if err != nil {
			return nil, nil, fmt.Errorf("kubelet API streams: Network.SSH.CertificateFile: %w", err)
		}
		cs.WarnBefore, cs.Logger = h.CertificateWarnBefore, log
		return []ssh.AuthMethod{cs.AuthMethod()}, nil, nil
	}
	return []ssh.AuthMethod{ssh.PublicKeys(signer)}, nil, nil
}
