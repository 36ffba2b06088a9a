//go:build bench

package main

import (
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/sluice-hpc/sluice/bench/internal/stats"
)

// row is one figure of the report: a value for each chain, and whether
// more is better.
type row struct {
	label  string
	values map[string]float64
	spread map[string][2]float64 // min and max over the rounds, if any
	higher bool                  // more is better
	format string
}

// report writes the table of figures and ratios, in Markdown.
func report(w io.Writer, res *results, o options, chains []*chain) {
	var rows []row
	figure := func(key, label string, higher bool, format string) {
		byChain := res.values[key]
		if byChain == nil {
			return
		}
		r := row{label: label, values: map[string]float64{}, spread: map[string][2]float64{}, higher: higher, format: format}
		for c, vs := range byChain {
			r.values[c] = stats.Median(vs)
			r.spread[c] = [2]float64{slices.Min(vs), slices.Max(vs)}
		}
		rows = append(rows, r)
	}
	figure("up1", "throughput job → cluster, 1 stream (MB/s)", true, "%.1f")
	figure("up16", "throughput job → cluster, 16 streams (MB/s)", true, "%.1f")
	figure("down1", "throughput cluster → job, 1 stream (MB/s)", true, "%.1f")
	figure("down16", "throughput cluster → job, 16 streams (MB/s)", true, "%.1f")
	for _, q := range []struct {
		p     float64
		label string
	}{{0.50, "connection set-up p50 (ms)"}, {0.99, "connection set-up p99 (ms)"}} {
		r := row{label: q.label, values: map[string]float64{}, format: "%.2f"}
		for c, s := range res.setups {
			r.values[c] = float64(stats.Quantile(s, q.p)) / float64(time.Millisecond)
		}
		rows = append(rows, r)
	}
	figure("rr1", "request/response 64 B, 1 connection (pairs/s)", true, "%.0f")
	figure("rr16", "request/response 64 B, 16 connections (pairs/s)", true, "%.0f")
	for _, t := range []string{"PING_INLINE", "PING_MBULK", "SET", "GET"} {
		figure("redis "+t, "redis-benchmark "+t+" (requests/s)", true, "%.0f")
	}
	mem := func(label string, of map[string]usage, kb func(usage) int64) {
		r := row{label: label, values: map[string]float64{}, format: "%.1f"}
		for c, u := range of {
			r.values[c] = float64(kb(u)) / 1024
		}
		rows = append(rows, r)
	}
	rss := func(u usage) int64 { return u.rssKB }
	pss := func(u usage) int64 { return u.pssKB }
	mem("RSS idle, relay + tunnel / socat + ssh (MiB)", res.idle, rss)
	mem("RSS peak under load (MiB)", res.peak, rss)
	mem("PSS idle (MiB)", res.idle, pss)
	mem("PSS peak under load (MiB)", res.peak, pss)
	cpu := row{label: "CPU of relay + tunnel / socat + ssh per GB moved (s)", values: map[string]float64{}, format: "%.2f"}
	for c, d := range res.cpu {
		if res.moved[c] > 0 {
			cpu.values[c] = d.Seconds() / (float64(res.moved[c]) / 1e9)
		}
	}
	rows = append(rows, cpu)
	if len(res.siteIdle) > 0 {
		mem("RSS idle, the sessions' processes on the site (MiB)", res.siteIdle, rss)
		mem("PSS idle, the sessions' processes on the site (MiB)", res.siteIdle, pss)
		site := row{label: "CPU of the sessions' processes on the site per GB moved (s)", values: map[string]float64{}, format: "%.2f"}
		for c, d := range res.siteCPU {
			if res.moved[c] > 0 {
				site.values[c] = d.Seconds() / (float64(res.moved[c]) / 1e9)
			}
		}
		rows = append(rows, site)
	}

	fmt.Fprintf(w, "%d rounds; throughput and request/response tests of %v, %d set-ups a round, redis-benchmark -n %d; medians over the rounds\n\n",
		o.rounds, o.duration, o.setups, o.redisN)
	writeTable(w, rows, o.chains)
	writeSpread(w, rows, o.chains)
	writeCounts(w, res, chains)
}
