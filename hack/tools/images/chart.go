package main

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/sluice-hpc/sluice/internal/version"
)

// packageChart packages charts/sluice of the module in root into out with
// helm (`helm package`): version the release's without its "v", appVersion
// the image tag, so that the chart installs the images of this release.
// helm dates each file of the archive with the file's time: the chart is
// copied first, every file dated s.created, so that the same chart gives
// the same bytes. It returns the archive's path.
func packageChart(ctx context.Context, helm, root, out string, s stamp) (string, error) {
	tmp, err := os.MkdirTemp("", "sluice-chart-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	src := filepath.Join(root, "charts", "sluice")
	dst := filepath.Join(tmp, "sluice")
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		return "", fmt.Errorf("package chart: %w", err)
	}
	err = filepath.WalkDir(dst, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Chtimes(p, s.created, s.created)
	})
	if err != nil {
		return "", fmt.Errorf("package chart: %w", err)
	}
	chartVersion := strings.TrimPrefix(s.version, "v")
	cmd := exec.CommandContext(ctx, helm, "package", dst, "--destination", out,
		"--version", chartVersion, "--app-version", version.ImageTag(s.version))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("helm package: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return filepath.Join(out, "sluice-"+chartVersion+".tgz"), nil
}
