package hostnode

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// dataLink is the symlink of a volume directory that names the directory
// holding its current files, as in a kubelet's volumes: each top-level file
// of the volume is a symlink through it, so that replacing it replaces every
// file at once.
const dataLink = "..data"

// writeVolumeDir makes dir hold exactly files, atomically: the new files go
// to a fresh ..data-* directory, the ..data symlink is renamed onto it, and
// the old directory is removed. A process that has dir bind-mounted sees
// the new files at once. It reports whether anything changed.
func writeVolumeDir(dir string, files volumeFiles) (bool, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false, fmt.Errorf("volume %s: %w", dir, err)
	}
	old, _ := os.Readlink(filepath.Join(dir, dataLink))
	if old != "" && sameFiles(filepath.Join(dir, old), files) {
		return false, nil
	}
	next, err := os.MkdirTemp(dir, dataLink+"-")
	if err != nil {
		return false, fmt.Errorf("volume %s: %w", dir, err)
	}
	if err := writeFiles(next, files); err != nil {
		os.RemoveAll(next)
		return false, fmt.Errorf("volume %s: %w", dir, err)
	}
	if err := replaceSymlink(dir, dataLink, filepath.Base(next)); err != nil {
		os.RemoveAll(next)
		return false, fmt.Errorf("volume %s: %w", dir, err)
	}
	if err := linkTopLevel(dir, files); err != nil {
		return false, fmt.Errorf("volume %s: %w", dir, err)
	}
	if old != "" && old != filepath.Base(next) {
		if err := os.RemoveAll(filepath.Join(dir, old)); err != nil {
			return false, fmt.Errorf("volume %s: %w", dir, err)
		}
	}
	return true, nil
}

// writeFiles writes files under root (0755, as MkdirTemp makes it 0700).
func writeFiles(root string, files volumeFiles) error {
	if err := os.Chmod(root, 0o755); err != nil {
		return err
	}
	for _, p := range slices.Sorted(maps.Keys(files)) {
		f := files[p]
		name := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(name, f.Data, f.Mode); err != nil {
			return err
		}
		// WriteFile's mode passes through the umask
		if err := os.Chmod(name, f.Mode); err != nil {
			return err
		}
	}
	return nil
}

// replaceSymlink points dir/name at target, atomically.
func replaceSymlink(dir, name, target string) error {
	tmp := filepath.Join(dir, name+".tmp")
	if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := os.Symlink(target, tmp); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, name))
}

// linkTopLevel makes a symlink ..data/NAME for each top-level name of the
// files and removes the links of names no longer there.
func linkTopLevel(dir string, files volumeFiles) error {
	want := map[string]bool{}
	for p := range files {
		top, _, _ := strings.Cut(p, "/")
		want[top] = true
	}
	for _, top := range slices.Sorted(maps.Keys(want)) {
		target := dataLink + "/" + top
		if cur, err := os.Readlink(filepath.Join(dir, top)); err == nil && cur == target {
			continue
		}
		if err := replaceSymlink(dir, top, target); err != nil {
			return err
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "..") || want[e.Name()] || e.Type()&fs.ModeSymlink == 0 {
			continue
		}
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// sameFiles tells whether root holds exactly files, with their modes.
func sameFiles(root string, files volumeFiles) bool {
	seen := 0
	err := filepath.WalkDir(root, func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(root, name)
		if err != nil {
			return err
		}
		f, ok := files[filepath.ToSlash(rel)]
		if !ok {
			return errDiffers
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		data, err := os.ReadFile(name)
		if err != nil {
			return err
		}
		if info.Mode().Perm() != f.Mode || !bytes.Equal(data, f.Data) {
			return errDiffers
		}
		seen++
		return nil
	})
	return err == nil && seen == len(files)
}

var errDiffers = errors.New("differs")
