//go:build bench

package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/sluice-hpc/sluice/bench/internal/procstat"
	"github.com/sluice-hpc/sluice/bench/internal/stats"
)

// figure is one row of the report: a value per path, and how to compare.
type figure struct {
	label string
	// values per path name; a path without a value is left out ("n/a").
	values map[string]float64
	// spread per path name, "min–max" over the rounds; may be empty.
	spread map[string]string
	// ratio returns a/b for two paths; nil to divide the values.
	ratio  func(a, b string) (float64, bool)
	format string // of a value
}

// report writes the figures as Markdown tables, one for each round trip
// added, then notes.
func (b *bench) report(w io.Writer) {
	for _, rtt := range b.o.rtts {
		var paths []*path
		for _, p := range b.paths {
			if p.rtt == rtt {
				paths = append(paths, p)
			}
		}
		if len(b.o.rtts) > 1 || rtt > 0 {
			fmt.Fprintf(w, "Round trip added: %v (between the cluster and the login node; for direct, between the client and the job server)\n\n", rtt)
		}
		b.table(w, paths)
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "Values: median over %d rounds (min–max of the rounds); ratios of throughput and requests: median of the per-round ratios; set-up: %d connections per path per round, pooled.\n", b.o.rounds, b.o.samples)
	fmt.Fprintf(w, "Load averages (1, 5, 15 min) before the rounds: %s; after: %s.\n", b.load[0], b.load[1])
	for _, p := range b.paths {
		if s := b.procs[p.id()]; s != "" {
			fmt.Fprintf(w, "Processes of %s after the load: %s.\n", p.id(), s)
		}
	}
	for _, p := range b.paths {
		for _, r := range b.retries[p.id()] {
			fmt.Fprintf(w, "Retry on %s: %s.\n", p.id(), r)
		}
	}
	for _, p := range b.paths {
		if e := b.errors(p.id()); e != "" {
			fmt.Fprintf(w, "Errors on %s: %s.\n", p.id(), e)
		}
	}
}

// table writes the figures of paths, those of one round trip, as a
// Markdown table with the ratios between them.
func (b *bench) table(w io.Writer, paths []*path) {
	n := strconv.Itoa(b.o.streams)
	figs := []figure{
		b.rate("down1", "throughput node → client, 1 stream (MB/s)", 1e6),
		b.rate("down"+n, "throughput node → client, "+n+" streams (MB/s)", 1e6),
		b.rate("up1", "throughput client → node, 1 stream (MB/s)", 1e6),
		b.rate("up"+n, "throughput client → node, "+n+" streams (MB/s)", 1e6),
		b.setup(50),
		b.setup(99),
		b.rate("ping1", "requests/s, 64 B, 1 kept connection", 1),
		b.rate("ping"+n, "requests/s, 64 B, "+n+" kept connections", 1),
		b.rate("newconn"+n, "requests/s, 64 B, new connection each, "+n+" workers", 1),
		b.cpuPerGB(paths),
		b.mem("tunnel RSS after start, idle (MiB)", b.memIdle, false),
		b.mem("tunnel RSS after the load (MiB)", b.memLoad, false),
		b.mem("tunnel peak RSS, VmHWM (MiB)", b.memLoad, true),
	}

	// names: id and title; ratios: the ids of numerator and denominator,
	// and the column's label.
	var names [][2]string
	var ratios [][3]string
	for _, p := range paths {
		names = append(names, [2]string{p.id(), title(p.name)})
	}
	byName := func(n string) *path {
		if i := slices.IndexFunc(paths, func(p *path) bool { return p.name == n }); i >= 0 {
			return paths[i]
		}
		return nil
	}
	if s := byName(pathSluice); s != nil {
		for _, p := range paths {
			if p.name != pathSluice && p.name != pathDirect {
				ratios = append(ratios, [3]string{s.id(), p.id(), s.name + "/" + p.name})
			}
		}
	}
	if d := byName(pathDirect); d != nil {
		for _, p := range paths {
			if p.name != pathDirect {
				ratios = append(ratios, [3]string{p.id(), d.id(), p.name + "/" + d.name})
			}
		}
	}

	head := []string{"figure"}
	for _, n := range names {
		head = append(head, n[1])
	}
	for _, r := range ratios {
		head = append(head, r[2])
	}
	fmt.Fprintf(w, "| %s |\n|%s\n", strings.Join(head, " | "), strings.Repeat("---|", len(head)))
	for _, f := range figs {
		row := []string{f.label}
		for _, n := range names {
			v, ok := f.values[n[0]]
			switch {
			case !ok:
				row = append(row, "n/a")
			case f.spread[n[0]] != "":
				row = append(row, fmt.Sprintf(f.format, v)+" ("+f.spread[n[0]]+")")
			default:
				row = append(row, fmt.Sprintf(f.format, v))
			}
		}
		for _, r := range ratios {
			x, ok := f.ratioOf(r[0], r[1])
			if !ok {
				row = append(row, "n/a")
				continue
			}
			row = append(row, fmt.Sprintf("%.2f", x))
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(row, " | "))
	}
}

func (f figure) ratioOf(a, b string) (float64, bool) {
	if f.ratio != nil {
		return f.ratio(a, b)
	}
	va, oka := f.values[a]
	vb, okb := f.values[b]
	if !oka || !okb || vb == 0 {
		return 0, false
	}
	return va / vb, true
}

func title(name string) string {
	switch name {
	case pathSluice:
		return "sluice-tunnel"
	case pathOpenSSH:
		return "OpenSSH -J -L"
	case pathOpenSSHGCM:
		return "OpenSSH -J -L, aes128-gcm"
	}
	return name
}

// rate is the count per second of test key, divided by unit.
func (b *bench) rate(key, label string, unit float64) figure {
	f := figure{label: label, values: map[string]float64{}, spread: map[string]string{}, format: "%.0f"}
	if unit == 1e6 {
		f.format = "%.1f"
	}
	per := map[string][]float64{}
	for name, samples := range b.records[key] {
		for _, s := range samples {
			per[name] = append(per[name], float64(s.res.Count)/s.res.Seconds/unit)
		}
		vs := slices.Clone(per[name])
		slices.Sort(vs)
		f.values[name] = stats.Median(vs)
		f.spread[name] = fmt.Sprintf(f.format+"–"+f.format, vs[0], vs[len(vs)-1])
	}
	f.ratio = func(a, b string) (float64, bool) {
		va, vb := per[a], per[b]
		if len(va) == 0 || len(va) != len(vb) {
			return 0, false
		}
		var rs []float64
		for i := range va {
			if vb[i] > 0 {
				rs = append(rs, va[i]/vb[i])
			}
		}
		if len(rs) == 0 {
			return 0, false
		}
		return stats.Median(rs), true
	}
	return f
}

// setup is percentile p of the set-up times of every round, in ms.
func (b *bench) setup(p float64) figure {
	f := figure{label: fmt.Sprintf("connection set-up p%.0f (ms)", p), values: map[string]float64{}, format: "%.2f"}
	for name, samples := range b.records["setup"] {
		var all []int64
		for _, s := range samples {
			all = append(all, s.res.SetupMicros...)
		}
		if len(all) > 0 {
			f.values[name] = setupMs(all, p)
		}
	}
	return f
}

// cpuPerGB is the tunnel's CPU time per GB carried by the throughput
// tests, for each of paths.
func (b *bench) cpuPerGB(paths []*path) figure {
	f := figure{label: "tunnel CPU per GB carried, throughput tests (s)", values: map[string]float64{}, format: "%.2f"}
	for _, p := range paths {
		if p.proc == nil {
			continue
		}
		var cpu, bytes float64
		for key, per := range b.records {
			if !strings.HasPrefix(key, "down") && !strings.HasPrefix(key, "up") {
				continue
			}
			for _, s := range per[p.id()] {
				cpu += s.cpu.Seconds()
				bytes += float64(s.res.Total)
			}
		}
		if bytes > 0 {
			f.values[p.id()] = cpu / (bytes / 1e9)
		}
	}
	return f
}

func (b *bench) mem(label string, m map[string]procstat.Memory, peak bool) figure {
	f := figure{label: label, values: map[string]float64{}, format: "%.1f"}
	for name, v := range m {
		x := v.RSS
		if peak {
			x = v.HWM
		}
		f.values[name] = float64(x) / (1 << 20)
	}
	return f
}

// errors sums the errors of the tests on path name, with the first one.
func (b *bench) errors(name string) string {
	var n int64
	first := ""
	for key, per := range b.records {
		for _, s := range per[name] {
			n += s.res.Errors
			if first == "" && s.res.FirstErr != "" {
				first = key + ": " + s.res.FirstErr
			}
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%d (first: %s)", n, first)
}

// setupMs is percentile p (nearest rank) of set-up times in µs, in ms; NaN
// if there are none.
func setupMs(micros []int64, p float64) float64 {
	if len(micros) == 0 {
		return math.NaN()
	}
	return float64(stats.Quantile(micros, p/100)) / 1e3
}
