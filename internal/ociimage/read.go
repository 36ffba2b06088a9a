package ociimage

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Archive is an image archive as Read finds it.
type Archive struct {
	Index    Index
	Manifest Manifest
	Config   ConfigFile
	// Layers hold each layer's entries in the order of the tar.
	Layers [][]Entry
}

// Entry is one entry of a layer.
type Entry struct {
	Header tar.Header
	Data   []byte
}

// Read reads an OCI image layout archive holding one image, checking every
// blob it uses against its digest and size.
func Read(r io.Reader) (*Archive, error) {
	files := map[string][]byte{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read image: %w", err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return nil, fmt.Errorf("read image: %s: %w", h.Name, err)
		}
		files[h.Name] = b
	}
	var a Archive
	if err := json.Unmarshal(files["index.json"], &a.Index); err != nil {
		return nil, fmt.Errorf("read image: index.json: %w", err)
	}
	if len(a.Index.Manifests) != 1 {
		return nil, fmt.Errorf("read image: index.json has %d manifests; want 1", len(a.Index.Manifests))
	}
	blobOf := func(d Descriptor) ([]byte, error) {
		b, ok := files["blobs/sha256/"+strings.TrimPrefix(d.Digest, "sha256:")]
		if !ok {
			return nil, fmt.Errorf("read image: blob %s is missing", d.Digest)
		}
		if digest(b) != d.Digest || int64(len(b)) != d.Size {
			return nil, fmt.Errorf("read image: blob %s does not match its digest or size", d.Digest)
		}
		return b, nil
	}
	b, err := blobOf(a.Index.Manifests[0])
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &a.Manifest); err != nil {
		return nil, fmt.Errorf("read image: manifest: %w", err)
	}
	if b, err = blobOf(a.Manifest.Config); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &a.Config); err != nil {
		return nil, fmt.Errorf("read image: config: %w", err)
	}
	if len(a.Config.RootFS.DiffIDs) != len(a.Manifest.Layers) {
		return nil, fmt.Errorf("read image: %d layers but %d diff_ids", len(a.Manifest.Layers), len(a.Config.RootFS.DiffIDs))
	}
	for i, d := range a.Manifest.Layers {
		b, err := blobOf(d)
		if err != nil {
			return nil, err
		}
		entries, err := readLayer(b, a.Config.RootFS.DiffIDs[i])
		if err != nil {
			return nil, fmt.Errorf("read image: layer %d: %w", i, err)
		}
		a.Layers = append(a.Layers, entries)
	}
	return &a, nil
}

func readLayer(blob []byte, diffID string) ([]Entry, error) {
	zr, err := gzip.NewReader(bytes.NewReader(blob))
	if err != nil {
		return nil, err
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		return nil, err
	}
	if digest(raw) != diffID {
		return nil, fmt.Errorf("uncompressed digest %s; want %s", digest(raw), diffID)
	}
	var out []Entry
	tr := tar.NewReader(bytes.NewReader(raw))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return nil, err
		}
		out = append(out, Entry{Header: *h, Data: data})
	}
}
