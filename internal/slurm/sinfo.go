package slurm

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Capacity is what the nodes of some partitions offer, as sinfo tells it.
// A node in several of them counts once.
type Capacity struct {
	// Partitions are the partitions counted: the ones asked for, or the
	// site's default partition when none was.
	Partitions []string
	// Empty are the partitions asked for in which sinfo listed no node
	// (a misspelt name, one the account may not use, or one emptied).
	Empty []string
	// Nodes is how many distinct nodes they hold; Usable how many of them
	// take jobs now (UsableNodeState).
	Nodes, Usable int
	// Total is what all the nodes hold; Available what the usable ones do.
	Total, Available Amounts
}

// Amounts are what a set of nodes holds.
type Amounts struct {
	CPUs      int64
	MemoryMiB int64
	// GRES counts the consumable generic resources by name and type
	// (Type "" when the node names none).
	GRES map[GRESKey]int64
}

// GRESKey names a generic resource: gpu, or gpu of type a100.
type GRESKey struct{ Name, Type string }

// sinfoNode is one record of sinfo --Node: one node in one partition.
type sinfoNode struct {
	Name      string
	CPUs      int64
	MemoryMiB int64
	GRES      map[GRESKey]int64
	Partition string
	Default   bool // the site's default partition (sinfo's '*')
	State     string
}

// sinfoFields are the fields read of each node: name, CPUs, memory (MiB),
// generic resources, partition, compact state.
var sinfoFields = []string{"%N", "%c", "%m", "%G", "%P", "%t"}

// Bounds on what sinfo may tell: far above any real site, low enough that
// sums cannot overflow (maxSinfoNodes × the largest amount of a node).
const (
	maxSinfoOutput  = 32 << 20
	maxSinfoNodes   = 1 << 20
	maxNodeCPUs     = 1 << 20
	maxNodeMemory   = 1 << 30 // MiB: 1 EiB
	maxNodeGRES     = 1 << 32
	maxGRESPerNode  = 64
	maxGRESFieldLen = 4096
)

var (
	// sinfoNodeName and partitionName match Slurm's node and partition
	// names (one node each: sinfo --Node does not fold them into ranges).
	sinfoNodeName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,252}$`)
	partitionName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)
	// nodeState is a compact state (idle, mix, drain…) with Slurm's flag
	// suffixes: * not responding, ~ powered off, # powering up, ! and %
	// powering down, $ maintenance, @ reboot pending, ^ reboot issued,
	// - planned.
	nodeState = regexp.MustCompile(`^([a-z_]{1,16})([*~#!%$@^+-]{0,4})$`)
	// gresName and gresType match a GRES's name and type (a100,
	// 1g.10gb, mi250x).
	gresName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]{0,63}$`)
	gresType = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)
)

// usableStates are the base states of a node that takes jobs: idle, part or
// wholly allocated, completing, reserved, planned for a pending job, booting
// or powering up. Down, drained, draining, failing, in maintenance, not
// responding (the '*' flag) or in an unknown state, it does not.
var usableStates = map[string]bool{
	"idle": true, "mix": true, "alloc": true, "comp": true, "resv": true,
	"plnd": true, "boot": true, "pow_up": true,
}

// UsableNodeState reports whether a node in the compact state s (sinfo's
// %t) takes new jobs. A powered-down node of a power-saving site (idle~)
// does: Slurm starts it for a job.
func UsableNodeState(s string) bool {
	m := nodeState.FindStringSubmatch(s)
	if m == nil || !usableStates[m[1]] {
		return false
	}
	return !strings.ContainsAny(m[2], "*$")
}

// sinfoCmd is the sinfo command line listing each node of partitions (all
// the caller may see when empty) once per partition, in records ended by
// sep. The site account's SINFO_PARTITION and SINFO_ALL would change which
// partitions are listed (and, set together, make sinfo fail): they are
// unset. Partitions named with --partition are listed even when hidden.
func sinfoCmd(sep string, partitions []string) []string {
	args := []string{"env", "-u", "SINFO_PARTITION", "-u", "SINFO_ALL",
		"sinfo", "--noheader", "--Node", "-o", strings.Join(sinfoFields, sep) + sep}
	if len(partitions) > 0 {
		args = append(args, "--partition="+strings.Join(partitions, ","))
	}
	return args
}

// Capacity reads what the nodes of partitions offer with one sinfo call;
// with no partitions, those of the site's default partition. Malformed
// records are left out and logged; a call that finds no node is an error,
// so that a caller keeps what it knew.
func (c *Client) Capacity(ctx context.Context, partitions []string) (Capacity, error) {
	for _, p := range partitions {
		if !partitionName.MatchString(p) {
			return Capacity{}, fmt.Errorf("sinfo: invalid partition name %q", p)
		}
	}
	sep := newSeparator()
	out, err := c.Site.Run(ctx, nil, sinfoCmd(sep, partitions)...)
	if err != nil {
		return Capacity{}, fmt.Errorf("sinfo: %w", err)
	}
	nodes, err := parseSinfo(out, sep)
	if err != nil {
		c.malformed("sinfo", err)
	}
	return sumCapacity(nodes, partitions)
}

// sumCapacity adds up the distinct nodes of partitions (of the default
// partition when empty). A node listed with different figures in two
// partitions counts with its first.
func sumCapacity(nodes []sinfoNode, partitions []string) (Capacity, error) {
	want := func(n sinfoNode) bool {
		if len(partitions) == 0 {
			return n.Default
		}
		return slices.Contains(partitions, n.Partition)
	}
	c := Capacity{Total: Amounts{GRES: map[GRESKey]int64{}}, Available: Amounts{GRES: map[GRESKey]int64{}}}
	seen := map[string]bool{}
	for _, n := range nodes {
		if !want(n) {
			continue
		}
		if !slices.Contains(c.Partitions, n.Partition) {
			c.Partitions = append(c.Partitions, n.Partition)
		}
		if seen[n.Name] {
			continue
		}
		seen[n.Name] = true
		c.Nodes++
		c.Total.add(n)
		if UsableNodeState(n.State) {
			c.Usable++
			c.Available.add(n)
		}
	}
	slices.Sort(c.Partitions)
	for _, p := range partitions {
		if !slices.Contains(c.Partitions, p) && !slices.Contains(c.Empty, p) {
			c.Empty = append(c.Empty, p)
		}
	}
	if c.Nodes == 0 {
		if len(partitions) == 0 {
			return c, errors.New("sinfo: no node in a default partition")
		}
		return c, fmt.Errorf("sinfo: no node in partition %s", strings.Join(partitions, ","))
	}
	return c, nil
}

// add adds a node's amounts, which the parser bounded so that no sum over
// maxSinfoNodes overflows.
func (r *Amounts) add(n sinfoNode) {
	r.CPUs += n.CPUs
	r.MemoryMiB += n.MemoryMiB
	for k, v := range n.GRES {
		r.GRES[k] += v
	}
}

// parseSinfo parses sinfo output in records ended by sep. Malformed records
// are left out and reported together in err; the others are returned all
// the same.
func parseSinfo(out []byte, sep string) ([]sinfoNode, error) {
	if len(out) > maxSinfoOutput {
		return nil, fmt.Errorf("sinfo: output over %d bytes", maxSinfoOutput)
	}
	records, errs := splitRecords(out, sep, len(sinfoFields))
	if len(records) > maxSinfoNodes {
		records = records[:maxSinfoNodes]
		errs = append(errs, fmt.Errorf("over %d records", maxSinfoNodes))
	}
	for i := range errs {
		errs[i] = fmt.Errorf("sinfo: %w", errs[i])
	}
	var nodes []sinfoNode
	for _, f := range records {
		n, err := parseSinfoRecord(f)
		if err != nil {
			errs = append(errs, fmt.Errorf("sinfo: %w", err))
			continue
		}
		nodes = append(nodes, n)
	}
	return nodes, errors.Join(errs...)
}

// parseSinfoRecord parses the fields of one record (sinfoFields).
func parseSinfoRecord(f []string) (sinfoNode, error) {
	quoted := strings.Join(f, "|")
	if len(quoted) > 2*maxGRESFieldLen {
		quoted = quoted[:2*maxGRESFieldLen] + "…"
	}
	n := sinfoNode{Name: f[0], State: f[5]}
	if !sinfoNodeName.MatchString(n.Name) {
		return n, fmt.Errorf("malformed node name in %q", quoted)
	}
	var err error
	if n.CPUs, err = boundedInt(f[1], maxNodeCPUs); err != nil {
		return n, fmt.Errorf("node %s: CPUs: %w", n.Name, err)
	}
	if n.MemoryMiB, err = boundedInt(f[2], maxNodeMemory); err != nil {
		return n, fmt.Errorf("node %s: memory: %w", n.Name, err)
	}
	if n.GRES, err = parseGRES(f[3]); err != nil {
		return n, fmt.Errorf("node %s: gres: %w", n.Name, err)
	}
	n.Partition, n.Default = strings.CutSuffix(f[4], "*")
	if !partitionName.MatchString(n.Partition) {
		return n, fmt.Errorf("node %s: malformed partition in %q", n.Name, quoted)
	}
	if !nodeState.MatchString(n.State) {
		return n, fmt.Errorf("node %s: malformed state in %q", n.Name, quoted)
	}
	return n, nil
}

// boundedInt parses a whole number from 0 to limit.
func boundedInt(s string, limit int64) (int64, error) {
	v, err := strconv.ParseInt(s, 10, 64)
	switch {
	case err != nil || len(s) == 0 || s[0] < '0' || s[0] > '9':
		return 0, fmt.Errorf("not a whole number: %.32q", s)
	case v > limit:
		return 0, fmt.Errorf("%d is over %d", v, limit)
	}
	return v, nil
}

// parseGRES parses a node's generic resources as sinfo's %G prints them:
// "(null)", or entries separated by commas, each
// name[:type][:no_consume][:count][(S:sockets)], count a whole number with
// an optional K, M, G, T or P suffix (powers of 1024), 1 when left out.
// no_consume resources are shared, not taken: they are left out.
func parseGRES(s string) (map[GRESKey]int64, error) {
	out := map[GRESKey]int64{}
	if s == "(null)" || s == "" {
		return out, nil
	}
	if len(s) > maxGRESFieldLen {
		return nil, fmt.Errorf("over %d bytes", maxGRESFieldLen)
	}
	entries, err := splitGRES(s)
	if err != nil {
		return nil, err
	}
	if len(entries) > maxGRESPerNode {
		return nil, fmt.Errorf("over %d entries", maxGRESPerNode)
	}
	for _, e := range entries {
		k, n, consumed, err := parseGRESEntry(e)
		if err != nil {
			return nil, err
		}
		if !consumed {
			continue
		}
		if out[k] += n; out[k] > maxNodeGRES {
			return nil, fmt.Errorf("%s over %d", e, int64(maxNodeGRES))
		}
	}
	return out, nil
}

// splitGRES splits s at the commas outside parentheses ("gpu:a100:2(S:0,2)"
// holds one).
func splitGRES(s string) ([]string, error) {
	var entries []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			if depth--; depth < 0 {
				return nil, fmt.Errorf("unbalanced parentheses in %q", s)
			}
		case ',':
			if depth == 0 {
				entries = append(entries, s[start:i])
				start = i + 1
			}
		}
	}
	if depth != 0 {
		return nil, fmt.Errorf("unbalanced parentheses in %q", s)
	}
	return append(entries, s[start:]), nil
}

// gresSocketSuffix matches the sockets a GRES is bound to: "(S:0-1)".
var gresSocketSuffix = regexp.MustCompile(`\(S:[0-9,-]{1,256}\)$`)

// parseGRESEntry parses one entry of parseGRES.
func parseGRESEntry(e string) (k GRESKey, n int64, consumed bool, err error) {
	body := gresSocketSuffix.ReplaceAllString(e, "")
	parts := strings.Split(body, ":")
	if len(parts) > 4 {
		return k, 0, false, fmt.Errorf("malformed entry %q", e)
	}
	k.Name, parts = parts[0], parts[1:]
	if !gresName.MatchString(k.Name) {
		return k, 0, false, fmt.Errorf("malformed name in %q", e)
	}
	consumed, n = true, 1
	if len(parts) > 0 {
		last := parts[len(parts)-1]
		if last != "" && last[0] >= '0' && last[0] <= '9' {
			if n, err = gresCount(last); err != nil {
				return k, 0, false, fmt.Errorf("%q: %w", e, err)
			}
			parts = parts[:len(parts)-1]
		}
	}
	if len(parts) > 0 && parts[len(parts)-1] == "no_consume" {
		consumed, parts = false, parts[:len(parts)-1]
	}
	switch {
	case len(parts) > 1:
		return k, 0, false, fmt.Errorf("malformed entry %q", e)
	case len(parts) == 1:
		if !gresType.MatchString(parts[0]) {
			return k, 0, false, fmt.Errorf("malformed type in %q", e)
		}
		k.Type = parts[0]
	}
	return k, n, consumed, nil
}

// gresCount parses a GRES count: digits with an optional K, M, G, T or P.
func gresCount(s string) (int64, error) {
	v, err := suffixedInt(s, maxNodeGRES)
	if err != nil {
		return 0, fmt.Errorf("count: %w", err)
	}
	return v, nil
}
