// Package doctor checks, from where sluice-vk runs, what a site must give
// for jobs and tunnels to work (SPEC S10): the login node reached with its
// key pinned, authentication, Slurm, the data root, and, through a short
// probe job on a compute node, the container runtime, the socket directory
// root and the node's sshd. Each check gives one line: OK, WARN or FAIL,
// what was found and the fix.
//
// It reaches the site with sluice's own code (internal/sshx, internal/site,
// internal/slurm, internal/tunnel), never a second implementation: what the
// doctor sees is what sluice-vk and the shadows will see.
package doctor

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/sluice-hpc/sluice/internal/textcut"
)

// Status is the verdict of a check.
type Status string

// The verdicts, from best to worst. Skip is a check that could not run
// because one it needs failed: that one says why.
const (
	OK   Status = "OK"
	Warn Status = "WARN"
	Fail Status = "FAIL"
	Skip Status = "SKIP"
)

// Check is the result of one check.
type Check struct {
	// Name is short and fixed ("login", "node-sshd"): scripts match on it.
	Name   string `json:"name"`
	Status Status `json:"status"`
	// Found says what the check saw.
	Found string `json:"found"`
	// Fix says what to change; empty when there is nothing to do.
	Fix string `json:"fix,omitempty"`
}

// Report is the result of every check, in the order they ran.
type Report struct {
	Checks []Check `json:"checks"`
}

// Failed reports whether any check failed.
func (r *Report) Failed() bool {
	for _, c := range r.Checks {
		if c.Status == Fail {
			return true
		}
	}
	return false
}

// Find returns the check called name, and whether there is one.
func (r *Report) Find(name string) (Check, bool) {
	for _, c := range r.Checks {
		if c.Name == name {
			return c, true
		}
	}
	return Check{}, false
}

func (r *Report) add(c Check) { r.Checks = append(r.Checks, c) }

// maxText is the most of a check's text that is printed: what the site
// answers is bounded before it reaches a terminal.
const maxText = 512

// WriteText writes the report one check a line:
//
//	OK    login               10.0.0.1:22 reached, host key … pinned
//	FAIL  stream-local        … — fix: set Network.SSH.Reverse.Sshd: userspace
func (r *Report) WriteText(w io.Writer) error {
	width := 0
	for _, c := range r.Checks {
		width = max(width, len(c.Name))
	}
	var b strings.Builder
	for _, c := range r.Checks {
		fmt.Fprintf(&b, "%-4s  %-*s  %s", c.Status, width, c.Name, clean(c.Found))
		if c.Fix != "" {
			fmt.Fprintf(&b, " — fix: %s", clean(c.Fix))
		}
		b.WriteByte('\n')
	}
	fails, warns := r.count(Fail), r.count(Warn)
	fmt.Fprintf(&b, "%d checks: %d failed, %d warnings, %d skipped\n", len(r.Checks), fails, warns, r.count(Skip))
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteJSON writes the report as one JSON object: {"checks": [...],
// "failed": bool}.
func (r *Report) WriteJSON(w io.Writer) error {
	checks := make([]Check, len(r.Checks))
	for i, c := range r.Checks {
		c.Found, c.Fix = clean(c.Found), clean(c.Fix)
		checks[i] = c
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		Checks []Check `json:"checks"`
		Failed bool    `json:"failed"`
	}{checks, r.Failed()})
}

func (r *Report) count(s Status) int {
	n := 0
	for _, c := range r.Checks {
		if c.Status == s {
			n++
		}
	}
	return n
}

// clean makes text one printable line of at most maxText bytes: control
// characters (a site's answer may hold escape sequences) become spaces.
func clean(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return ' '
		}
		return r
	}, s)
	s = strings.Join(strings.Fields(s), " ")
	return textcut.Cut(s, maxText, "…")
}
