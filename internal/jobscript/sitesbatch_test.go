package jobscript

import (
	"context"
	"strings"
	"testing"

	"github.com/sluice-hpc/sluice/internal/jobscript/scripttest"
	"github.com/sluice-hpc/sluice/internal/sbatch"
	"github.com/sluice-hpc/sluice/internal/sbatch/sbatchtest"
)

// A pod's flags reach the job through the site's table: an option of 24.11
// that 22.05 lacks is refused on 22.05 and accepted on 24.11.
func TestFromPodChecksFlagsBySite(t *testing.T) {
	const annotation = "--tres-per-task=gres/gpu:1 -p gpu"
	pod := scripttest.SimplePod("busybox")
	pod.Annotations = map[string]string{AnnotationFlags: annotation}
	for _, tc := range []struct {
		version string
		ok      bool
	}{{"22.05.8", false}, {"24.11.5", true}} {
		l := sbatchtest.ReadListing(t, tc.version)
		tab, err := sbatch.FromListing(l.Version, []byte(l.Help), []byte(l.Usage))
		if err != nil {
			t.Fatal(err)
		}
		_, err = FromPod(context.Background(), pod, nil, PodOptions{Runtime: RuntimeApptainer, Site: SiteOptions{Sbatch: tab}})
		if (err == nil) != tc.ok {
			t.Errorf("FromPod on sbatch %s: got %v; want accepted %v", tab.Version, err, tc.ok)
		}
	}
}

// FuzzScriptTakesSplitFlags checks that every flag SplitFlags accepts
// becomes exactly one #SBATCH line of the rendered script, read by sbatch as
// exactly that flag.
func FuzzScriptTakesSplitFlags(f *testing.F) {
	for _, s := range []string{
		"--partition=gpu\n--exclusive", "-p gpu -t 01:00:00 --mem=4G", "-N 2 --ntasks-per-node=4",
		`--constraint="a&b" -C 'x|y'`, "-pgpu", "--qos high", "--exclusive user",
		"--mem=1G\n\n --time=10 ", "--export=NONE",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, annotation string) {
		flags, err := sbatch.SplitFlags(annotation)
		if err != nil {
			return
		}
		job := testJob()
		job.Flags = flags
		script, err := Script(job, ScriptOptions{JobDir: "/data/ns-uid", Runtime: RuntimeApptainer})
		if err != nil {
			t.Fatalf("Script refused flags SplitFlags accepted (%q): %v", flags, err)
		}
		header := sbatchtest.Header(string(script))
		const fixed = 4 // --job-name, --output, --error, --chdir (no --comment by default)
		if len(header) != fixed+len(flags) {
			t.Fatalf("got %d #SBATCH lines for %d flags; want %d:\n%s", len(header), len(flags), fixed+len(flags), strings.Join(header, "\n"))
		}
		for i, flag := range flags {
			line := header[fixed+i]
			if words := sbatchtest.Words(line); len(words) != 1 || words[0] != flag {
				t.Fatalf("sbatch reads %q as %q; want [%q]", line, words, flag)
			}
		}
	})
}
