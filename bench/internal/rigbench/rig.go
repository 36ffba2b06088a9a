//go:build bench

// Package rigbench is what the benchmarks need of the local rig
// (hack/rig): its rig.env, its network namespaces, commands run there as
// the site user, and the binaries they run.
package rigbench

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"slices"
	"strconv"

	"github.com/sluice-hpc/sluice/internal/rigenv"
)

// Network namespaces of the rig, for nsenter --net.
const (
	NodeNetns  = "/run/netns/sluice-node"
	LoginNetns = "/run/netns/sluice-login"
)

// Rig is the rig, as its rig.env describes it.
type Rig struct {
	LoginAddr      string // host:port of the login node's sshd
	LoginHost      string // the login node's address on the cluster's side
	LoginPort      string
	Node           string // the compute node's name
	User           string // the site user, who runs the jobs
	UID            int
	Key            string // the site user's private key
	KnownHosts     string // pins the login node
	NodeKnownHosts string // pins the compute node

	// Set when rig.env has them, and required only when Load is told so.
	NodeAddr   string // RIG_NODE_ADDR: the compute node's address
	Redis      string // RIG_REDIS_ADDR: host:port of the cluster's Redis
	SocketRoot string // RIG_SOCKET_DIR_ROOT
}

// required are the rig.env keys every benchmark needs.
var required = []string{"RIG_LOGIN_ADDR", "RIG_NODE_NAME", "RIG_USER", "RIG_USER_UID", "RIG_KEY",
	"RIG_KNOWN_HOSTS", "RIG_NODE_KNOWN_HOSTS"}

// Load reads rig.env; the keys of need must be set too. RIG_LOGIN_PORT
// defaults to 22.
func Load(need ...string) (*Rig, error) {
	vars, err := rigenv.Read(rigenv.File())
	if err != nil {
		return nil, fmt.Errorf("%w (is the rig up? bash hack/rig/rig.sh up)", err)
	}
	for _, k := range slices.Concat(required, need) {
		if vars[k] == "" {
			return nil, fmt.Errorf("rig env: %s is not set", k)
		}
	}
	uid, err := strconv.Atoi(vars["RIG_USER_UID"])
	if err != nil {
		return nil, fmt.Errorf("rig env: RIG_USER_UID: %w", err)
	}
	port := vars["RIG_LOGIN_PORT"]
	if port == "" {
		port = "22"
	}
	return &Rig{
		LoginAddr:      net.JoinHostPort(vars["RIG_LOGIN_ADDR"], port),
		LoginHost:      vars["RIG_LOGIN_ADDR"],
		LoginPort:      port,
		Node:           vars["RIG_NODE_NAME"],
		User:           vars["RIG_USER"],
		UID:            uid,
		Key:            vars["RIG_KEY"],
		KnownHosts:     vars["RIG_KNOWN_HOSTS"],
		NodeKnownHosts: vars["RIG_NODE_KNOWN_HOSTS"],
		NodeAddr:       vars["RIG_NODE_ADDR"],
		Redis:          vars["RIG_REDIS_ADDR"],
		SocketRoot:     vars["RIG_SOCKET_DIR_ROOT"],
	}, nil
}

// AsUser returns the command that runs argv as the site user in the
// network namespace netns. nsenter and setpriv both exec, so the process
// started is argv's own.
func (r *Rig) AsUser(ctx context.Context, netns string, argv ...string) *exec.Cmd {
	id := strconv.Itoa(r.UID)
	args := append([]string{"--net=" + netns, "setpriv", "--reuid=" + id, "--regid=" + id, "--init-groups", "--"}, argv...)
	cmd := exec.CommandContext(ctx, "nsenter", args...)
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/tmp", "USER=" + r.User}
	return cmd
}

// InNetns returns the command that runs argv as root in the network
// namespace netns.
func InNetns(ctx context.Context, netns string, argv ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "nsenter", append([]string{"--net=" + netns, "--"}, argv...)...)
}
