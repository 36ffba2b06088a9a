//go:build bench

// Command tunnelrev is the benchmark of the reverse tunnel (issues 5 and 6,
// SPEC S5 and S10). On the rig, a client run as the job's user on the
// compute node reaches servers on the cluster side through up to six
// chains (-chains), measured side by side in one run, their order turning
// each round:
//
//   - sluice: the job's sluice-relay (the real binary, started as the
//     job's pre-exec snippet starts it) → rev-<port>.sock of the node
//     sshd's remote forward → node sshd → login sshd → `sluice-tunnel
//     reverse` (the real binary) → the server;
//   - sluice-userspace: the same with --sshd=userspace: the forward is an
//     sshd -i's that each session starts as the job's user through the
//     node's sshd;
//   - sluice-srun: the same with --node-exec=srun: the session's commands
//     and its user-space sshd run by srun --jobid --overlap from the login
//     node, in a job of the user's that the benchmark submits to hold an
//     allocation on the node (and cancels at the end);
//   - OpenSSH + socat: `ssh -J login node -N -R sock:host:port` and socat
//     as the relay, what a user would build by hand (openssh-gcm: the same
//     with aes128-gcm, sluice's cipher);
//   - direct: copies of the servers on the login node's address on the
//     compute node's link, the only place outside itself the compute node
//     reaches.
//
// With -rtt, every chain is measured again across each round trip given,
// added by a delaying relay (bench/internal/wan, run as `tunnelrev wan`)
// between the cluster and the login node's sshd, or, for direct, between
// the client and the servers; a table per round trip.
//
// The servers are this program's own (echo, sink, source) and Redis. It
// measures throughput with 1 and 16 streams each way, connection set-up
// (connect and one byte there and back), 64-byte request/response pairs,
// redis-benchmark -q -t ping,set,get, and the memory and CPU of each
// chain's parts, and writes a Markdown table with the ratios (to OpenSSH,
// to direct, and of the user-space and srun modes to the node mode) on
// standard output. Run it as root from the module's root (it builds the relay and
// the tunnel):
//
//	go build -tags bench -o /tmp/tunnelrev ./bench/tunnelrev && /tmp/tunnelrev [-rounds 5] [-duration 2s] [-chains sluice,openssh,direct] [-rtt 0,10ms,50ms]
//
// The subcommands "serve" and "client" are the benchmark's own server and
// client, run by it in the namespaces.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/sluice-hpc/sluice/bench/internal/rigbench"
	"github.com/sluice-hpc/sluice/bench/internal/wan"
)

func main() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "serve":
			os.Exit(serveMain(os.Args[2:]))
		case "client":
			os.Exit(clientMain(os.Args[2:]))
		case wan.Command:
			os.Exit(wan.Main(os.Args[2:]))
		}
	}
	var o options
	flag.IntVar(&o.rounds, "rounds", 4, "rounds of every test through every chain")
	flag.DurationVar(&o.duration, "duration", 2*time.Second, "length of each throughput and request/response test")
	flag.IntVar(&o.setups, "setups", 200, "connection set-ups timed per chain and round")
	flag.IntVar(&o.redisN, "redis-n", 20000, "requests per redis-benchmark test (-n)")
	rtts := flag.String("rtt", "0", "round trips to add between the cluster and the login node, separated by commas (e.g. 0,10ms,50ms): every chain is measured across each")
	flag.StringVar(&o.cipher, "ssh-cipher", "", "Ciphers for the OpenSSH client (default: OpenSSH's own choice)")
	flag.StringVar(&o.profile, "cpuprofile", "", "directory to write CPU profiles of every chain's parts to (perf record -g; read them with perf report -i)")
	chains := flag.String("chains", defaultChains, "the chains to measure, separated by commas")
	keep := flag.Bool("keep", false, "keep the work directory (binaries, logs), as after a failure")
	flag.Parse()
	var err error
	if o.chains, err = parseChains(*chains); err != nil {
		fmt.Fprintln(os.Stderr, "tunnelrev:", err)
		os.Exit(2)
	}
	if o.rtts, err = wan.ParseRTTs(*rtts); err != nil {
		fmt.Fprintln(os.Stderr, "tunnelrev: -rtt:", err)
		os.Exit(2)
	}
	if flag.NArg() > 0 || o.rounds < 1 || o.duration <= 0 || o.setups < 1 || o.redisN < 1 || len(o.chains) == 0 {
		fmt.Fprintln(os.Stderr, "tunnelrev: bad arguments; see -h")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o, *keep); err != nil {
		fmt.Fprintln(os.Stderr, "tunnelrev:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options, keep bool) (err error) {
	r, err := loadRig()
	if err != nil {
		return err
	}
	work, err := rigbench.WorkDir("sluice-tunnelrev-")
	if err != nil {
		return err
	}
	defer func() {
		rigbench.EndWorkDir(work, keep || err != nil, "tunnelrev: work directory (binaries, logs) kept")
	}()
	e := &env{rig: r, work: work}
	defer e.cleanup()
	if e.relay, e.tun, e.self, err = build(ctx, work); err != nil {
		return err
	}
	if e.hostEcho, err = e.startServer("host-server", exec.CommandContext(ctx, e.self, "serve", "-listen", "127.0.0.1:0")); err != nil {
		return err
	}
	// Addresses for the relays in 127.0.0.0/8 of the compute node, and
	// ports, picked at random so as not to meet other tests' relays.
	base := net.IPv4(127, 77, byte(time.Now().UnixNano()%200+1), 0).To4()
	ports := pickPorts()
	var chains []*chain
	for i, rtt := range o.rtts {
		for _, name := range o.chains {
			c, err := e.startChain(ctx, name, rtt, i, base, ports, o)
			if err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "tunnelrev: chain up: %s %s (redis %s)\n", c.id(), c.echo, c.redis)
			chains = append(chains, c)
		}
	}
	if o.profile != "" {
		stopProfiles, err := e.profile(ctx, o.profile, chains)
		if err != nil {
			return err
		}
		defer stopProfiles()
	}
	res, err := measure(ctx, e, chains, o)
	if err != nil {
		return err
	}
	for _, rtt := range o.rtts {
		if len(o.rtts) > 1 || rtt > 0 {
			fmt.Printf("Round trip added: %v (between the cluster and the login node; for direct, between the client and the servers)\n\n", rtt)
		}
		at := chainsAt(chains, rtt)
		report(os.Stdout, res.of(at), o, at)
		fmt.Println()
	}
	for _, c := range chains {
		for _, p := range c.parts {
			if !p.Running() {
				fmt.Printf("\nNOTE: %s (%s) ended during the run: %v; see its log\n", p.Name, c.id(), p.Err())
			}
		}
	}
	return nil
}
