package provider

import (
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/config"
	"github.com/sluice-hpc/sluice/internal/site"
)

func TestSetSiteInfo(t *testing.T) {
	for _, tc := range []struct {
		name       string
		runtime    string
		info       site.Info
		os, kernel string
		cri, slurm string
	}{
		{"rig", "charliecloud", site.Info{Slurm: "22.05.8", RuntimeVersion: "0.31", OS: "Debian GNU/Linux 12 (bookworm)", Kernel: "6.1.0"},
			"Debian GNU/Linux 12 (bookworm)", "6.1.0", "charliecloud://0.31", "22.05.8"},
		{"runtime without version", "apptainer", site.Info{Slurm: "23.11.4"}, "", "", "apptainer", "23.11.4"},
		{"slurm version not a label value", "none", site.Info{Slurm: "23.11.4+local"}, "", "", "none", ""},
		{"nothing told", "", site.Info{}, "", "", "", ""},
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
			if ni.KubeletVersion != KubeletVersion || ni.OperatingSystem != "linux" {
				t.Errorf("kubelet version %q, OS %q changed", ni.KubeletVersion, ni.OperatingSystem)
			}
		})
	}
}
