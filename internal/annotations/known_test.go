package annotations

import (
	"strings"
	"testing"
)

func TestWarnings(t *testing.T) {
	got := Warnings(map[string]string{
		Flags:                                "-p gpu",
		PreExec:                              "module load x",
		PodVPN:                               "true",
		ReverseForwards:                      "redis:6379",
		SingularityOptions:                   "--nv",
		MPIFlags:                             "--bind-to core",
		EnrootMounts:                         "/a:/b",
		"interlink.eu/shadow-same-ns":        "true",
		"interlink.eu/wg-private-key":        "secret",
		"interlink.eu/brand-new":             "x",
		"interlink.virtual-kubelet.io/other": "",
		RetiredReverseOwnerOnly:              "false",
		"example.com/unrelated":              "x",
		"slurm-job.vk.io":                    "no slash: not under the prefix",
	})
	want := []struct{ name, says string }{
		{"interlink.eu/brand-new", "interlink.eu/brand-new: sluice does not know this annotation; it has no effect here"},
		{RetiredReverseOwnerOnly, RetiredReverseOwnerOnly + ": retired, it has no effect"},
		{"interlink.eu/wg-private-key", "a private key does not belong in an annotation"},
		{"interlink.virtual-kubelet.io/other", "sluice does not know this annotation"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d warnings %+v; want %d", len(got), got, len(want))
	}
	for i, w := range want {
		if got[i].Annotation != w.name || !strings.Contains(got[i].Message, w.says) {
			t.Errorf("warning %d = %+v; want %s saying %q", i, got[i], w.name, w.says)
		}
	}
	if w := Warnings(map[string]string{Flags: "--qos=x", "app": "y", Flavor: "gpu", ImageRoot: "docker://", SingularityMounts: "-B /a"}); len(w) != 0 {
		t.Errorf("got %+v for implemented and foreign annotations; want none", w)
	}
}

// The table names each annotation once, under interLink's prefixes, and
// says what sluice does with each.
func TestTable(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range Table() {
		switch {
		case seen[k.Name]:
			t.Errorf("%s is in the table twice", k.Name)
		case !Prefixed(k.Name):
			t.Errorf("%s is not under %v", k.Name, Prefixes)
		case k.Note == "" || strings.Contains(k.Note, "\n"):
			t.Errorf("%s: note %q; want one line", k.Name, k.Note)
		}
		seen[k.Name] = true
		if got, ok := Lookup(k.Name); !ok || got != k {
			t.Errorf("Lookup(%s) = %+v, %v; want %+v", k.Name, got, ok, k)
		}
	}
	for _, name := range []string{Flags, PreExec, PodVPN, ReverseForwards, "slurm-job.vk.io/flavor", "interlink.eu/shadow-same-ns"} {
		if !seen[name] {
			t.Errorf("%s is not in the table", name)
		}
	}
}
