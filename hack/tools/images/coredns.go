package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/sluice-hpc/sluice/internal/ociimage"
	"github.com/sluice-hpc/sluice/internal/version"
)

const corednsSource = "https://github.com/coredns/coredns"

// corednsImage lays out the CoreDNS binary o.coredns (built from its Go
// module by hack/tools/build.sh coredns) as the rig's cluster DNS image,
// tagged with the version it reports.
func corednsImage(ctx context.Context, o options, s stamp) (ociimage.Image, error) {
	if o.coredns == "" {
		return ociimage.Image{}, fmt.Errorf("image coredns: -coredns names no binary")
	}
	out, err := exec.CommandContext(ctx, o.coredns, "-version").Output()
	if err != nil {
		return ociimage.Image{}, fmt.Errorf("image coredns: %s -version: %w", o.coredns, err)
	}
	// "CoreDNS-1.15.0\nlinux/amd64, go1.26.8, "
	first, _, _ := strings.Cut(string(out), "\n")
	v, ok := strings.CutPrefix(strings.TrimSpace(first), "CoreDNS-")
	if !ok || v == "" {
		return ociimage.Image{}, fmt.Errorf("image coredns: %s -version printed %q, not CoreDNS-VERSION", o.coredns, first)
	}
	v = "v" + v
	data, err := os.ReadFile(o.coredns)
	if err != nil {
		return ociimage.Image{}, fmt.Errorf("image coredns: %w", err)
	}
	files := append(nonrootFiles(), ociimage.File{Path: "/coredns", Mode: 0o755, Data: data})
	labels := s.labels("coredns", corednsSource, v)
	return ociimage.Image{
		Name:   corednsRepository + ":" + version.ImageTag(v),
		Layers: [][]ociimage.File{files},
		Config: v1.Config{
			User: nonrootIDs, WorkingDir: "/", Labels: labels,
			Entrypoint:   []string{"/coredns"},
			ExposedPorts: ports("53/udp", "53/tcp", "8080/tcp", "8181/tcp"),
		},
		Created: s.created, Architecture: o.arch,
	}, nil
}
