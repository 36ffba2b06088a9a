//go:build bench

// Command storm measures a reconnection storm (issue 15, item 4): n
// sluice-tunnel forward processes hold connections to the rig's login sshd,
// restarted with a strict MaxStartups; the login node then "restarts" (a
// relay in front of it drops every connection and refuses new ones for a
// while; it adds a WAN's round trip time to every connection) and the
// benchmark counts the connections the sshd dropped past
// MaxStartups, the connections the tunnels saw fail, and the time until
// every tunnel is connected again: with reconnections at once (before) and
// jittered over a window that grows with the number of tunnels (after).
//
// The login sshd is one of the benchmark's own in the login node's
// namespace, with the rig's login configuration on another port (sshd.go
// says why); the rig's own daemons are left alone. Run as root from the
// module's root, holding the rig's lock, with bench/storm.sh.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/sluice-hpc/sluice/bench/internal/rigbench"
	"github.com/sluice-hpc/sluice/internal/rigenv"
)

type options struct {
	tunnels     int
	rounds      int
	down        time.Duration
	rtt         time.Duration
	spread      time.Duration
	windowMax   time.Duration
	maxStartups string
	variants    []string
	timeout     time.Duration
	port        int
	keep        bool
}

func main() {
	var o options
	var variants string
	flag.IntVar(&o.tunnels, "tunnels", 50, "tunnel processes")
	flag.IntVar(&o.rounds, "rounds", 2, "storms per variant, interleaved")
	flag.DurationVar(&o.down, "down", 3*time.Second, "how long the login node refuses connections after dropping them")
	flag.DurationVar(&o.rtt, "rtt", 50*time.Millisecond, "round trip time the relay adds between the tunnels and the login node (a site across a WAN)")
	flag.DurationVar(&o.spread, "spread", 200*time.Millisecond, "after: --reconnect-spread of each tunnel")
	flag.DurationVar(&o.windowMax, "window-max", 30*time.Second, "after: --reconnect-window-max of each tunnel")
	flag.StringVar(&o.maxStartups, "maxstartups", "3:50:10", "the login sshd's MaxStartups during the benchmark")
	flag.StringVar(&variants, "variants", "before,after", "variants to run: before (no jitter), after (jittered)")
	flag.DurationVar(&o.timeout, "timeout", 5*time.Minute, "longest wait for every tunnel to be back")
	flag.IntVar(&o.port, "port", 2222, "port of the benchmark's sshd on the login node's address")
	flag.BoolVar(&o.keep, "keep", false, "keep the work directory (tunnel logs)")
	flag.Parse()
	o.variants = strings.Split(variants, ",")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "storm:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) (err error) {
	for _, v := range o.variants {
		if v != "before" && v != "after" {
			return fmt.Errorf("-variants: %q: want before or after", v)
		}
	}
	r, err := rigbench.Load()
	if err != nil {
		return err
	}
	vars, err := rigenv.Read(rigenv.File())
	if err != nil {
		return err
	}
	dir, err := rigbench.WorkDir("storm")
	if err != nil {
		return err
	}
	defer func() { rigbench.EndWorkDir(dir, o.keep || err != nil, "tunnel logs") }()
	bin, err := rigbench.Build(ctx, dir, "./cmd/sluice-tunnel", "")
	if err != nil {
		return err
	}
	sshd, err := startSshd(ctx, dir, filepath.Join(vars["RIG_DIR"], "etc", "sshd_login.conf"), r.LoginHost, o.port, o.maxStartups)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, sshd.stop()) }()
	rl, err := newRelay(sshd.addr, o.rtt)
	if err != nil {
		return err
	}
	defer rl.close()
	knownHosts, err := r.LoginKnownHostsAt(dir, "known_hosts", rl.addr())
	if err != nil {
		return err
	}
	nodeFile := filepath.Join(dir, "node")
	tunnelsFile := filepath.Join(dir, "tunnels")
	if err := os.WriteFile(nodeFile, []byte(r.Node+"\n"), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(tunnelsFile, fmt.Appendf(nil, "%d\n", o.tunnels), 0o644); err != nil {
		return err
	}

	base := tunnelArgs{bin: bin, login: rl.addr(), user: r.User, key: r.Key, knownHosts: knownHosts, nodeFile: nodeFile}
	var results []result
	for round := 1; round <= o.rounds; round++ {
		for _, v := range o.variants {
			a := base
			if v == "after" {
				a.extra = []string{"--reconnect-spread=" + o.spread.String(), "--reconnect-window-max=" + o.windowMax.String(), "--tunnels-file=" + tunnelsFile}
			}
			res, err := storm(ctx, o, filepath.Join(dir, fmt.Sprintf("%s-%d", v, round)), a, rl, sshd)
			if err != nil {
				return fmt.Errorf("%s round %d: %w", v, round, err)
			}
			res.variant, res.round = v, round
			fmt.Fprintf(os.Stderr, "%s round %d: %+v\n", v, round, res)
			results = append(results, res)
		}
	}
	report(os.Stdout, o, results)
	return nil
}

// result is one storm.
type result struct {
	variant string
	round   int
	// dropped: connections the sshd dropped past MaxStartups; failed:
	// failed connections the tunnels logged, and those of them after the
	// login node was back.
	dropped, failed, failedAfterDown int
	// allUp: from the drop until the last tunnel was connected again.
	allUp time.Duration
}

// storm starts the tunnels, waits for them, makes the login node restart
// and measures the way back.
func storm(ctx context.Context, o options, dir string, a tunnelArgs, rl *relay, sshd *benchSshd) (result, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return result{}, err
	}
	start := time.Now()
	// Started 100 ms apart, so that the first connections do not storm.
	f, err := startFleet(ctx, dir, o.tunnels, a, 100*time.Millisecond)
	if err != nil {
		return result{}, err
	}
	defer f.stop()
	wctx, cancel := context.WithTimeout(ctx, o.timeout)
	_, err = f.waitAllSince(wctx, start)
	cancel()
	if err != nil {
		return result{}, fmt.Errorf("first connections: %w", err)
	}
	select {
	case <-time.After(time.Second):
	case <-ctx.Done():
		return result{}, ctx.Err()
	}
	from, err := sshd.offset()
	if err != nil {
		return result{}, err
	}
	t0 := time.Now()
	rl.cut(o.down)
	wctx, cancel = context.WithTimeout(ctx, o.timeout)
	last, err := f.waitAllSince(wctx, t0)
	cancel()
	if err != nil {
		return result{}, err
	}
	dropped, err := sshd.dropped(from)
	if err != nil {
		return result{}, err
	}
	return result{
		dropped:         dropped,
		failed:          f.failuresSince(t0),
		failedAfterDown: f.failuresSince(t0.Add(o.down)),
		allUp:           last.Sub(t0),
	}, nil
}
