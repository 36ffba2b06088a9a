//go:build bench

package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/sluice-hpc/sluice/bench/internal/child"
	"github.com/sluice-hpc/sluice/bench/internal/procstat"
	"github.com/sluice-hpc/sluice/bench/internal/rigbench"
)

// sluiceMode is one way `sluice-tunnel reverse` reaches the node: the
// chain's name, the tunnel's flags for it, and what else of the site its
// sessions run.
type sluiceMode struct {
	name string
	args []string
	// job is the Slurm job that carries the sessions (srun), "" for none:
	// the steps it runs for them are counted with the site's processes.
	job string
}

// nodeMode asks the node's own sshd for the forwards.
func nodeMode() sluiceMode { return sluiceMode{name: chainSluice} }

// userspaceMode asks an sshd -i each session starts as the job's user.
func userspaceMode() sluiceMode {
	return sluiceMode{name: chainUserspace, args: []string{"--sshd=userspace"}}
}

// srunMode carries each session by srun inside job, from the login node,
// with a user-space sshd; jobFile holds job's id.
func srunMode(job, jobFile string) sluiceMode {
	return sluiceMode{name: chainSrun, args: []string{"--node-exec=srun", "--job-file=" + jobFile}, job: job}
}

// startSluice starts a sluice chain: the relay as the job starts it (as the
// job's user on the compute node, on addr, with the job's shell, here this
// program, as the parent) and `sluice-tunnel reverse` in mode on the
// cluster side, reaching the login node through lg, and waits until an
// echo goes through. Its parts' logs are named after id.
func (e *env) startSluice(ctx context.Context, id string, mode sluiceMode, addr string, lg login, ports relayPorts) (*chain, error) {
	dir, err := socketDir(e.rig)
	if err != nil {
		return nil, err
	}
	e.dirs = append(e.dirs, dir)
	nodeFile := filepath.Join(e.work, "node")
	if err := os.WriteFile(nodeFile, []byte(e.rig.Node+"\n"), 0o644); err != nil {
		return nil, fmt.Errorf("node file: %w", err)
	}
	relayLog, tunLog := id+"-relay", id+"-tunnel"
	relay, err := e.run(relayLog, e.rig.AsUser(ctx, rigbench.NodeNetns, e.relay, "--addr", addr, "--dir", dir,
		"--ports", fmt.Sprintf("%d,%d", ports.echo, ports.redis), "--parent-pid", strconv.Itoa(os.Getpid())))
	if err != nil {
		return nil, err
	}
	args := append([]string{"reverse",
		"--login=" + lg.addr, "--user=" + e.rig.User, "--key=" + e.rig.Key,
		"--login-known-hosts=" + lg.knownHosts, "--node-known-hosts=" + e.rig.NodeKnownHosts,
		"--node-file=" + nodeFile, "--socket-dir=" + dir,
		fmt.Sprintf("--forward=%d=%s", ports.echo, e.hostEcho),
		fmt.Sprintf("--forward=%d=%s", ports.redis, e.rig.Redis)}, mode.args...)
	tun, err := e.run(tunLog, exec.CommandContext(ctx, e.tun, args...))
	if err != nil {
		return nil, err
	}
	c := &chain{name: mode.name, parts: []*child.Process{relay, tun},
		echo: net.JoinHostPort(addr, strconv.Itoa(ports.echo)), redis: net.JoinHostPort(addr, strconv.Itoa(ports.redis))}
	c.site = func() []int { return siteProcesses(c, dir, mode.job) }
	want := []string{filepath.Join(dir, "rev-relay.ready"), sockPath(dir, ports.echo), sockPath(dir, ports.redis)}
	if err := e.waitUp(ctx, c, want); err != nil {
		return nil, fmt.Errorf("%s chain: %w\nrelay: %s\ntunnel: %s", mode.name, err, e.logTail(relayLog), e.logTail(tunLog))
	}
	return c, nil
}

// siteProcesses returns the processes that carry a sluice chain's
// sessions on the site beyond the login node's sshd, which every chain
// has: over ssh, the node sshd's process for the session's connection
// (the parent of the processes whose command line names the socket
// directory: the holder, and of a user-space sshd, which names itself
// "sshd: USER" once started); over srun, the srun processes on the login
// node (their command lines name the directory) and the step daemons of
// job, which run the holder and the user-space sshd, but not those of its
// batch script or extern step (the job's own, with or without the
// tunnel). The relay, a part, is left out. Their descendants are counted
// with them.
func siteProcesses(c *chain, dir, job string) []int {
	own := map[int]bool{}
	for _, pid := range procstat.Descendants(c.roots()...) {
		own[pid] = true
	}
	subs := []string{dir}
	if job != "" {
		subs = append(subs, "slurmstepd: ["+job+".")
	}
	var pids []int
	for _, pid := range procstat.Matching(func(line string) bool {
		return !strings.HasSuffix(line, ".batch]") && !strings.HasSuffix(line, ".extern]")
	}, subs...) {
		if own[pid] {
			continue
		}
		if job == "" {
			if st, err := procstat.ReadStat(pid); err == nil {
				pid = st.PPID
			}
		}
		if !slices.Contains(pids, pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}
