package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/sluice-hpc/sluice/internal/sshx"
	"github.com/sluice-hpc/sluice/internal/tunnel"
)

// gatewayFlags are the flags of a shadow that tunnels through a sluice
// gateway (SPEC S14) instead of logging into the site itself: it holds no
// site credential, only its ServiceAccount token.
type gatewayFlags struct {
	addr       string // host:port; "" to reach the site directly
	knownHosts string
	tokenFile  string
}

// defaultGatewayPort is the port of the gateway's SSH server.
const defaultGatewayPort = 2222

// maxTokenFile bounds the token read from --gateway-token.
const maxTokenFile = 16 << 10

func (g *gatewayFlags) define(fs *flag.FlagSet) {
	fs.StringVar(&g.addr, "gateway", "", "a sluice gateway to tunnel through instead of the login node, HOST:PORT (PORT defaults to 2222); replaces every flag of the site's access (default: the login node)")
	fs.StringVar(&g.knownHosts, "gateway-known-hosts", "", "known_hosts file pinning the gateway's host key (required with --gateway)")
	fs.StringVar(&g.tokenFile, "gateway-token", "", "the shadow's projected ServiceAccount token, read again at each connection (required with --gateway)")
}

// checkGateway checks the flags of a tunnel through a gateway: its own,
// none of the site's, and only what the gateway carries.
func (c *config) checkGateway(raw *rawFlags) []error {
	var errs []error
	addr, err := parseHostPort(c.gateway.addr, defaultGatewayPort)
	if err != nil {
		errs = append(errs, fmt.Errorf("--gateway: %w", err))
	}
	c.gateway.addr = addr
	if c.gateway.knownHosts == "" {
		errs = append(errs, errors.New("--gateway-known-hosts is required with --gateway"))
	}
	if c.gateway.tokenFile == "" {
		errs = append(errs, errors.New("--gateway-token is required with --gateway"))
	}
	site := map[string]bool{
		"login": raw.login != "", "user": c.user != "", "key": c.keyFile != "",
		"certificate": c.certFile != "", "keytab": c.kerberos.keytab != "",
		"login-known-hosts": c.loginKnownHosts != "", "node-known-hosts": c.nodeKnownHosts != "",
		"bastion": c.access.bastion != "", "reconnect-spread": c.access.spread != 0,
	}
	var given []string
	for _, f := range []string{"login", "user", "key", "certificate", "keytab", "login-known-hosts", "node-known-hosts", "bastion", "reconnect-spread"} {
		if site[f] {
			given = append(given, "--"+f)
		}
	}
	if len(given) > 0 {
		errs = append(errs, fmt.Errorf("--gateway: the gateway holds the site's access: %s not allowed with it", strings.Join(given, ", ")))
	}
	switch c.mode {
	case modeForward:
		if raw.target != string(tunnel.TargetNode) {
			errs = append(errs, fmt.Errorf("--gateway: --target=%s: the gateway forwards to the node only", raw.target))
		}
	case modeReverse:
		if c.sshd != tunnel.SshdNode || c.nodeExec != tunnel.NodeExecSSH || raw.socksPort != 0 {
			errs = append(errs, errors.New("--gateway: --sshd=userspace, --node-exec=srun and --socks-port are not carried by the gateway yet"))
		}
	}
	return errs
}

// loadGatewayHop returns the hop to the gateway c names.
func loadGatewayHop(c *config) (*tunnel.Hop, error) {
	keys, err := sshx.HostKeys(c.gateway.knownHosts)
	if err != nil {
		return nil, fmt.Errorf("--gateway-known-hosts: %w", err)
	}
	if _, err := readToken(c.gateway.tokenFile); err != nil {
		return nil, fmt.Errorf("--gateway-token: %w", err)
	}
	if _, err := os.ReadFile(c.nodeFile); err != nil {
		return nil, fmt.Errorf("--node-file: %w", err)
	}
	file := c.gateway.tokenFile
	return &tunnel.Hop{
		LoginAddr:     c.gateway.addr,
		LoginHostKeys: keys,
		Gateway:       true,
		// The kubelet rotates the projected token in place.
		Token: func() (string, error) { return readToken(file) },
	}, nil
}

// readToken reads a ServiceAccount token: one line, at most maxTokenFile
// bytes.
func readToken(file string) (string, error) {
	f, err := os.Open(file)
	if err != nil {
		return "", err
	}
	defer f.Close()
	buf, err := io.ReadAll(io.LimitReader(f, maxTokenFile+1))
	if err != nil {
		return "", fmt.Errorf("read token: %w", err)
	}
	if len(buf) > maxTokenFile {
		return "", fmt.Errorf("token longer than %d bytes", maxTokenFile)
	}
	tok := strings.TrimSpace(string(buf))
	if tok == "" || strings.ContainsAny(tok, " \t\r\n") {
		return "", errors.New("token: want one non-empty line")
	}
	return tok, nil
}
