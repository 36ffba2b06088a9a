package vk

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-hpc/sluice/internal/provider"
	"github.com/sluice-hpc/sluice/internal/site"
	"github.com/sluice-hpc/sluice/internal/slurm"
	corev1 "k8s.io/api/core/v1"
)

// The node says which table checks the pods' flags: the site's sbatch,
// learned, or the built-in one and why.
func TestLearnSbatchAnnotatesTheNode(t *testing.T) {
	bin := t.TempDir()
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, tc := range []struct {
		name, sbatch, want string
	}{
		{"learned", `case "$1" in
--version) echo "slurm 24.11.5" ;;
--help) echo "      --tres-per-task=list    list of tres required per task" ;;
--usage) echo "Usage: sbatch [--hold]" ;;
esac`, "sbatch 24.11.5: 2 options listed, 1 beyond Slurm 22.05"},
		{"not learned", `echo "sbatch: error: no controller" >&2; exit 1`,
			"built-in table of Slurm 22.05 (103 options): learn sbatch options: sbatch --version: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(filepath.Join(bin, "sbatch"), []byte("#!/bin/sh\n"+tc.sbatch+"\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			c := &slurm.Client{Site: &site.Local{}, DataRoot: t.TempDir(), Logger: log}
			n := &corev1.Node{}
			tab := learnSbatch(context.Background(), log, c, n)
			if got := n.Annotations[provider.AnnotationSbatchOptions]; !strings.HasPrefix(got, tc.want) {
				t.Errorf("annotation: got %q; want it to start %q", got, tc.want)
			}
			if (tab == nil) != (tc.name == "not learned") {
				t.Errorf("table: got %v", tab)
			}
		})
	}
}
