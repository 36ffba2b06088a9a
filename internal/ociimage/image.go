package ociimage

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Annotations naming the image in the archive's index: containerd's (a full
// reference, which `ctr images import` uses as the image's name) and the
// OCI one (the tag).
const (
	AnnotationContainerdName = "io.containerd.image.name"
	AnnotationRefName        = "org.opencontainers.image.ref.name"
)

// Image is what an image archive holds: its layers, bottom first, and its
// configuration.
type Image struct {
	// Name is the image's full reference, such as
	// ghcr.io/sluice-hpc/sluice-tunnel:v1.2.3, which it has once imported.
	Name   string
	Layers [][]File
	Config v1.Config
	// Created dates the image, its history and every file in its layers.
	// The zero value means the Unix epoch.
	Created time.Time
	// OS and Architecture default to linux and the building machine's.
	OS, Architecture string
}

// createdBy is the history's note of what made each layer.
const createdBy = "sluice hack/tools/images"

// Build assembles img with go-containerregistry: OCI media types, one layer
// per img.Layers, every date img.Created, the org.opencontainers.image.*
// labels copied to the manifest's annotations.
func Build(img Image) (v1.Image, error) {
	if img.Name == "" {
		return nil, errors.New("build image: no name")
	}
	if len(img.Layers) == 0 {
		return nil, fmt.Errorf("build image %s: no layers", img.Name)
	}
	created := img.dated()
	osName, arch := img.platform()
	out := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	out = mutate.ConfigMediaType(out, types.OCIConfigJSON)
	for i, files := range img.Layers {
		l, err := layer(files, created)
		if err != nil {
			return nil, fmt.Errorf("build image %s: layer %d: %w", img.Name, i, err)
		}
		out, err = mutate.Append(out, mutate.Addendum{
			Layer:     l,
			MediaType: types.OCILayer,
			History:   v1.History{Created: v1.Time{Time: created}, CreatedBy: createdBy},
		})
		if err != nil {
			return nil, fmt.Errorf("build image %s: layer %d: %w", img.Name, i, err)
		}
	}
	cf, err := out.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("build image %s: config: %w", img.Name, err)
	}
	cf = cf.DeepCopy()
	cf.Created = v1.Time{Time: created}
	cf.OS, cf.Architecture = osName, arch
	cf.Config = img.Config
	if out, err = mutate.ConfigFile(out, cf); err != nil {
		return nil, fmt.Errorf("build image %s: config: %w", img.Name, err)
	}
	if a := imageAnnotations(img.Config.Labels); a != nil {
		out = mutate.Annotations(out, a).(v1.Image)
	}
	return out, nil
}

// Write writes img to w as an OCI image layout tar (what `ctr images import`
// reads) and returns its manifest's digest, the image's digest once
// imported. The layout is written by go-containerregistry into a temporary
// directory, then packed by Pack.
func Write(w io.Writer, img Image) (string, error) {
	built, err := Build(img)
	if err != nil {
		return "", err
	}
	osName, arch := img.platform()
	return writeTar(w, img.Name, img.dated(), func(p layout.Path, opts ...layout.Option) error {
		return p.AppendImage(built, append(opts, layout.WithPlatform(v1.Platform{OS: osName, Architecture: arch}))...)
	}, built.Digest)
}

// Index assembles the images of one name built for several platforms into
// an OCI image index, each manifest's descriptor carrying its platform, in
// the order given: the same images give the same index.
func Index(imgs []Image) (v1.ImageIndex, error) {
	if len(imgs) == 0 {
		return nil, errors.New("build index: no images")
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	var adds []mutate.IndexAddendum
	for _, img := range imgs {
		if img.Name != imgs[0].Name {
			return nil, fmt.Errorf("build index %s: holds %s too", imgs[0].Name, img.Name)
		}
		built, err := Build(img)
		if err != nil {
			return nil, err
		}
		osName, arch := img.platform()
		adds = append(adds, mutate.IndexAddendum{Add: built, Descriptor: v1.Descriptor{
			MediaType: types.OCIManifestSchema1, Platform: &v1.Platform{OS: osName, Architecture: arch}}})
	}
	idx = mutate.AppendManifests(idx, adds...)
	if a := imageAnnotations(imgs[0].Config.Labels); a != nil {
		idx = mutate.Annotations(idx, a).(v1.ImageIndex)
	}
	return idx, nil
}

// WriteIndexLayout writes idx, named name (a full reference), as an OCI
// image layout in dir, which must not exist or be empty: its index.json
// names the one image index. `crane push DIR REF` pushes it whole.
func WriteIndexLayout(dir, name string, idx v1.ImageIndex) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write index %s: %w", name, err)
	}
	if err := writeLayout(dir, name, func(p layout.Path, opts ...layout.Option) error {
		return p.AppendIndex(idx, opts...)
	}); err != nil {
		return fmt.Errorf("write index %s: %w", name, err)
	}
	return nil
}

// layoutAppender adds one image or index to a layout, with the options
// naming it.
type layoutAppender func(p layout.Path, opts ...layout.Option) error

// writeLayout writes a layout holding what add adds, named name, into dir.
func writeLayout(dir, name string, add layoutAppender) error {
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	return add(p, layout.WithAnnotations(map[string]string{AnnotationContainerdName: name, AnnotationRefName: tagOf(name)}))
}

// writeTar writes a layout holding what add adds into a temporary
// directory, packs it to w dated mtime, and returns the digest digest
// gives.
func writeTar(w io.Writer, name string, mtime time.Time, add layoutAppender, digest func() (v1.Hash, error)) (string, error) {
	d, err := digest()
	if err != nil {
		return "", fmt.Errorf("write image %s: %w", name, err)
	}
	dir, err := os.MkdirTemp("", "sluice-oci-")
	if err != nil {
		return "", fmt.Errorf("write image %s: %w", name, err)
	}
	defer os.RemoveAll(dir)
	if err := writeLayout(dir, name, add); err != nil {
		return "", fmt.Errorf("write image %s: %w", name, err)
	}
	if err := Pack(w, dir, mtime); err != nil {
		return "", fmt.Errorf("write image %s: %w", name, err)
	}
	return d.String(), nil
}

func (img Image) dated() time.Time {
	if img.Created.IsZero() {
		return time.Unix(0, 0).UTC()
	}
	return img.Created.UTC()
}

func (img Image) platform() (osName, arch string) {
	osName, arch = img.OS, img.Architecture
	if osName == "" {
		osName = "linux"
	}
	if arch == "" {
		arch = runtime.GOARCH
	}
	return osName, arch
}

// layer makes a gzip layer of files from their deterministic tar.
func layer(files []File, mtime time.Time) (v1.Layer, error) {
	raw, err := Tar(files, mtime)
	if err != nil {
		return nil, err
	}
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(raw)), nil
	}, tarball.WithMediaType(types.OCILayer), tarball.WithCompressionLevel(gzip.BestCompression))
}

// imageAnnotations copies the org.opencontainers.image.* labels to the
// manifest, where registries show them.
func imageAnnotations(labels map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range labels {
		if strings.HasPrefix(k, "org.opencontainers.image.") {
			out[k] = v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// tagOf returns the tag of reference ref, or "latest" if it has none.
func tagOf(ref string) string {
	name := ref[strings.LastIndex(ref, "/")+1:]
	if i := strings.LastIndex(name, ":"); i >= 0 {
		return name[i+1:]
	}
	return "latest"
}

// Pack writes the files under dir to w as a tar, sorted by path, owned by
// root, directories 0755 and files 0644, every entry dated mtime: the same
// tree gives the same bytes.
func Pack(w io.Writer, dir string, mtime time.Time) error {
	tw := tar.NewWriter(w)
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		name := filepath.ToSlash(rel)
		h := &tar.Header{Name: name, ModTime: mtime, Format: tar.FormatPAX}
		switch {
		case d.IsDir():
			h.Typeflag, h.Name, h.Mode = tar.TypeDir, name+"/", 0o755
			return tw.WriteHeader(h)
		case d.Type().IsRegular():
		default:
			return fmt.Errorf("pack %s: %s is not a file or a directory", dir, name)
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		fi, err := f.Stat()
		if err != nil {
			return err
		}
		h.Typeflag, h.Mode, h.Size = tar.TypeReg, 0o644, fi.Size()
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		_, err = io.Copy(tw, f)
		return err
	})
	if err != nil {
		return fmt.Errorf("pack: %w", err)
	}
	return tw.Close()
}

// Unpack extracts an archive Write wrote (an OCI layout tar) into dir, which
// go-containerregistry's layout package then reads. It takes regular files
// and directories only, each inside dir.
func Unpack(r io.Reader, dir string) (layout.Path, error) {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return "", fmt.Errorf("unpack: %w", err)
		}
		name := filepath.Clean(filepath.FromSlash(h.Name))
		if !filepath.IsLocal(name) {
			return "", fmt.Errorf("unpack: %q leaves the directory", h.Name)
		}
		p := filepath.Join(dir, name)
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(p, 0o755)
		case tar.TypeReg:
			err = unpackFile(tr, p)
		default:
			err = fmt.Errorf("%s is not a file or a directory", h.Name)
		}
		if err != nil {
			return "", fmt.Errorf("unpack: %w", err)
		}
	}
	return layout.FromPath(dir)
}

func unpackFile(r io.Reader, p string) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
