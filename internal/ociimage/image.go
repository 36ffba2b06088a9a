package ociimage

import (
	"archive/tar"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"time"
)

// Media types of the OCI image specification.
const (
	MediaTypeIndex    = "application/vnd.oci.image.index.v1+json"
	MediaTypeManifest = "application/vnd.oci.image.manifest.v1+json"
	MediaTypeConfig   = "application/vnd.oci.image.config.v1+json"
	MediaTypeLayer    = "application/vnd.oci.image.layer.v1.tar+gzip"
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
	Config Config
	// Created dates the image, its history and every file in its layers.
	// The zero value means the Unix epoch.
	Created time.Time
	// OS and Architecture default to linux and the building machine's.
	OS, Architecture string
}

// Config is the part of the image configuration a container runs with.
type Config struct {
	User       string            `json:"User,omitempty"`
	Env        []string          `json:"Env,omitempty"`
	Entrypoint []string          `json:"Entrypoint,omitempty"`
	Cmd        []string          `json:"Cmd,omitempty"`
	WorkingDir string            `json:"WorkingDir,omitempty"`
	Labels     map[string]string `json:"Labels,omitempty"`
	// ExposedPorts are "PORT/tcp" or "PORT/udp".
	ExposedPorts []string `json:"-"`
}

// Descriptor points to a blob.
type Descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations,omitempty"`
	Platform    *Platform         `json:"platform,omitempty"`
}

// Platform is a descriptor's platform.
type Platform struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
}

// Manifest is an image manifest.
type Manifest struct {
	SchemaVersion int               `json:"schemaVersion"`
	MediaType     string            `json:"mediaType"`
	Config        Descriptor        `json:"config"`
	Layers        []Descriptor      `json:"layers"`
	Annotations   map[string]string `json:"annotations,omitempty"`
}

// Index is an image index (the archive's index.json).
type Index struct {
	SchemaVersion int          `json:"schemaVersion"`
	MediaType     string       `json:"mediaType"`
	Manifests     []Descriptor `json:"manifests"`
}

// ConfigFile is the image configuration blob.
type ConfigFile struct {
	Created      string        `json:"created"`
	Architecture string        `json:"architecture"`
	OS           string        `json:"os"`
	Config       runConfig     `json:"config"`
	RootFS       RootFS        `json:"rootfs"`
	History      []HistoryItem `json:"history,omitempty"`
}

// runConfig is Config as the configuration blob spells it.
type runConfig struct {
	Config
	ExposedPortSet map[string]struct{} `json:"ExposedPorts,omitempty"`
}

// RootFS lists the layers' uncompressed digests.
type RootFS struct {
	Type    string   `json:"type"`
	DiffIDs []string `json:"diff_ids"`
}

// HistoryItem is one step of the image's history.
type HistoryItem struct {
	Created   string `json:"created"`
	CreatedBy string `json:"created_by,omitempty"`
}

// blob is one file under blobs/sha256 in the archive.
type blob struct {
	digest string
	data   []byte
}

// Write writes img to w as an OCI image layout tar and returns its
// manifest's digest, the image's digest once imported.
func Write(w io.Writer, img Image) (string, error) {
	if img.Name == "" {
		return "", errors.New("write image: no name")
	}
	if len(img.Layers) == 0 {
		return "", fmt.Errorf("write image %s: no layers", img.Name)
	}
	created := img.Created
	if created.IsZero() {
		created = time.Unix(0, 0)
	}
	created = created.UTC()
	osName, arch := img.OS, img.Architecture
	if osName == "" {
		osName = "linux"
	}
	if arch == "" {
		arch = runtime.GOARCH
	}

	var blobs []blob
	var layers []Descriptor
	var diffIDs []string
	for i, files := range img.Layers {
		l, err := buildLayer(files, created)
		if err != nil {
			return "", fmt.Errorf("write image %s: layer %d: %w", img.Name, i, err)
		}
		d := digest(l.blob)
		blobs = append(blobs, blob{d, l.blob})
		layers = append(layers, Descriptor{MediaType: MediaTypeLayer, Digest: d, Size: int64(len(l.blob))})
		diffIDs = append(diffIDs, l.diffID)
	}
	stamp := created.Format(time.RFC3339)
	cfg := ConfigFile{
		Created: stamp, Architecture: arch, OS: osName,
		Config: runConfig{Config: img.Config},
		RootFS: RootFS{Type: "layers", DiffIDs: diffIDs},
	}
	if len(img.Config.ExposedPorts) > 0 {
		cfg.Config.ExposedPortSet = map[string]struct{}{}
		for _, p := range img.Config.ExposedPorts {
			cfg.Config.ExposedPortSet[p] = struct{}{}
		}
	}
	for range diffIDs {
		cfg.History = append(cfg.History, HistoryItem{Created: stamp, CreatedBy: "sluice hack/tools/images"})
	}
	cfgJSON, err := json.Marshal(cfg)
	if err != nil {
		return "", fmt.Errorf("write image %s: config: %w", img.Name, err)
	}
	cfgDesc := Descriptor{MediaType: MediaTypeConfig, Digest: digest(cfgJSON), Size: int64(len(cfgJSON))}
	blobs = append(blobs, blob{cfgDesc.Digest, cfgJSON})

	manifest, err := json.Marshal(Manifest{
		SchemaVersion: 2, MediaType: MediaTypeManifest, Config: cfgDesc, Layers: layers,
		Annotations: imageAnnotations(img.Config.Labels),
	})
	if err != nil {
		return "", fmt.Errorf("write image %s: manifest: %w", img.Name, err)
	}
	manDesc := Descriptor{
		MediaType: MediaTypeManifest, Digest: digest(manifest), Size: int64(len(manifest)),
		Annotations: map[string]string{AnnotationContainerdName: img.Name, AnnotationRefName: tagOf(img.Name)},
		Platform:    &Platform{Architecture: arch, OS: osName},
	}
	blobs = append(blobs, blob{manDesc.Digest, manifest})
	index, err := json.Marshal(Index{SchemaVersion: 2, MediaType: MediaTypeIndex, Manifests: []Descriptor{manDesc}})
	if err != nil {
		return "", fmt.Errorf("write image %s: index: %w", img.Name, err)
	}
	if err := writeLayout(w, index, blobs, created); err != nil {
		return "", fmt.Errorf("write image %s: %w", img.Name, err)
	}
	return manDesc.Digest, nil
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

// writeLayout writes the layout's files: oci-layout, index.json and the
// blobs, sorted, each blob once.
func writeLayout(w io.Writer, index []byte, blobs []blob, mtime time.Time) error {
	slices.SortFunc(blobs, func(a, b blob) int { return strings.Compare(a.digest, b.digest) })
	blobs = slices.CompactFunc(blobs, func(a, b blob) bool { return a.digest == b.digest })
	tw := tar.NewWriter(w)
	dir := func(name string) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: 0o755, ModTime: mtime, Format: tar.FormatPAX})
	}
	file := func(name string, data []byte) error {
		h := &tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(data)), ModTime: mtime, Format: tar.FormatPAX}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	if err := file("oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)); err != nil {
		return err
	}
	if err := file("index.json", index); err != nil {
		return err
	}
	if err := dir("blobs/"); err != nil {
		return err
	}
	if err := dir("blobs/sha256/"); err != nil {
		return err
	}
	for _, b := range blobs {
		if err := file("blobs/sha256/"+strings.TrimPrefix(b.digest, "sha256:"), b.data); err != nil {
			return err
		}
	}
	return tw.Close()
}
