//go:build bench

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-hpc/sluice/bench/internal/rigbench"
)

// options are the benchmark's flags.
type options struct {
	rounds   int
	duration time.Duration
	setups   int
	redisN   int
	cipher   string
	profile  string
	chains   []string // the chains' names, in the report's order
	rtts     []time.Duration
}

// results collects the measurements of every chain.
type results struct {
	// values holds one value a round for each figure and chain.
	values map[string]map[string][]float64
	// setups holds every connection set-up time of each chain.
	setups map[string][]time.Duration
	idle   map[string]usage // after the warm-up
	peak   map[string]usage // the largest seen during any test
	cpu    map[string]time.Duration
	moved  map[string]int64 // bytes moved by the throughput tests
	// siteIdle and siteCPU are those of the processes a sluice chain's
	// sessions run on the site (chain.site), apart from its parts.
	siteIdle map[string]usage
	siteCPU  map[string]time.Duration
	// failed counts the attempts of each chain's tests that failed (a
	// connection closed or reset by the chain); gaveUp the rounds in which
	// every attempt failed, left without a value.
	failed map[string]map[string]int
	gaveUp map[string]map[string]int
}

func newResults() *results {
	return &results{
		values: map[string]map[string][]float64{},
		setups: map[string][]time.Duration{},
		idle:   map[string]usage{},
		peak:   map[string]usage{},
		cpu:    map[string]time.Duration{},
		moved:  map[string]int64{},
		failed: map[string]map[string]int{},
		gaveUp: map[string]map[string]int{},

		siteIdle: map[string]usage{},
		siteCPU:  map[string]time.Duration{},
	}
}

func (r *results) add(figure, chain string, v float64) {
	if r.values[figure] == nil {
		r.values[figure] = map[string][]float64{}
	}
	r.values[figure][chain] = append(r.values[figure][chain], v)
}

// test is one measurement, made through one chain at a time.
type test struct {
	name string
	run  func(ctx context.Context, e *env, c *chain, o options, res *results) error
}

// throughput tests move bytes; their CPU is counted per byte.
func throughputTest(name, kind string, streams int) test {
	return test{name: name, run: func(ctx context.Context, e *env, c *chain, o options, res *results) error {
		before := treeUsage(c.roots())
		var site []int
		var siteBefore usage
		if c.site != nil {
			site = c.site()
			siteBefore = treeUsage(site)
		}
		r, err := e.client(ctx, c.echo, kind, "-streams", strconv.Itoa(streams), "-duration", o.duration.String())
		if err != nil {
			return err
		}
		if len(c.parts) > 0 {
			res.cpu[c.id()] += treeUsage(c.roots()).cpu - before.cpu
			res.moved[c.id()] += r.Bytes
		}
		if c.site != nil {
			// The same processes as before: a session started meanwhile
			// would count its whole CPU time.
			res.siteCPU[c.id()] += treeUsage(site).cpu - siteBefore.cpu
		}
		res.add(name, c.id(), float64(r.Bytes)/r.Seconds/1e6)
		return nil
	}}
}

func rrTest(name string, streams int) test {
	return test{name: name, run: func(ctx context.Context, e *env, c *chain, o options, res *results) error {
		r, err := e.client(ctx, c.echo, testRR, "-streams", strconv.Itoa(streams), "-duration", o.duration.String())
		if err != nil {
			return err
		}
		res.add(name, c.id(), float64(r.Pairs)/r.Seconds)
		return nil
	}}
}

func setupTest() test {
	return test{name: "setup", run: func(ctx context.Context, e *env, c *chain, o options, res *results) error {
		r, err := e.client(ctx, c.echo, testSetup, "-n", strconv.Itoa(o.setups))
		if err != nil {
			return err
		}
		for _, ns := range r.SetupsNs {
			res.setups[c.id()] = append(res.setups[c.id()], time.Duration(ns))
		}
		return nil
	}}
}

func redisTest() test {
	return test{name: "redis", run: func(ctx context.Context, e *env, c *chain, o options, res *results) error {
		rps, err := e.redisBenchmark(ctx, c.redis, o.redisN)
		if err != nil {
			return err
		}
		for _, r := range rps {
			res.add("redis "+r.name, c.id(), r.rps)
		}
		return nil
	}}
}

// tests are the measurements of one round, in order.
func tests() []test {
	return []test{
		throughputTest("up1", testUp, 1),
		throughputTest("up16", testUp, 16),
		throughputTest("down1", testDown, 1),
		throughputTest("down16", testDown, 16),
		setupTest(),
		rrTest("rr1", 1),
		rrTest("rr16", 16),
		redisTest(),
	}
}

// measure runs the rounds: each test through every chain in turn, the
// order of the chains turning by one each round, so that load from
// elsewhere falls on all of them alike.
func measure(ctx context.Context, e *env, chains []*chain, o options) (*results, error) {
	res := newResults()
	for _, c := range chains {
		if _, err := e.client(ctx, c.echo, testDown, "-duration", "500ms"); err != nil {
			return nil, fmt.Errorf("warm-up %s: %w", c.id(), err)
		}
		if _, err := e.client(ctx, c.echo, testSetup, "-n", "20"); err != nil {
			return nil, fmt.Errorf("warm-up %s: %w", c.id(), err)
		}
	}
	time.Sleep(time.Second)
	for _, c := range chains {
		if len(c.parts) > 0 {
			res.idle[c.id()] = treeUsage(c.roots())
		}
		if c.site != nil {
			res.siteIdle[c.id()] = treeUsage(c.site())
		}
	}
	for round := range o.rounds {
		for _, t := range tests() {
			for i := range chains {
				c := chains[(i+round)%len(chains)]
				if err := runTest(ctx, t, e, c, o, res); err != nil {
					return nil, fmt.Errorf("round %d, %s, %s: %w", round+1, t.name, c.id(), err)
				}
				fmt.Fprintf(os.Stderr, "round %d %-6s %-16s %s\n", round+1, t.name, c.id(), res.last(t.name, c.id()))
				time.Sleep(200 * time.Millisecond)
			}
		}
	}
	return res, nil
}

// attempts is how often a test that fails is run through a chain in one
// round before the round goes without its value.
const attempts = 2

// runTest runs t through c, sampling the memory of c's parts meanwhile. A
// test that fails is counted and run again, up to attempts times; then the
// round is counted as given up. Only the end of ctx is an error.
func runTest(ctx context.Context, t test, e *env, c *chain, o options, res *results) error {
	for try := 1; ; try++ {
		var s *sampler
		if len(c.parts) > 0 {
			s = sample(c.roots())
		}
		err := t.run(ctx, e, c, o, res)
		if s != nil {
			if p := s.end(); p.rssKB > res.peak[c.id()].rssKB {
				res.peak[c.id()] = p
			}
		}
		if err == nil || ctx.Err() != nil {
			return ctx.Err()
		}
		count(res.failed, c.id(), t.name)
		fmt.Fprintf(os.Stderr, "%s %s failed (attempt %d): %v\n", t.name, c.id(), try, err)
		if try == attempts {
			count(res.gaveUp, c.id(), t.name)
			return nil
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func count(m map[string]map[string]int, chain, test string) {
	if m[chain] == nil {
		m[chain] = map[string]int{}
	}
	m[chain][test]++
}

// last describes the latest value of a test through a chain, for progress.
func (r *results) last(test, chain string) string {
	if test == "setup" {
		s := r.setups[chain]
		return fmt.Sprintf("%d set-ups", len(s))
	}
	var parts []string
	for fig, byChain := range r.values {
		if v := byChain[chain]; len(v) > 0 && (fig == test || test == "redis" && strings.HasPrefix(fig, "redis ")) {
			parts = append(parts, fmt.Sprintf("%s=%.1f", fig, v[len(v)-1]))
		}
	}
	slices.Sort(parts)
	return strings.Join(parts, " ")
}

// client runs one test of this program's client as the job's user on the
// compute node and returns its result.
func (e *env) client(ctx context.Context, addr, test string, args ...string) (clientResult, error) {
	argv := append([]string{e.self, "client", "-test", test, "-addr", addr}, args...)
	out, err := rigbench.Output(e.rig.AsUser(ctx, rigbench.NodeNetns, argv...))
	if err != nil {
		return clientResult{}, fmt.Errorf("client %s: %w", test, err)
	}
	var r clientResult
	if err := json.Unmarshal(out, &r); err != nil {
		return clientResult{}, fmt.Errorf("client %s: result: %w", test, err)
	}
	return r, nil
}
