//go:build bench

package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// ratios are the ratio columns of the table, a / b, each where both chains
// are measured: to OpenSSH and direct, and of the user-space and srun
// modes to the node mode (and srun to user-space: what srun adds).
var ratios = []struct{ a, b, label string }{
	{chainSluice, chainOpenSSH, "sluice / OpenSSH"},
	{chainSluice, chainOpenSSHGCM, "sluice / OpenSSH-gcm"},
	{chainSluice, chainDirect, "sluice / direct"},
	{chainOpenSSH, chainDirect, "OpenSSH / direct"},
	{chainOpenSSHGCM, chainDirect, "OpenSSH-gcm / direct"},
	{chainUserspace, chainSluice, "userspace / sluice"},
	{chainSrun, chainSluice, "srun / sluice"},
	{chainSrun, chainUserspace, "srun / userspace"},
}

// writeTable writes the figures of each chain of names, the ratios, and
// whether sluice is ahead of OpenSSH.
func writeTable(w io.Writer, rows []row, names []string) {
	head := append([]string{"figure"}, names...)
	var cols []int
	for i, q := range ratios {
		if slices.Contains(names, q.a) && slices.Contains(names, q.b) {
			cols = append(cols, i)
			head = append(head, q.label)
		}
	}
	ahead := slices.Contains(names, chainSluice) && slices.Contains(names, chainOpenSSH)
	if ahead {
		head = append(head, "sluice ahead")
	}
	writeRow(w, head)
	writeRow(w, slices.Repeat([]string{"---"}, len(head)))
	for _, r := range rows {
		cells := []string{r.label}
		for _, n := range names {
			cells = append(cells, r.value(n))
		}
		for _, i := range cols {
			cells = append(cells, r.ratio(ratios[i].a, ratios[i].b))
		}
		if ahead {
			cells = append(cells, r.ahead(chainSluice, chainOpenSSH))
		}
		writeRow(w, cells)
	}
}

// writeSpread writes the least and the most of each figure over the
// rounds.
func writeSpread(w io.Writer, rows []row, names []string) {
	fmt.Fprintln(w, "\nSpread over the rounds (min – max):")
	fmt.Fprintln(w)
	writeRow(w, append([]string{"figure"}, names...))
	writeRow(w, slices.Repeat([]string{"---"}, len(names)+1))
	for _, r := range rows {
		if r.spread == nil {
			continue
		}
		cells := []string{r.label}
		for _, n := range names {
			sp, ok := r.spread[n]
			if !ok {
				cells = append(cells, "—")
				continue
			}
			cells = append(cells, fmt.Sprintf(r.format+" – "+r.format, sp[0], sp[1]))
		}
		writeRow(w, cells)
	}
}

// writeCounts writes how many set-ups each chain measured, its failed
// attempts, and the processes and CPU behind its memory and CPU figures.
func writeCounts(w io.Writer, res *results, chains []*chain) {
	var setups []string
	for _, c := range chains {
		setups = append(setups, fmt.Sprintf("%s %d", c.name, len(res.setups[c.name])))
	}
	fmt.Fprintf(w, "\nset-ups measured: %s\n", strings.Join(setups, ", "))
	for _, c := range chains {
		if f := res.failed[c.name]; len(f) > 0 {
			fmt.Fprintf(w, "%s: attempts that failed (a connection closed or reset by the chain): %v; rounds left without a value: %v\n", c.name, f, res.gaveUp[c.name])
		}
	}
	for _, c := range chains {
		if len(c.parts) == 0 {
			continue
		}
		fmt.Fprintf(w, "%s: %d processes idle, %d at peak; CPU %.2f s for %.2f GB moved by the throughput tests",
			c.name, res.idle[c.name].procs, res.peak[c.name].procs, res.cpu[c.name].Seconds(), float64(res.moved[c.name])/1e9)
		if c.site != nil {
			fmt.Fprintf(w, "; on the site %d processes idle, CPU %.2f s", res.siteIdle[c.name].procs, res.siteCPU[c.name].Seconds())
		}
		fmt.Fprintln(w)
	}
}

func writeRow(w io.Writer, cells []string) {
	fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
}

// value is the row's figure for chain, "—" if it has none.
func (r row) value(chain string) string {
	v, ok := r.values[chain]
	if !ok {
		return "—"
	}
	return fmt.Sprintf(r.format, v)
}

// ratio is the row's figure for a over that for b.
func (r row) ratio(a, b string) string {
	x, okA := r.values[a]
	y, okB := r.values[b]
	if !okA || !okB || y == 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f", x/y)
}

// ahead tells whether a does better than b on the row.
func (r row) ahead(a, b string) string {
	x, okA := r.values[a]
	y, okB := r.values[b]
	if !okA || !okB {
		return "—"
	}
	if r.higher && x > y || !r.higher && x < y {
		return "yes"
	}
	return "no"
}
