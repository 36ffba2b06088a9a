//go:build bench

package main

import (
	"fmt"
	"io"
	"net"
	"slices"
	"time"
)

// report prints each storm, then the medians of each variant side by side
// with their ratios.
func report(w io.Writer, o options, results []result) {
	fmt.Fprintf(w, "%d tunnels, login sshd MaxStartups %s, round trip %v, login node down %v; after: --reconnect-spread %v (window %v)\n\n",
		o.tunnels, o.maxStartups, o.rtt, o.down, o.spread, min(time.Duration(o.tunnels)*o.spread, o.windowMax))
	fmt.Fprintf(w, "| variant | round | dropped by sshd (MaxStartups) | failed connections (all / after the login node was back) | all tunnels up after |\n|---|---|---|---|---|\n")
	for _, r := range results {
		fmt.Fprintf(w, "| %s | %d | %d | %d / %d | %.2f s |\n", r.variant, r.round, r.dropped, r.failed, r.failedAfterDown, r.allUp.Seconds())
	}
	med := map[string]result{}
	for _, v := range []string{"before", "after"} {
		var d, f, fa []int
		var up []time.Duration
		for _, r := range results {
			if r.variant == v {
				d, f, fa, up = append(d, r.dropped), append(f, r.failed), append(fa, r.failedAfterDown), append(up, r.allUp)
			}
		}
		if len(d) > 0 {
			med[v] = result{dropped: median(d), failed: median(f), failedAfterDown: median(fa), allUp: median(up)}
		}
	}
	b, okB := med["before"]
	a, okA := med["after"]
	if !okB || !okA {
		return
	}
	fmt.Fprintf(w, "\n| median | before | after | after / before |\n|---|---|---|---|\n")
	fmt.Fprintf(w, "| dropped by sshd | %d | %d | %s |\n", b.dropped, a.dropped, ratio(float64(a.dropped), float64(b.dropped)))
	fmt.Fprintf(w, "| failed connections after the login node was back | %d | %d | %s |\n", b.failedAfterDown, a.failedAfterDown, ratio(float64(a.failedAfterDown), float64(b.failedAfterDown)))
	fmt.Fprintf(w, "| all tunnels up after | %.2f s | %.2f s | %s |\n", b.allUp.Seconds(), a.allUp.Seconds(), ratio(a.allUp.Seconds(), b.allUp.Seconds()))
}

func median[T int | time.Duration](xs []T) T {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

func ratio(a, b float64) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f×", a/b)
}

// freePort returns a TCP port free on the host's 127.0.0.1 a moment ago.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
