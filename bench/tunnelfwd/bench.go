//go:build bench

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/sluice-hpc/sluice/bench/internal/procstat"
	"github.com/sluice-hpc/sluice/bench/internal/rigbench"
	"github.com/sluice-hpc/sluice/bench/internal/wan"
)

// test is one measurement, run on every path each round.
type test struct {
	key  string // names it in the records
	spec loadSpec
}

// sample is one run of a test on a path.
type sample struct {
	res *loadResult
	cpu time.Duration // CPU time of the tunnel's processes during the run
}

// bench is a run of the benchmark.
type bench struct {
	o       options
	rig     *rigbench.Rig
	bin     string // sluice-tunnel
	port    int    // the job server's, on the node's loopback
	self    string // the executable, readable by the site user
	dir     string
	paths   []*path
	records map[string]map[string][]sample // test key → path name → one per round
	memIdle map[string]procstat.Memory
	memLoad map[string]procstat.Memory
	procs   map[string]string   // path name → its processes, for the notes
	retries map[string][]string // path name → why measurements were made again
	load    [2]string           // the machine's load averages before and after the rounds
}

func run(ctx context.Context, o options) (err error) {
	r, err := rigbench.Load()
	if err != nil {
		return err
	}
	dir, err := rigbench.WorkDir("tunnelfwd-")
	if err != nil {
		return err
	}
	defer func() {
		// The logs stay when something went wrong.
		rigbench.EndWorkDir(dir, o.keep || err != nil, "tunnelfwd: work directory (logs, configs) kept")
	}()
	b := &bench{o: o, rig: r, dir: dir, records: map[string]map[string][]sample{},
		memIdle: map[string]procstat.Memory{}, memLoad: map[string]procstat.Memory{}, procs: map[string]string{}, retries: map[string][]string{}}
	if b.self, err = rigbench.CopySelf(dir, "tunnelfwd"); err != nil {
		return err
	}
	b.bin = o.tunnelBin
	if b.bin == "" {
		fmt.Fprintln(os.Stderr, "tunnelfwd: building sluice-tunnel")
		if b.bin, err = rigbench.Build(ctx, dir, "./cmd/sluice-tunnel", "-s -w -X main.version=bench"); err != nil {
			return err
		}
	}

	if b.port, err = freePort(); err != nil {
		return err
	}
	server, err := startServer(ctx, r, b.self, dir, b.port)
	if err != nil {
		return err
	}
	defer server.stop()
	defer func() {
		for _, p := range b.paths {
			p.stop()
		}
	}()
	for _, rtt := range o.rtts {
		for _, name := range o.paths {
			p, err := b.startPath(ctx, name, rtt)
			if err != nil {
				return err
			}
			b.paths = append(b.paths, p)
		}
	}
	for _, p := range b.paths {
		if p.proc == nil {
			continue
		}
		if err := waitReady(p, 30*time.Second); err != nil {
			return err
		}
		if b.memIdle[p.id()], err = memoryOf(p.pids()); err != nil {
			return err
		}
	}
	fmt.Fprintf(os.Stderr, "tunnelfwd: job server on the node's 127.0.0.1:%d; %d rounds; round trips added %s\n", b.port, o.rounds, wan.FormatRTTs(o.rtts))

	start := time.Now()
	b.load[0] = loadAvg()
	if err := b.rounds(ctx); err != nil {
		if len(b.records) > 0 {
			fmt.Fprintln(os.Stderr, "tunnelfwd: the rounds did not finish; figures of the samples taken:")
			b.report(os.Stderr)
		}
		return err
	}
	for _, p := range b.paths {
		if p.proc == nil {
			continue
		}
		if b.memLoad[p.id()], err = memoryOf(p.pids()); err != nil {
			return err
		}
		b.procs[p.id()] = describe(p.pids())
	}
	b.load[1] = loadAvg()
	fmt.Fprintf(os.Stderr, "tunnelfwd: rounds took %v\n", time.Since(start).Round(time.Second))
	b.report(os.Stdout)

	if o.cpuProfile != "" {
		return profileForward(ctx, b, r, b.port)
	}
	return nil
}

// startPath starts the path name with rtt added between the cluster and
// the login node (a delaying relay in front of the login node's sshd), or,
// for direct, between the client and the job server (a delaying relay on
// the node's loopback).
func (b *bench) startPath(ctx context.Context, name string, rtt time.Duration) (*path, error) {
	lg := login{addr: b.rig.LoginAddr, knownHosts: b.rig.KnownHosts}
	var relay *proc
	stopRelay := func() {
		if relay != nil {
			relay.stop()
		}
	}
	if rtt > 0 && name != pathDirect {
		var addr string
		var err error
		if relay, addr, err = startWAN(ctx, "wan-"+wan.Label(name, rtt), b.self, b.dir, "", b.rig.LoginAddr, rtt); err != nil {
			return nil, err
		}
		_, port, _ := net.SplitHostPort(addr)
		if lg.knownHosts, err = b.rig.LoginKnownHostsAt(b.dir, "known_hosts-"+port, addr); err != nil {
			stopRelay()
			return nil, err
		}
		lg.addr = addr
	}
	var p *path
	var err error
	switch name {
	case pathSluice:
		p, err = startSluice(b.rig, b.bin, b.dir, lg, b.listenAddr(rtt), b.port)
	case pathDirect:
		p = direct(b.port)
		if rtt > 0 {
			relay, p.addr, err = startWAN(ctx, "wan-"+wan.Label(name, rtt), b.self, b.dir, rigbench.NodeNetns, p.addr, rtt)
		}
	default:
		var local int
		if local, err = freePort(); err != nil {
			break
		}
		ciphers := ""
		if name == pathOpenSSHGCM {
			ciphers = "aes128-gcm@openssh.com"
		}
		p, err = startOpenSSH(b.rig, name, b.dir, lg, local, b.port, ciphers)
	}
	if err != nil {
		stopRelay()
		return nil, err
	}
	p.rtt, p.wan = rtt, relay
	return p, nil
}

// listenAddr is the host's loopback address sluice-tunnel listens on for
// the paths with rtt: each its own, as each listens on the job's port.
func (b *bench) listenAddr(rtt time.Duration) string {
	return fmt.Sprintf("127.0.%d.1", slices.Index(b.o.rtts, rtt))
}

// tests returns the measurements of a round, in order.
func (b *bench) tests() []test {
	o := b.o
	s := func(t string, streams int) loadSpec {
		return loadSpec{Test: t, Streams: streams, Warmup: o.warmup, Duration: o.duration, Samples: o.samples}
	}
	n := strconv.Itoa(o.streams)
	return []test{
		{"down1", s(testDown, 1)},
		{"down" + n, s(testDown, o.streams)},
		{"up1", s(testUp, 1)},
		{"up" + n, s(testUp, o.streams)},
		{"setup", s(testSetup, 1)},
		{"ping1", s(testPing, 1)},
		{"ping" + n, s(testPing, o.streams)},
		{"newconn" + n, s(testNewConn, o.streams)},
	}
}

// rounds runs every test on every path, each round in another order of
// the paths, so that the load of other work on the machine falls on all
// of them alike.
func (b *bench) rounds(ctx context.Context) error {
	for round := range b.o.rounds {
		for _, t := range b.tests() {
			for i := range b.paths {
				p := b.paths[(i+round)%len(b.paths)]
				sm, err := b.measureAgain(ctx, p, t.spec)
				if err != nil {
					return fmt.Errorf("round %d, %s on %s: %w", round+1, t.key, p.id(), err)
				}
				if b.records[t.key] == nil {
					b.records[t.key] = map[string][]sample{}
				}
				b.records[t.key][p.id()] = append(b.records[t.key][p.id()], sm)
				fmt.Fprintf(os.Stderr, "round %d %-10s %-18s %s\n", round+1, t.key, p.id(), sm.summary(t.spec.Test))
			}
		}
	}
	return nil
}

// warmupRTTs is how many round trips are added to the warm-up of a test on
// a path with a round trip added.
const warmupRTTs = 10

// attempts bounds the runs of one test on one path.
const attempts = 3

// measureAgain measures spec on p, again when the run had errors or the
// tunnel exited meanwhile (the rig's sshd restarted by another user of
// the rig, say), after restarting an exited tunnel. Each retry is noted
// for the report.
func (b *bench) measureAgain(ctx context.Context, p *path, spec loadSpec) (sample, error) {
	for try := 1; ; try++ {
		restarted, err := b.revive(ctx, p)
		if err != nil {
			return sample{}, err
		}
		if restarted > 0 {
			b.retries[p.id()] = append(b.retries[p.id()], fmt.Sprintf("%s: the tunnel had exited: restarted (%d attempts)", spec.Test, restarted))
		}
		var why string
		sm, err := b.measure(ctx, p, spec)
		switch {
		case ctx.Err() != nil:
			return sample{}, ctx.Err()
		case err == nil && sm.res.Errors == 0 && (p.proc == nil || !p.proc.exited()):
			return sm, nil
		case try == attempts && err != nil:
			return sample{}, err
		case try == attempts:
			return sm, nil // reported with its errors
		case err != nil:
			why = err.Error()
		case sm.res.Errors > 0:
			why = fmt.Sprintf("%d errors (%s)", sm.res.Errors, sm.res.FirstErr)
		default:
			why = "the tunnel exited"
		}
		fmt.Fprintf(os.Stderr, "tunnelfwd: %s on %s: %s: measuring again\n", spec.Test, p.id(), why)
		b.retries[p.id()] = append(b.retries[p.id()], spec.Test+": "+why+": measured again")
	}
}

// revive waits until p carries a byte there and back, restarting its
// tunnel while it has exited (the rig's sshds may be restarting for a
// while); it returns the restarts it took.
func (b *bench) revive(ctx context.Context, p *path) (restarts int, err error) {
	if p.proc == nil {
		return 0, nil
	}
	for range 10 {
		if p.proc.exited() {
			p.stop()
			q, err := b.startPath(ctx, p.name, p.rtt)
			if err != nil {
				return restarts, err
			}
			*p = *q
			restarts++
		}
		if err = waitReady(p, 15*time.Second); err == nil {
			return restarts, nil
		}
		select {
		case <-ctx.Done():
			return restarts, ctx.Err()
		case <-time.After(2 * time.Second):
		}
	}
	return restarts, err
}

// measure runs one load test on p, in a process of its own (in the node's
// network namespace for the direct path), and the tunnel's CPU time
// meanwhile.
func (b *bench) measure(ctx context.Context, p *path, spec loadSpec) (sample, error) {
	spec.Addr = p.addr
	// TCP's slow start, and SSH's windows, take some round trips to open.
	spec.Warmup += warmupRTTs * p.rtt
	argv := append([]string{b.self, "load"}, spec.args()...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	if p.netns != "" {
		cmd = rigbench.InNetns(ctx, p.netns, argv...)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	pids := p.pids()
	cpu0 := cpuTime(pids)
	out, err := rigbench.Output(cmd)
	cpu := cpuTime(pids) - cpu0
	if err != nil {
		return sample{}, fmt.Errorf("load: %w", err)
	}
	var res loadResult
	if err := json.Unmarshal(out, &res); err != nil {
		return sample{}, fmt.Errorf("load: result: %w", err)
	}
	// Let the tunnel tear the test's connections down before the next.
	select {
	case <-ctx.Done():
		return sample{}, ctx.Err()
	case <-time.After(200 * time.Millisecond):
	}
	return sample{res: &res, cpu: cpu}, nil
}

// summary is one line of progress for a sample of a test.
func (s sample) summary(test string) string {
	r := s.res
	var out string
	switch test {
	case testDown, testUp:
		out = fmt.Sprintf("%8.1f MB/s", float64(r.Count)/r.Seconds/1e6)
	case testSetup:
		out = fmt.Sprintf("p50 %.2f ms p99 %.2f ms", setupMs(r.SetupMicros, 50), setupMs(r.SetupMicros, 99))
	default:
		out = fmt.Sprintf("%8.0f req/s", float64(r.Count)/r.Seconds)
	}
	out += fmt.Sprintf("  cpu %v", s.cpu)
	if r.Errors > 0 {
		out += fmt.Sprintf("  errors %d (%s)", r.Errors, r.FirstErr)
	}
	return out
}

// describe names pids and their commands, for the notes.
func describe(pids []int) string {
	var out []byte
	for i, pid := range pids {
		comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		m, _ := procstat.ReadMemory(pid)
		if i > 0 {
			out = append(out, ", "...)
		}
		out = fmt.Appendf(out, "%s %.1f MiB", bytes.TrimSpace(comm), float64(m.RSS)/(1<<20))
	}
	return string(out)
}

// loadAvg returns the machine's 1, 5 and 15-minute load averages.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := bytes.Fields(b)
	if len(f) < 3 {
		return "?"
	}
	return string(bytes.Join(f[:3], []byte(" ")))
}
