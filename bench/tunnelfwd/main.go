//go:build bench

// Command tunnelfwd is the forward-tunnel benchmark of sluice (issue 4;
// SPEC S4, S10). A client on the host (the cluster) reaches a job server
// listening on the rig's compute node's 127.0.0.1, side by side and
// interleaved, through:
//
//   - sluice-tunnel forward (the real binary, built from ./cmd/sluice-tunnel,
//     --target node): host → login sshd → node sshd → node's loopback;
//   - OpenSSH, `ssh -J user@login user@node -L ...`, the same chain by hand;
//   - directly, the client in the node's network namespace.
//
// With -rtt, every path is measured again across each round trip given,
// added by a delaying relay (bench/internal/wan, run as `tunnelfwd wan`)
// between the cluster and the login node's sshd, or, for direct, between
// the client and the job server on the node; a table per round trip.
//
// It measures throughput with one and many streams each way, connection
// set-up time (connect and one byte there and back), requests per second
// of 64-byte requests over kept and over new connections, the tunnels' CPU
// per GB and their memory, and prints a Markdown table with the ratios.
//
//	go build -tags bench -o /tmp/tunnelfwd ./bench/tunnelfwd
//	/tmp/tunnelfwd [-rounds 5] [-duration 2s] [-paths sluice,openssh,direct] [-rtt 0,10ms,50ms] [-cpuprofile FILE]
//
// Run it as root from the repository's root, with the rig up. It runs
// itself as the job server (`tunnelfwd serve`, on the node as the site
// user) and as the load client (`tunnelfwd load`), and stops every process
// it starts.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/sluice-hpc/sluice/bench/internal/wan"
)

type options struct {
	rounds     int
	duration   time.Duration
	warmup     time.Duration
	samples    int
	streams    int
	paths      []string
	rtts       []time.Duration
	tunnelBin  string
	cpuProfile string
	keep       bool
}

func main() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "serve":
			os.Exit(serveMain(os.Args[2:]))
		case "load":
			os.Exit(loadMain(os.Args[2:]))
		case wan.Command:
			os.Exit(wan.Main(os.Args[2:]))
		}
	}
	var o options
	var paths, rtts string
	flag.IntVar(&o.rounds, "rounds", 5, "rounds; each runs every test on every path, in an order rotated each round")
	flag.DurationVar(&o.duration, "duration", 2*time.Second, "measured window of each throughput and requests test")
	flag.DurationVar(&o.warmup, "warmup", 300*time.Millisecond, "time before each measured window")
	flag.IntVar(&o.samples, "samples", 100, "set-up samples per path per round")
	flag.IntVar(&o.streams, "streams", 16, "parallel streams of the many-stream tests")
	flag.StringVar(&paths, "paths", "sluice,openssh,direct", "paths to compare: sluice, openssh, openssh-gcm, direct")
	flag.StringVar(&rtts, "rtt", "0", "round trips to add between the cluster and the login node, separated by commas (e.g. 0,10ms,50ms): every path is measured across each")
	flag.StringVar(&o.tunnelBin, "tunnel-bin", "", "sluice-tunnel binary; if empty, built from ./cmd/sluice-tunnel")
	flag.StringVar(&o.cpuProfile, "cpuprofile", "", "after the rounds, profile an in-process tunnel.Forward (the library sluice-tunnel runs) under load into `FILE`")
	flag.BoolVar(&o.keep, "keep", false, "keep the work directory (logs, configs)")
	flag.Parse()
	known := []string{pathSluice, pathOpenSSH, pathOpenSSHGCM, pathDirect}
	for _, p := range strings.Split(paths, ",") {
		if !slices.Contains(known, p) || slices.Contains(o.paths, p) {
			fmt.Fprintf(os.Stderr, "tunnelfwd: -paths: %q: want distinct names of %s\n", p, strings.Join(known, ", "))
			os.Exit(2)
		}
		o.paths = append(o.paths, p)
	}
	var err error
	if o.rtts, err = wan.ParseRTTs(rtts); err != nil {
		fmt.Fprintln(os.Stderr, "tunnelfwd: -rtt:", err)
		os.Exit(2)
	}
	if o.rounds < 1 || o.samples < 1 || o.streams < 1 || o.duration <= 0 {
		fmt.Fprintln(os.Stderr, "tunnelfwd: -rounds, -samples, -streams and -duration must be positive")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err = run(ctx, o)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "tunnelfwd:", err)
		os.Exit(1)
	}
}
