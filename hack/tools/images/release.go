package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/sluice-hpc/sluice/internal/ociimage"
)

// releaseImages are the images a release ships; the rig's own (pause,
// coredns) are not released.
var releaseImages = []string{"sluice-vk", "sluice-tunnel"}

// buildRelease writes, for each image, an OCI index of o.archs as an OCI
// layout directory (NAME/, which crane push takes) and as its tar
// (NAME.tar: skopeo's oci-archive, ctr import), and its SBOM
// (NAME.spdx.json); then the chart packaged by o.helm, if set, and
// SHA256SUMS of every file. Indexes are pushed when o.push is set.
func buildRelease(ctx context.Context, bb *binaryBuilder, o options, s stamp) ([]built, error) {
	if len(o.archs) == 0 {
		return nil, fmt.Errorf("release: no architectures")
	}
	var out []built
	for _, name := range o.images {
		if !slices.Contains(releaseImages, name) {
			return nil, fmt.Errorf("release: image %q is not released (want %v)", name, releaseImages)
		}
		b, err := releaseImage(ctx, bb, o, s, name)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	if o.helm != "" {
		if _, err := packageChart(ctx, o.helm, bb.root, o.out, s); err != nil {
			return nil, err
		}
	}
	if err := writeSums(o.out); err != nil {
		return nil, err
	}
	return out, nil
}

// releaseImage builds the index of one image and writes what belongs to it.
func releaseImage(ctx context.Context, bb *binaryBuilder, o options, s stamp, name string) (built, error) {
	var imgs []ociimage.Image
	var bins []builtBinary
	for _, arch := range o.archs {
		img, b, err := image(ctx, bb, o, s, name, arch)
		if err != nil {
			return built{}, err
		}
		imgs = append(imgs, img)
		bins = append(bins, b...)
	}
	idx, err := ociimage.Index(imgs)
	if err != nil {
		return built{}, err
	}
	digest, err := idx.Digest()
	if err != nil {
		return built{}, fmt.Errorf("index %s: %w", name, err)
	}
	dir := filepath.Join(o.out, name)
	if err := os.RemoveAll(dir); err != nil {
		return built{}, err
	}
	if err := ociimage.WriteIndexLayout(dir, imgs[0].Name, idx); err != nil {
		return built{}, err
	}
	file := filepath.Join(o.out, name+".tar")
	if err := packFile(file, dir, s); err != nil {
		return built{}, err
	}
	sbom, err := spdxDocument(name, imgs[0].Name, digest.String(), s, bins)
	if err != nil {
		return built{}, err
	}
	if err := os.WriteFile(filepath.Join(o.out, name+".spdx.json"), sbom, 0o644); err != nil {
		return built{}, err
	}
	if o.push != "" {
		if err := pushIndex(ctx, o, imgs[0].Name, idx); err != nil {
			return built{}, err
		}
	}
	return built{imgs[0].Name, digest.String(), file}, nil
}

// packFile packs the layout in dir into file, through a temporary file
// renamed into place.
func packFile(file, dir string, s stamp) error {
	f, err := os.CreateTemp(filepath.Dir(file), ".layout-*.tar")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	err = ociimage.Pack(f, dir, s.created)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Chmod(f.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(f.Name(), file)
}
