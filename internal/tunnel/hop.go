// Package tunnel carries connections between the cluster and a job's compute
// node over SSH through the site's login node: forward (cluster clients to
// ports the job listens on, SPEC S4) and reverse (the job to cluster
// endpoints, SPEC S5). Both reach the node over the same checked hop.
package tunnel

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-hpc/sluice/internal/hostname"
	"github.com/sluice-hpc/sluice/internal/sshx"
	"golang.org/x/crypto/ssh"
)

// Hop reaches the login node, and through it a compute node's own sshd, with
// the host key of each checked against its pinned known_hosts.
type Hop struct {
	// LoginAddr is the login node's sshd, host:port.
	LoginAddr string
	User      string
	Auth      []ssh.AuthMethod
	// LoginHostKeys and NodeHostKeys check the host keys of the login node
	// and of the compute nodes (sshx.HostKeys). Both are required.
	LoginHostKeys ssh.HostKeyCallback
	NodeHostKeys  ssh.HostKeyCallback
	// NodePort is the port of the compute nodes' sshd. If zero, 22.
	NodePort int
	// GSSAPI, if not nil, gives the gssapi-with-mic method for a host
	// (login says whether it is the login node), tried before Auth.
	GSSAPI func(host string, login bool) ssh.AuthMethod
	// Dial opens the connection to the login node (through a bastion, see
	// sshx.Bastion). If nil, a net.Dialer.
	Dial sshx.DialFunc
	// BeforeLogin, if not nil, is waited for before each connection to the
	// login node, outside Timeout (sshx.Jitter.Wait spreads reconnections
	// out); its error ends the attempt.
	BeforeLogin func(ctx context.Context) error
	// Timeout bounds each connection and handshake. If zero, 20s.
	Timeout time.Duration

	// Gateway, when true, makes LoginAddr a sluice gateway
	// (internal/gateway) instead of the login node: Login connects to it
	// as GatewayUser with the password Token returns (the shadow's
	// ServiceAccount token, read again at each connection), its host key
	// checked by LoginHostKeys, and Node returns that same connection: the
	// gateway reaches the pod's node itself. NodeHostKeys, User, Auth and
	// GSSAPI are not used.
	Gateway bool
	Token   func() (string, error)
}

// GatewayUser is the user a shadow logs into the gateway as.
const GatewayUser = "pod"

// Login connects to the login node.
func (h *Hop) Login(ctx context.Context) (*ssh.Client, error) {
	switch {
	case h.Gateway && (h.LoginHostKeys == nil || h.Token == nil):
		return nil, errors.New("tunnel: the gateway's host key must be pinned and a token given")
	case !h.Gateway && (h.LoginHostKeys == nil || h.NodeHostKeys == nil):
		return nil, errors.New("tunnel: login and node host keys must both be pinned")
	}
	if h.BeforeLogin != nil {
		if err := h.BeforeLogin(ctx); err != nil {
			return nil, err
		}
	}
	dial := h.Dial
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	ctx, cancel := context.WithTimeout(ctx, h.timeout())
	defer cancel()
	return sshx.Dial(ctx, dial, h.LoginAddr, h.config(h.LoginHostKeys, h.LoginAddr, true))
}

// Node connects to node's own sshd through login, an open connection to the
// login node. node must be a host name or IP literal (CheckNode).
func (h *Hop) Node(ctx context.Context, login *ssh.Client, node string) (*ssh.Client, error) {
	if err := CheckNode(node); err != nil {
		return nil, err
	}
	if h.Gateway {
		return login, nil
	}
	port := h.NodePort
	if port == 0 {
		port = 22
	}
	addr := net.JoinHostPort(node, strconv.Itoa(port))
	ctx, cancel := context.WithTimeout(ctx, h.timeout())
	defer cancel()
	return sshx.Dial(ctx, login.DialContext, addr, h.config(h.NodeHostKeys, addr, false))
}

func (h *Hop) timeout() time.Duration {
	if h.Timeout == 0 {
		return 20 * time.Second
	}
	return h.Timeout
}

func (h *Hop) config(keys ssh.HostKeyCallback, addr string, login bool) *ssh.ClientConfig {
	if h.Gateway {
		return &ssh.ClientConfig{
			User:              GatewayUser,
			Auth:              []ssh.AuthMethod{ssh.PasswordCallback(h.Token)},
			HostKeyCallback:   keys,
			HostKeyAlgorithms: sshx.HostKeyAlgorithms(keys, addr),
			Timeout:           h.timeout(),
		}
	}
	auth := h.Auth
	if h.GSSAPI != nil {
		host, _, _ := net.SplitHostPort(addr)
		auth = append([]ssh.AuthMethod{h.GSSAPI(host, login)}, h.Auth...)
	}
	return &ssh.ClientConfig{
		User:              h.User,
		Auth:              auth,
		HostKeyCallback:   keys,
		HostKeyAlgorithms: sshx.HostKeyAlgorithms(keys, addr),
		Timeout:           h.timeout(),
	}
}

// CheckNode accepts a compute node name as Slurm reports it and the node
// ConfigMap carries it: a host name or an IP literal (hostname.CheckHost),
// nothing else. It is the only check between that name and an SSH request.
func CheckNode(node string) error {
	if err := hostname.CheckHost(node); err != nil {
		return fmt.Errorf("tunnel: node: %w", err)
	}
	return nil
}

// ReadNode reads the compute node from file, the `node` key of the
// `<shadow>-node` ConfigMap mounted as a directory. An empty file means the
// job has no node yet: it returns "" and no error.
func ReadNode(file string) (string, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("tunnel: read node: %w", err)
	}
	node := strings.TrimSpace(string(data))
	if node == "" {
		return "", nil
	}
	if err := CheckNode(node); err != nil {
		return "", err
	}
	return node, nil
}
