//go:build bench

package main

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
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

// startChain starts the chain named name, its relay on base with the last
// byte of its choice.
func (e *env) startChain(ctx context.Context, name string, base net.IP, ports relayPorts, o options) (*chain, error) {
	i := slices.IndexFunc(chainChoices, func(c chainChoice) bool { return c.name == name })
	addr := net.IPv4(base[0], base[1], base[2], chainChoices[i].host).String()
	switch name {
	case chainSluice:
		return e.startSluice(ctx, nodeMode(), addr, ports)
	case chainUserspace:
		return e.startSluice(ctx, userspaceMode(), addr, ports)
	case chainSrun:
		job, jobFile, err := e.holderJob(ctx)
		if err != nil {
			return nil, err
		}
		return e.startSluice(ctx, srunMode(job, jobFile), addr, ports)
	case chainOpenSSH:
		return e.startOpenSSH(ctx, addr, ports, o.cipher)
	default:
		var err error
		if e.directHost, err = e.findDirectHost(ctx); err != nil {
			return nil, err
		}
		return e.startDirect(ctx)
	}
}
