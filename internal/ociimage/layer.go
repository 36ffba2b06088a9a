// Package ociimage writes container images as OCI image layout archives
// (the tarballs `ctr images import` reads), from files given in memory,
// without a container engine or a registry. go-containerregistry assembles
// the image and writes the layout; this package gives it deterministic
// layer tars and packs the layout deterministically: every timestamp is the
// image's Created time, entries are sorted, owners and modes are the files'
// own, so the same input gives the same digests.
package ociimage

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"time"
)

// File is one entry of a layer: a regular file (Data), a directory (Dir) or
// a symbolic link (Link).
type File struct {
	// Path is absolute and clean, such as /usr/local/bin/sluice-tunnel.
	Path string
	// Mode holds the permission bits (and setuid, setgid, sticky).
	Mode     fs.FileMode
	UID, GID int
	Dir      bool
	Link     string
	Data     []byte
}

// Tar writes files into a tar, sorted by path, every entry dated mtime,
// with the owners and modes the files give: the same files give the same
// bytes. Parent directories not listed are added as root-owned 0755
// directories.
func Tar(files []File, mtime time.Time) ([]byte, error) {
	entries, err := withParents(files)
	if err != nil {
		return nil, err
	}
	var raw bytes.Buffer
	tw := tar.NewWriter(&raw)
	for _, f := range entries {
		h := &tar.Header{
			Name:    strings.TrimPrefix(f.Path, "/"),
			Mode:    int64(f.Mode.Perm()),
			Uid:     f.UID,
			Gid:     f.GID,
			ModTime: mtime,
			Format:  tar.FormatPAX,
		}
		if f.Mode&fs.ModeSetuid != 0 {
			h.Mode |= 0o4000
		}
		if f.Mode&fs.ModeSetgid != 0 {
			h.Mode |= 0o2000
		}
		if f.Mode&fs.ModeSticky != 0 {
			h.Mode |= 0o1000
		}
		switch {
		case f.Dir:
			h.Typeflag, h.Name = tar.TypeDir, h.Name+"/"
		case f.Link != "":
			h.Typeflag, h.Linkname = tar.TypeSymlink, f.Link
		default:
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.Data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("layer: %s: %w", f.Path, err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write(f.Data); err != nil {
				return nil, fmt.Errorf("layer: %s: %w", f.Path, err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("layer: %w", err)
	}
	return raw.Bytes(), nil
}

// withParents checks files, adds the directories they need and sorts them
// by path, each directory before what it holds.
func withParents(files []File) ([]File, error) {
	byPath := map[string]File{}
	for _, f := range files {
		if !path.IsAbs(f.Path) || path.Clean(f.Path) != f.Path || f.Path == "/" {
			return nil, fmt.Errorf("layer: %q is not a clean absolute path below /", f.Path)
		}
		if _, dup := byPath[f.Path]; dup {
			return nil, fmt.Errorf("layer: %s is listed twice", f.Path)
		}
		if f.Dir && (f.Link != "" || f.Data != nil) {
			return nil, fmt.Errorf("layer: directory %s has contents", f.Path)
		}
		byPath[f.Path] = f
	}
	for _, f := range files {
		for dir := path.Dir(f.Path); dir != "/"; dir = path.Dir(dir) {
			if d, ok := byPath[dir]; ok {
				if !d.Dir {
					return nil, fmt.Errorf("layer: %s is inside %s, which is not a directory", f.Path, dir)
				}
				continue
			}
			byPath[dir] = File{Path: dir, Dir: true, Mode: 0o755}
		}
	}
	if len(byPath) == 0 {
		return nil, errors.New("layer: no files")
	}
	out := make([]File, 0, len(byPath))
	for _, f := range byPath {
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
	return out, nil
}
