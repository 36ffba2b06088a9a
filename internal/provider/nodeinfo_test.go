package provider

import (
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/config"
	"github.com/sluice-hpc/sluice/internal/site"
)

func TestSetSiteInfo(t *testing.T) {
	for _, tc := range []struct {
		name        string
		runtime     string
		info        site.Info
		os, kernel  string
		cri, slurm  string
		arch, label string
	}{
		{"rig", "charliecloud", site.Info{Slurm: "22.05.8", RuntimeVersion: "0.31", OS: "Debian GNU/Linux 12 (bookworm)", Kernel: "6.1.0", Machine: "x86_64"},
			"Debian GNU/Linux 12 (bookworm)", "6.1.0", "charliecloud://0.31", "22.05.8", "amd64", "amd64"},
		{"runtime without version", "apptainer", site.Info{Slurm: "23.11.4", Machine: "aarch64"}, "", "", "apptainer", "23.11.4", "arm64", "arm64"},
		{"power", "none", site.Info{Machine: "ppc64le"}, "", "", "none", "", "ppc64le", "ppc64le"},
		{"machine without a Kubernetes name", "none", site.Info{Machine: "sparc64"}, "", "", "none", "", "sparc64", ""},
		{"slurm version not a label value", "none", site.Info{Slurm: "23.11.4+local"}, "", "", "none", "", "", ""},
		{"nothing told", "", site.Info{}, "", "", "", "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := config.Node{}
			n.Default()
			node, err := NewNode("hpc", n, 10250, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			SetSiteInfo(node, tc.runtime, tc.info)
			ni := node.Status.NodeInfo
			if ni.OSImage != tc.os || ni.KernelVersion != tc.kernel || ni.ContainerRuntimeVersion != tc.cri || node.Labels[LabelSlurmVersion] != tc.slurm {
				t.Errorf("got OS %q, kernel %q, runtime %q, slurm label %q; want %q, %q, %q, %q",
					ni.OSImage, ni.KernelVersion, ni.ContainerRuntimeVersion, node.Labels[LabelSlurmVersion], tc.os, tc.kernel, tc.cri, tc.slurm)
			}
			if ni.Architecture != tc.arch || node.Labels[LabelArch] != tc.label {
				t.Errorf("got architecture %q, label %q; want %q, %q", ni.Architecture, node.Labels[LabelArch], tc.arch, tc.label)
			}
			if ni.KubeletVersion != KubeletVersion || ni.OperatingSystem != "linux" {
				t.Errorf("kubelet version %q, OS %q changed", ni.KubeletVersion, ni.OperatingSystem)
			}
		})
	}
}

// An architecture set in Node.Labels is the operator's: the site's does not
// replace it.
func TestSetSiteInfoKeepsConfiguredArch(t *testing.T) {
	n := config.Node{Labels: map[string]string{LabelArch: "arm64"}}
	n.Default()
	node, err := NewNode("hpc", n, 10250, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	SetSiteInfo(node, "", site.Info{Machine: "x86_64"})
	if node.Labels[LabelArch] != "arm64" || node.Status.NodeInfo.Architecture != "amd64" {
		t.Errorf("got label %q, NodeInfo %q; want the configured arm64, the site's amd64", node.Labels[LabelArch], node.Status.NodeInfo.Architecture)
	}
}
