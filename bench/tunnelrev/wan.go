//go:build bench

package main

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"time"

	"github.com/sluice-hpc/sluice/bench/internal/rigbench"
	"github.com/sluice-hpc/sluice/bench/internal/wan"
)

// login is how a tunnel reaches the login node: its sshd's address, and
// the known_hosts file that pins the login node's key there.
type login struct {
	addr, knownHosts string
}

// loginAcross returns the way to the login node across rtt: the rig's own
// for 0, else a delaying relay on the host's loopback in front of the
// login node's sshd, named name.
func (e *env) loginAcross(ctx context.Context, name string, rtt time.Duration) (login, error) {
	if rtt == 0 {
		return login{addr: e.rig.LoginAddr, knownHosts: e.rig.KnownHosts}, nil
	}
	addr, err := e.startWAN(ctx, name, "", e.rig.LoginAddr, rtt)
	if err != nil {
		return login{}, err
	}
	_, port, _ := net.SplitHostPort(addr)
	kh, err := e.rig.LoginKnownHostsAt(e.work, "known_hosts-"+port, addr)
	if err != nil {
		return login{}, err
	}
	return login{addr: addr, knownHosts: kh}, nil
}

// startWAN starts this program's delaying relay (wan.Main), named name, in
// the network namespace netns ("" for the host's), listening on its
// loopback and passing each connection to target with half of rtt added
// each way, and returns the address it listens on.
func (e *env) startWAN(ctx context.Context, name, netns, target string, rtt time.Duration) (string, error) {
	argv := append([]string{e.self, wan.Command}, wan.Args("127.0.0.1:0", target, wan.Link{Delay: rtt / 2})...)
	cmd := rigbench.InNetns(ctx, netns, argv...)
	if netns == "" {
		cmd = exec.CommandContext(ctx, argv[0], argv[1:]...)
	}
	addr, err := e.startServer(name, cmd)
	if err != nil {
		return "", fmt.Errorf("delaying relay: %w", err)
	}
	return addr, nil
}

// chainsAt returns the chains across rtt.
func chainsAt(chains []*chain, rtt time.Duration) []*chain {
	var at []*chain
	for _, c := range chains {
		if c.rtt == rtt {
			at = append(at, c)
		}
	}
	return at
}

// of returns the results of chains, all across one round trip, keyed by
// the chains' names rather than their ids: what report reads.
func (r *results) of(chains []*chain) *results {
	out := newResults()
	for _, c := range chains {
		id, name := c.id(), c.name
		for fig, byChain := range r.values {
			for _, v := range byChain[id] {
				out.add(fig, name, v)
			}
		}
		if s, ok := r.setups[id]; ok {
			out.setups[name] = s
		}
		copyKey(out.idle, r.idle, name, id)
		copyKey(out.peak, r.peak, name, id)
		copyKey(out.cpu, r.cpu, name, id)
		copyKey(out.moved, r.moved, name, id)
		copyKey(out.siteIdle, r.siteIdle, name, id)
		copyKey(out.siteCPU, r.siteCPU, name, id)
		copyKey(out.failed, r.failed, name, id)
		copyKey(out.gaveUp, r.gaveUp, name, id)
	}
	return out
}

// copyKey sets dst[to] to src[from], if src has it.
func copyKey[V any](dst, src map[string]V, to, from string) {
	if v, ok := src[from]; ok {
		dst[to] = v
	}
}
