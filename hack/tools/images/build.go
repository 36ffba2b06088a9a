package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/sluice-hpc/sluice/internal/ociimage"
)

// options are the command line's.
type options struct {
	out      string
	images   []string
	coredns  string
	version  string
	revision string
	source   string
	arch     string
}

// versionVar is where -ldflags -X stamps the version.
const versionVar = "github.com/sluice-hpc/sluice/internal/version.version"

// stampable is what a version stamped with -X may hold.
var stampable = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._+-]*$`)

// build builds the images o names into o.out and returns a line per image:
// "NAME DIGEST FILE", also written to o.out/images.txt.
func build(ctx context.Context, o options) ([]string, error) {
	root, err := moduleRoot(ctx)
	if err != nil {
		return nil, err
	}
	s, err := sourceStamp(ctx, root, o)
	if err != nil {
		return nil, err
	}
	if !stampable.MatchString(s.version) {
		return nil, fmt.Errorf("version %q: want letters, digits and . _ + - only", s.version)
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "sluice-images-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)

	var lines []string
	for _, name := range o.images {
		var img ociimage.Image
		switch name {
		case "coredns":
			img, err = corednsImage(ctx, o, s)
		default:
			sp, ok := specs[name]
			if !ok {
				return nil, fmt.Errorf("unknown image %q (want sluice-tunnel, sluice-vk, pause or coredns)", name)
			}
			img, err = goImage(ctx, root, tmp, o, s, sp)
		}
		if err != nil {
			return nil, err
		}
		file := filepath.Join(o.out, name+".tar")
		digest, err := writeArchive(file, img)
		if err != nil {
			return nil, err
		}
		lines = append(lines, img.Name+" "+digest+" "+file)
	}
	list := strings.Join(lines, "\n") + "\n"
	if err := os.WriteFile(filepath.Join(o.out, "images.txt"), []byte(list), 0o644); err != nil {
		return nil, err
	}
	return lines, nil
}

// goImage builds the binaries of sp and lays them out on the nonroot files.
func goImage(ctx context.Context, root, tmp string, o options, s stamp, sp spec) (ociimage.Image, error) {
	files := nonrootFiles()
	for _, b := range sp.binaries {
		out := filepath.Join(tmp, filepath.Base(b.path))
		if err := goBuild(ctx, root, b.pkg, out, s.version, o.arch); err != nil {
			return ociimage.Image{}, err
		}
		data, err := os.ReadFile(out)
		if err != nil {
			return ociimage.Image{}, err
		}
		files = append(files, ociimage.File{Path: b.path, Mode: 0o755, Data: data})
	}
	img := ociimage.Image{
		Name:   sp.ref(s),
		Layers: [][]ociimage.File{files},
		Config: v1.Config{
			User: nonrootIDs, WorkingDir: "/", Env: []string{"PATH=/usr/local/bin"},
			Labels: s.labels(sp.name, o.source, s.version),
		},
		Created: s.created, Architecture: o.arch,
	}
	sp.configure(&img)
	return img, nil
}

// goBuild builds package pkg of the module in root into out, static and
// reproducible, with version stamped.
func goBuild(ctx context.Context, root, pkg, out, ver, arch string) error {
	goCmd := os.Getenv("GO")
	if goCmd == "" {
		goCmd = "go"
	}
	cmd := exec.CommandContext(ctx, goCmd, "build", "-trimpath", "-buildvcs=false", "-mod=readonly",
		"-ldflags", "-s -w -buildid= -X "+versionVar+"="+ver, "-o", out, pkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch, "GOFLAGS=")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build %s: %w: %s", pkg, err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// moduleRoot returns the directory of the main module's go.mod.
func moduleRoot(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("not inside the sluice module (go env GOMOD is empty)")
	}
	return filepath.Dir(mod), nil
}

// writeArchive writes img to file, through a temporary file renamed into
// place, and returns the image's digest.
func writeArchive(file string, img ociimage.Image) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(file), ".image-*.tar")
	if err != nil {
		return "", err
	}
	defer os.Remove(f.Name())
	digest, err := ociimage.Write(f, img)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", err
	}
	if err := os.Chmod(f.Name(), 0o644); err != nil {
		return "", err
	}
	return digest, os.Rename(f.Name(), file)
}
