package slurm

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sluice-hpc/sluice/internal/site"
)

// sinfoLine is one record of sinfo output with fuzzSep.
func sinfoLine(fields ...string) string { return strings.Join(fields, fuzzSep) + fuzzSep + "\n" }

// The output captured from the rig's sinfo (Slurm 22.05 and 24.11, one node
// with two GPUs) reads as the rig's slurm.conf says.
func TestParseSinfoCaptured(t *testing.T) {
	for _, name := range []string{"rig-22.05.txt", "rig-24.11.txt"} {
		t.Run(name, func(t *testing.T) {
			out, err := os.ReadFile(filepath.Join("testdata", "sinfo", name))
			if err != nil {
				t.Fatal(err)
			}
			nodes, err := parseSinfo(out, fuzzSep)
			if err != nil {
				t.Fatal(err)
			}
			c, err := sumCapacity(nodes, nil)
			if err != nil {
				t.Fatal(err)
			}
			want := Amounts{CPUs: 4, MemoryMiB: 2000, GRES: map[GRESKey]int64{{Name: "gpu"}: 2}}
			if !slices.Equal(c.Partitions, []string{"debug"}) || c.Nodes != 1 || c.Usable != 1 ||
				!sameResources(c.Total, want) || !sameResources(c.Available, want) {
				t.Errorf("got %+v; want partition debug, 1 usable node of %+v", c, want)
			}
		})
	}
}

func sameResources(a, b Amounts) bool {
	return a.CPUs == b.CPUs && a.MemoryMiB == b.MemoryMiB && maps.Equal(a.GRES, b.GRES)
}

func TestParseGRES(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want map[GRESKey]int64
	}{
		{"(null)", map[GRESKey]int64{}},
		{"gpu:2", map[GRESKey]int64{{"gpu", ""}: 2}},
		{"gpu", map[GRESKey]int64{{"gpu", ""}: 1}},
		{"gpu:a100:4(S:0-1)", map[GRESKey]int64{{"gpu", "a100"}: 4}},
		{"gpu:a100:2(S:0,2),gpu:v100:1(S:1)", map[GRESKey]int64{{"gpu", "a100"}: 2, {"gpu", "v100"}: 1}},
		{"gpu:mi250x:8(S:0-7),mps:400", map[GRESKey]int64{{"gpu", "mi250x"}: 8, {"mps", ""}: 400}},
		{"gpu:1g.10gb:7", map[GRESKey]int64{{"gpu", "1g.10gb"}: 7}},
		{"shard:2K", map[GRESKey]int64{{"shard", ""}: 2048}},
		{"bandwidth:lustre:no_consume:4G,gpu:2", map[GRESKey]int64{{"gpu", ""}: 2}},
		{"gpu:no_consume:2", map[GRESKey]int64{}},
		{"gpu:2,gpu:2", map[GRESKey]int64{{"gpu", ""}: 4}},
	} {
		got, err := parseGRES(tc.in)
		if err != nil || !maps.Equal(got, tc.want) {
			t.Errorf("parseGRES(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{
		"gpu:-1", "gpu:+1", "gpu:a100:99999999999999999999", "gpu:5P", "gpu:4294967297",
		"gpu:a:b:c:1", "gpu:a b:1", ":2", "gpu:2(S:0", "gpu:2)(", "gpu:x y", "1gpu:2",
		"gpu:a100:1,", strings.Repeat("g:1,", 1200),
	} {
		if got, err := parseGRES(bad); err == nil {
			t.Errorf("parseGRES(%q) = %v; want an error", bad, got)
		}
	}
}

func TestUsableNodeState(t *testing.T) {
	for s, want := range map[string]bool{
		"idle": true, "mix": true, "alloc": true, "comp": true, "resv": true, "plnd": true,
		"idle~": true, "idle#": true, "mix-": true, "alloc@": true, "idle%": true,
		"drain": false, "drng": false, "down": false, "down*": false, "idle*": false, "fail": false,
		"failg": false, "maint": false, "unk": false, "inval": false, "futr": false, "npc": false,
		"pow_dn": false, "idle$": false, "IDLE": false, "": false, "idle*$~#": false,
	} {
		if got := UsableNodeState(s); got != want {
			t.Errorf("UsableNodeState(%q) = %v; want %v", s, got, want)
		}
	}
}

// Nodes in two partitions count once; drained and down nodes count in the
// total, not in what is available; the default partition is sinfo's '*'.
func TestSumCapacity(t *testing.T) {
	out := sinfoLine("n1", "64", "256000", "gpu:a100:4(S:0-1)", "gpu", "mix") +
		sinfoLine("n1", "64", "256000", "gpu:a100:4(S:0-1)", "batch*", "mix") +
		sinfoLine("n2", "64", "256000", "(null)", "batch*", "drain") +
		sinfoLine("n3", "128", "512000", "(null)", "batch*", "idle~") +
		sinfoLine("n4", "32", "64000", "gpu:mi250x:8", "amd", "down*")
	nodes, err := parseSinfo([]byte(out), fuzzSep)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		partitions        []string
		nodes, usable     int
		total, available  Amounts
		countedPartitions []string
	}{
		{nil, 3, 2,
			Amounts{256, 1024000, map[GRESKey]int64{{"gpu", "a100"}: 4}},
			Amounts{192, 768000, map[GRESKey]int64{{"gpu", "a100"}: 4}}, []string{"batch"}},
		{[]string{"gpu", "amd"}, 2, 1,
			Amounts{96, 320000, map[GRESKey]int64{{"gpu", "a100"}: 4, {"gpu", "mi250x"}: 8}},
			Amounts{64, 256000, map[GRESKey]int64{{"gpu", "a100"}: 4}}, []string{"amd", "gpu"}},
	} {
		c, err := sumCapacity(nodes, tc.partitions)
		if err != nil {
			t.Fatal(err)
		}
		if c.Nodes != tc.nodes || c.Usable != tc.usable || !sameResources(c.Total, tc.total) ||
			!sameResources(c.Available, tc.available) || !slices.Equal(c.Partitions, tc.countedPartitions) {
			t.Errorf("partitions %v: got %+v; want %d nodes (%d usable), total %+v, available %+v, partitions %v",
				tc.partitions, c, tc.nodes, tc.usable, tc.total, tc.available, tc.countedPartitions)
		}
	}
	if c, err := sumCapacity(nodes, []string{"batch", "nosuch"}); err != nil || !slices.Equal(c.Empty, []string{"nosuch"}) || c.Nodes != 3 {
		t.Errorf("batch and nosuch: got %+v, %v; want batch's 3 nodes and nosuch told empty", c, err)
	}
	if _, err := sumCapacity(nodes, []string{"nosuch"}); err == nil {
		t.Error("a partition without nodes gave no error")
	}
	if _, err := sumCapacity(nodes[:1], nil); err == nil {
		t.Error("no default partition gave no error")
	}
}

// Records with absurd or malformed fields are left out and reported; the
// others still count.
func TestParseSinfoRefuses(t *testing.T) {
	good := sinfoLine("ok1", "4", "2000", "gpu:2", "debug*", "idle")
	for _, bad := range [][]string{
		{"n1", "-4", "2000", "(null)", "debug*", "idle"},
		{"n1", "9223372036854775808", "2000", "(null)", "debug*", "idle"},
		{"n1", "4", "99999999999999", "(null)", "debug*", "idle"},
		{"n1", "4", "2000", "gpu:-2", "debug*", "idle"},
		{"n1", "4", "2000", "(null)", "de bug*", "idle"},
		{"n1", "4", "2000", "(null)", "debug*", "idle; rm"},
		{"-n1", "4", "2000", "(null)", "debug*", "idle"},
		{"n1", "4+", "2000", "(null)", "debug*", "idle"},
		{"n1\nn2", "4", "2000", "(null)", "debug*", "idle"},
	} {
		nodes, err := parseSinfo([]byte(good+sinfoLine(bad...)), fuzzSep)
		if err == nil || len(nodes) != 1 || nodes[0].Name != "ok1" {
			t.Errorf("record %q: got %+v, %v; want ok1 alone and an error", bad, nodes, err)
		}
	}
	if _, err := parseSinfo(make([]byte, maxSinfoOutput+1), fuzzSep); err == nil {
		t.Error("output over the bound gave no error")
	}
}

// Capacity runs one sinfo with the partitions asked for and reads its
// records with the separator it chose; a site that fails is an error, not
// zero capacity.
func TestCapacityCommand(t *testing.T) {
	answer := func(args []string) ([]byte, error) {
		format := args[slices.Index(args, "-o")+1]
		sep := format[len("%N"):strings.Index(format, "%c")]
		return []byte(strings.Join([]string{"n1", "8", "4000", "gpu:2", "gpu", "idle"}, sep) + sep + "\n"), nil
	}
	fs := &fakeSite{handle: answer}
	c := &Client{Site: fs, DataRoot: "/data"}
	got, err := c.Capacity(context.Background(), []string{"gpu", "batch"})
	if err != nil {
		t.Fatal(err)
	}
	if got.Nodes != 1 || got.Available.CPUs != 8 || got.Available.GRES[GRESKey{Name: "gpu"}] != 2 {
		t.Errorf("got %+v; want n1's 8 CPUs and 2 GPUs", got)
	}
	if len(fs.calls) != 1 || !slices.Equal(fs.calls[0][:6], []string{"env", "-u", "SINFO_PARTITION", "-u", "SINFO_ALL", "sinfo"}) ||
		fs.calls[0][len(fs.calls[0])-1] != "--partition=gpu,batch" {
		t.Errorf("calls %q; want one sinfo --partition=gpu,batch, without the account's SINFO_PARTITION and SINFO_ALL", fs.calls)
	}
	fs.handle = func(args []string) ([]byte, error) {
		return nil, &site.ExitError{Args: args, Code: 1, Stderr: "sinfo: error: Unable to contact slurm controller"}
	}
	if _, err := c.Capacity(context.Background(), nil); err == nil || !strings.Contains(err.Error(), "slurm controller") {
		t.Errorf("err = %v; want the site's error", err)
	}
	if _, err := c.Capacity(context.Background(), []string{"a,b"}); err == nil {
		t.Error("a partition name with a comma was passed on")
	}
}
