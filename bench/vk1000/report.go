//go:build bench

package main

import (
	"fmt"
	"io"
	"maps"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"
)

type results struct {
	idle, loaded memSample
	steps        []stepResult
	lags         []lag
}

// lag is one pod's status lag: from its job's end to the Status call that
// saw it (poll), from there to the watch showing the pod Succeeded (push).
type lag struct {
	total, poll, push time.Duration
}

type stepResult struct {
	pods             int
	created, running time.Duration
	window           time.Duration
	polls            []pollRecord
	ramp             ramp      // the step's own pods, from create to Running
	mem              memSample // with the step's pods Running
	longestFind      int       // the longest exit-file scan command line so far, bytes
	// podWrites are the writes to pods the watch saw from the step's first
	// create to its pods all Running; events the namespace's Events by
	// reason then, all steps so far.
	podWrites int
	events    map[string]int
}

// memSample is the process's memory after a garbage collection.
type memSample struct {
	heapInuse, heapAlloc uint64
	rss, hwm             uint64 // VmRSS and VmHWM, bytes
	rssFreed             uint64 // VmRSS once the heap's free pages are returned
	fakeBytes            uint64 // what the site in memory holds in files
	standbyRSS           uint64 // VmRSS of the standby replica (-standby), if any
	goroutines           int
}

func readMem(site *fakeSite, sb *standby) memSample {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	s := memSample{heapInuse: ms.HeapInuse, heapAlloc: ms.HeapAlloc, goroutines: runtime.NumGoroutine()}
	s.rss, s.hwm = procStatus(selfStatus, "VmRSS:"), procStatus(selfStatus, "VmHWM:")
	debug.FreeOSMemory()
	s.rssFreed = procStatus(selfStatus, "VmRSS:")
	s.standbyRSS = sb.rss()
	site.mu.Lock()
	for _, data := range site.files {
		s.fakeBytes += uint64(len(data))
	}
	site.mu.Unlock()
	return s
}

const selfStatus = "/proc/self/status"

// procStatus reads a "kB" line of a /proc/<pid>/status file, in bytes.
func procStatus(file, key string) uint64 {
	data, err := os.ReadFile(file)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, key); ok {
			n, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return n * 1024
		}
	}
	return 0
}

func mib(b uint64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// quantile is the q-quantile (nearest rank) of sorted ds.
func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	i := int(q*float64(len(ds))+0.999999) - 1
	return ds[min(max(i, 0), len(ds)-1)]
}

// span is "a" or "a–b" for the least and greatest of vs.
func span(vs []int64) string {
	if len(vs) == 0 {
		return "-"
	}
	lo, hi := slices.Min(vs), slices.Max(vs)
	if lo == hi {
		return strconv.FormatInt(lo, 10)
	}
	return fmt.Sprintf("%d–%d", lo, hi)
}

func (r *results) print(w io.Writer, o options) {
	fmt.Fprintf(w, "\n### Calls to Slurm per status poll (poll interval %v, %d polls measured per count)\n\n", o.poll, o.windows)
	fmt.Fprintln(w, "| pods | poll intervals measured | Jobs.Status calls in them | pods per Status call | squeue / poll | other squeue | find / poll | sacct / poll | sbatch, scancel | Status call time (max) | longest find command (bytes) | create → all Running |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, s := range r.steps {
		var refs, sq, sqo, find, sacct, other []int64
		var took time.Duration
		for _, p := range s.polls {
			refs = append(refs, int64(p.refs))
			sq = append(sq, p.ran.squeuePoll)
			sqo = append(sqo, p.ran.squeueOther)
			find = append(find, p.ran.find)
			sacct = append(sacct, p.ran.sacct)
			other = append(other, p.ran.sbatch+p.ran.scancel)
			took = max(took, p.took)
		}
		ticks := float64(s.window) / float64(o.poll)
		fmt.Fprintf(w, "| %d | %.0f | %d | %s | %s | %s | %s | %s | %s | %v | %d | %v |\n", s.pods, ticks,
			len(s.polls), span(refs), span(sq), span(sqo), span(find), span(sacct), span(other),
			took.Round(100*time.Microsecond), s.longestFind, s.running.Round(100*time.Millisecond))
	}
	r.printRamps(w)
	r.printWrites(w)
	fmt.Fprintf(w, "\n### Memory of the process (after a GC)\n\n")
	fmt.Fprintln(w, "| pods | heap in use | heap live | RSS | RSS after FreeOSMemory | peak RSS | goroutines | site-in-memory files | standby's RSS |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|")
	type row struct {
		pods int
		s    memSample
	}
	rows := []row{{0, r.idle}}
	for _, st := range r.steps {
		rows = append(rows, row{st.pods, st.mem})
	}
	for _, m := range rows {
		standbyRSS := "-"
		if m.s.standbyRSS > 0 {
			standbyRSS = mib(m.s.standbyRSS)
		}
		fmt.Fprintf(w, "| %d | %s | %s | %s | %s | %s | %d | %s | %s |\n", m.pods, mib(m.s.heapInuse), mib(m.s.heapAlloc),
			mib(m.s.rss), mib(m.s.rssFreed), mib(m.s.hwm), m.s.goroutines, mib(m.s.fakeBytes), standbyRSS)
	}
	if len(r.lags) == 0 {
		return
	}
	in := func(d time.Duration) string {
		return fmt.Sprintf("%.2f (%v)", float64(d)/float64(o.poll), d.Round(time.Millisecond))
	}
	fmt.Fprintf(w, "\n### Status lag of %d pods of %d, in poll intervals (%v)\n\n", len(r.lags), r.lastPods(), o.poll)
	fmt.Fprintln(w, "| span | min | p50 | p90 | p99 | max |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	for _, part := range []struct {
		name string
		of   func(lag) time.Duration
	}{
		{"job end → pod Succeeded in the API server (watch)", func(l lag) time.Duration { return l.total }},
		{"job end → the Status call that sees it", func(l lag) time.Duration { return l.poll }},
		{"that Status call → pod Succeeded in the API server", func(l lag) time.Duration { return l.push }},
	} {
		ds := make([]time.Duration, len(r.lags))
		for i, l := range r.lags {
			ds[i] = part.of(l)
		}
		slices.Sort(ds)
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |\n", part.name, in(ds[0]), in(quantile(ds, 0.5)),
			in(quantile(ds, 0.9)), in(quantile(ds, 0.99)), in(ds[len(ds)-1]))
	}
}

func (r *results) lastPods() int {
	if len(r.steps) == 0 {
		return 0
	}
	return r.steps[len(r.steps)-1].pods
}

// printWrites prints the writes each step's pods took of the API server
// until they all ran.
func (r *results) printWrites(w io.Writer) {
	fmt.Fprintf(w, "\n### Writes to the API server until the pods ran\n\n")
	fmt.Fprintln(w, "| pods | new pods | pod updates (watch) per new pod | Events per new pod | Events by reason (all counts so far) |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	prev := map[string]int{}
	for _, s := range r.steps {
		total := 0
		var reasons []string
		for _, reason := range slices.Sorted(maps.Keys(s.events)) {
			total += s.events[reason] - prev[reason]
			reasons = append(reasons, fmt.Sprintf("%s %d", reason, s.events[reason]))
		}
		fmt.Fprintf(w, "| %d | %d | %.2f | %.2f | %s |\n", s.pods, s.ramp.pods, float64(s.podWrites)/float64(s.ramp.pods),
			float64(total)/float64(s.ramp.pods), strings.Join(reasons, ", "))
		prev = s.events
	}
}

// printRamps prints how each step's pods went from their create to Running.
func (r *results) printRamps(w io.Writer) {
	fmt.Fprintf(w, "\n### From create to Running, each count's own pods\n\n")
	fmt.Fprintln(w, "| pods | new pods | created in | first create → all Running | Running per minute, overall | in each whole minute | create → Running p50 | p90 | p99 | max |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|")
	for _, s := range r.steps {
		rp := s.ramp
		minutes := "-"
		if full := rp.fullMinutes(); len(full) > 0 {
			parts := make([]string, len(full))
			for i, n := range full {
				parts[i] = strconv.Itoa(n)
			}
			minutes = strings.Join(parts, ", ")
		}
		q := func(p float64) time.Duration { return quantile(rp.latency, p).Round(10 * time.Millisecond) }
		last := time.Duration(0)
		if len(rp.latency) > 0 {
			last = rp.latency[len(rp.latency)-1].Round(10 * time.Millisecond)
		}
		fmt.Fprintf(w, "| %d | %d | %v | %v | %.0f | %s | %v | %v | %v | %v |\n", s.pods, rp.pods,
			s.created.Round(100*time.Millisecond), rp.last.Sub(rp.first).Round(100*time.Millisecond),
			rp.overall(), minutes, q(0.5), q(0.9), q(0.99), last)
	}
}
