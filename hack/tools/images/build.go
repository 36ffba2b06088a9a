package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
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
	// release: for each image, an OCI index of archs (sluice-vk and
	// sluice-tunnel), its SBOM, the chart packaged with helm, and
	// SHA256SUMS (release.go).
	release bool
	archs   []string
	helm    string
	// push is the registry prefix (host[:port]/path) the images are
	// pushed to, if any; pushCA a PEM file of CAs it may be signed by
	// beside the system's (push.go).
	push, pushCA string
}

// versionVar is where -ldflags -X stamps the version.
const versionVar = "github.com/sluice-hpc/sluice/internal/version.version"

// stampable is what a version stamped with -X may hold.
var stampable = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._+-]*$`)

// built is one image (or, in a release, one index) written to o.out.
type built struct {
	name, digest, file string
}

func (b built) line() string { return b.name + " " + b.digest + " " + b.file }

// build builds the images o names into o.out and returns a line per image:
// "NAME DIGEST FILE", also written to o.out/images.txt. With o.release,
// each is an index of o.archs, with the release's other files beside it.
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
	bb := &binaryBuilder{root: root, dir: tmp, version: s.version}

	var out []built
	if o.release {
		out, err = buildRelease(ctx, bb, o, s)
	} else {
		out, err = buildImages(ctx, bb, o, s)
	}
	if err != nil {
		return nil, err
	}
	var lines []string
	for _, b := range out {
		lines = append(lines, b.line())
	}
	list := strings.Join(lines, "\n") + "\n"
	if err := os.WriteFile(filepath.Join(o.out, "images.txt"), []byte(list), 0o644); err != nil {
		return nil, err
	}
	return lines, nil
}

// buildImages writes each image for o.arch as an archive, and pushes it
// when o.push is set.
func buildImages(ctx context.Context, bb *binaryBuilder, o options, s stamp) ([]built, error) {
	var out []built
	for _, name := range o.images {
		img, _, err := image(ctx, bb, o, s, name, o.arch)
		if err != nil {
			return nil, err
		}
		file := filepath.Join(o.out, name+".tar")
		digest, err := writeArchive(file, img)
		if err != nil {
			return nil, err
		}
		if o.push != "" {
			v1img, err := ociimage.Build(img)
			if err != nil {
				return nil, err
			}
			if err := pushImage(ctx, o, img.Name, v1img); err != nil {
				return nil, err
			}
			// the digest pulled by: the registry's manifest, as pushed
			d, err := v1img.Digest()
			if err != nil {
				return nil, fmt.Errorf("digest of %s: %w", img.Name, err)
			}
			digest = d.String()
		}
		out = append(out, built{img.Name, digest, file})
	}
	return out, nil
}

// image lays out the image name for arch; it returns the binaries' files
// too (none for coredns, which is built elsewhere).
func image(ctx context.Context, bb *binaryBuilder, o options, s stamp, name, arch string) (ociimage.Image, []builtBinary, error) {
	if name == "coredns" {
		img, err := corednsImage(ctx, o, s)
		return img, nil, err
	}
	sp, ok := specs[name]
	if !ok {
		return ociimage.Image{}, nil, fmt.Errorf("unknown image %q (want sluice-tunnel, sluice-vk, pause or coredns)", name)
	}
	return goImage(ctx, bb, o, s, sp, arch)
}

// builtBinary is a binary built for an image: where it lies here.
type builtBinary struct {
	binary
	file string
}

// binaryBuilder builds each package once per architecture into dir.
type binaryBuilder struct {
	root, dir, version string
}

// build builds b for arch (b.arch if set) and returns where it lies.
func (bb *binaryBuilder) build(ctx context.Context, b binary, arch string) (builtBinary, error) {
	if b.arch != "" {
		arch = b.arch
	}
	b.arch = arch
	out := filepath.Join(bb.dir, arch, path.Base(b.pkg))
	if _, err := os.Stat(out); err == nil {
		return builtBinary{b, out}, nil
	}
	if err := goBuild(ctx, bb.root, b.pkg, out, bb.version, arch); err != nil {
		return builtBinary{}, err
	}
	return builtBinary{b, out}, nil
}

// goImage builds the binaries of sp for arch and lays them out on the
// nonroot files.
func goImage(ctx context.Context, bb *binaryBuilder, o options, s stamp, sp spec, arch string) (ociimage.Image, []builtBinary, error) {
	files := nonrootFiles()
	var bins []builtBinary
	for _, b := range sp.binaries {
		bin, err := bb.build(ctx, b, arch)
		if err != nil {
			return ociimage.Image{}, nil, err
		}
		data, err := os.ReadFile(bin.file)
		if err != nil {
			return ociimage.Image{}, nil, err
		}
		files = append(files, ociimage.File{Path: b.path, Mode: 0o755, Data: data})
		bins = append(bins, bin)
	}
	img := ociimage.Image{
		Name:   sp.ref(s),
		Layers: [][]ociimage.File{files},
		Config: v1.Config{
			User: nonrootIDs, WorkingDir: "/", Env: []string{"PATH=/usr/local/bin"},
			Labels: s.labels(sp.name, o.source, s.version),
		},
		Created: s.created, Architecture: arch,
	}
	sp.configure(&img)
	return img, bins, nil
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
