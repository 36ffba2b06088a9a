//go:build bench

package main

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/sluice-hpc/sluice/bench/internal/wan"
)

// chainChoice is a chain -chains chooses: the flag's word for it, its name
// in the report, and the last byte of its relay's address (0 for none).
type chainChoice struct {
	flag, name string
	host       byte
}

// chainChoices are the chains, in the order they are started and reported.
var chainChoices = []chainChoice{
	{"sluice", chainSluice, 1},
	{"sluice-userspace", chainUserspace, 3},
	{"sluice-srun", chainSrun, 4},
	{"openssh", chainOpenSSH, 2},
	{"openssh-gcm", chainOpenSSHGCM, 5},
	{"direct", chainDirect, 0},
}

// defaultChains is -chains's default: every chain.
const defaultChains = "sluice,sluice-userspace,sluice-srun,openssh,direct"

// parseChains reads -chains, flag words separated by commas, and returns
// the chains' names in the order of chainChoices.
func parseChains(s string) ([]string, error) {
	words := strings.Split(s, ",")
	var names []string
	for _, c := range chainChoices {
		if slices.Contains(words, c.flag) {
			names = append(names, c.name)
		}
	}
	for _, w := range words {
		if !slices.ContainsFunc(chainChoices, func(c chainChoice) bool { return c.flag == w }) {
			return nil, fmt.Errorf("-chains: unknown chain %q (want some of %s)", w, defaultChains)
		}
	}
	return names, nil
}

// startChain starts the chain named name across rtt, the i-th round trip
// of the run, its relay on base with the last byte of its choice (plus 10
// for each round trip before: each chain listens on the same ports).
func (e *env) startChain(ctx context.Context, name string, rtt time.Duration, i int, base net.IP, ports relayPorts, o options) (*chain, error) {
	if name == chainDirect {
		return e.startDirect(ctx, rtt)
	}
	id := wan.Label(name, rtt)
	choice := chainChoices[slices.IndexFunc(chainChoices, func(c chainChoice) bool { return c.name == name })]
	addr := net.IPv4(base[0], base[1], base[2], choice.host+byte(10*i)).String()
	lg, err := e.loginAcross(ctx, "wan-"+id, rtt)
	if err != nil {
		return nil, err
	}
	var c *chain
	switch name {
	case chainSluice:
		c, err = e.startSluice(ctx, id, nodeMode(), addr, lg, ports)
	case chainUserspace:
		c, err = e.startSluice(ctx, id, userspaceMode(), addr, lg, ports)
	case chainSrun:
		if e.holder == "" {
			if e.holder, e.holderFile, err = e.holderJob(ctx); err != nil {
				return nil, err
			}
		}
		c, err = e.startSluice(ctx, id, srunMode(e.holder, e.holderFile), addr, lg, ports)
	case chainOpenSSHGCM:
		c, err = e.startOpenSSH(ctx, name, id, addr, lg, ports, "aes128-gcm@openssh.com")
	default:
		c, err = e.startOpenSSH(ctx, name, id, addr, lg, ports, o.cipher)
	}
	if err != nil {
		return nil, err
	}
	c.rtt = rtt
	return c, nil
}
