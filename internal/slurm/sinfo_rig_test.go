//go:build rig

package slurm

import (
	"context"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/jobscript"
)

// The capacity read from the rig's sinfo, as alice, is what scontrol tells
// of the default partition's nodes (the rig's slurm.conf: node1, 4 CPUs,
// 2000 MB, Gres=gpu:2, in partition debug, the default).
func TestRigCapacity(t *testing.T) {
	eachSite(t, func(t *testing.T, on rigSite) {
		e := newRigEnv(t, on, jobscript.RuntimeNone)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		got, err := e.c.Capacity(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		explicit, err := e.c.Capacity(ctx, got.Partitions)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got.Partitions, []string{"debug"}) || !slices.Equal(explicit.Partitions, got.Partitions) ||
			!sameResources(explicit.Total, got.Total) {
			t.Errorf("default partition %+v, named %+v; want debug both times, alike", got, explicit)
		}
		show, err := e.site.Run(ctx, nil, "scontrol", "show", "node", "-o", e.node)
		if err != nil {
			t.Fatalf("scontrol show node: %v", err)
		}
		field := func(name string) string {
			m := regexp.MustCompile(`(?:^| )` + name + `=(\S*)`).FindSubmatch(show)
			if m == nil {
				t.Fatalf("scontrol show node: no %s in %q", name, show)
			}
			return string(m[1])
		}
		cpus, _ := strconv.ParseInt(field("CPUTot"), 10, 64)
		mem, _ := strconv.ParseInt(field("RealMemory"), 10, 64)
		gres := field("Gres")
		want := Amounts{CPUs: cpus, MemoryMiB: mem, GRES: map[GRESKey]int64{}}
		if want.GRES, err = parseGRES(gres); err != nil {
			t.Fatalf("scontrol's Gres=%s: %v", gres, err)
		}
		if got.Nodes != 1 || !sameResources(got.Total, want) || cpus != 4 || mem != 2000 || want.GRES[GRESKey{Name: "gpu"}] != 2 {
			t.Errorf("sinfo gives %+v; scontrol shows CPUTot=%d RealMemory=%d Gres=%s (slurm.conf: 4, 2000, gpu:2)", got, cpus, mem, gres)
		}
		state := field("State")
		if usable := UsableNodeState(map[string]string{"IDLE": "idle", "MIXED": "mix", "ALLOCATED": "alloc"}[state]); usable != (got.Usable == 1) {
			t.Errorf("scontrol shows State=%s; sinfo counts %d usable nodes", state, got.Usable)
		}
		// sinfo lists nothing, and exits 0, for a partition it does not have.
		if _, err := e.c.Capacity(ctx, []string{"nosuchpartition"}); err == nil {
			t.Error("a partition the site does not have gave no error")
		}
		if c, err := e.c.Capacity(ctx, []string{"debug", "nosuchpartition"}); err != nil || c.Nodes != 1 || !slices.Equal(c.Empty, []string{"nosuchpartition"}) {
			t.Errorf("debug and nosuchpartition: %+v, %v; want debug's node, nosuchpartition told empty", c, err)
		}
	})
}
