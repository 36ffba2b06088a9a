package site

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"syscall"
)

// maxReadAt is the most ReadAt reads in one call.
const maxReadAt = 64 << 20

// dirMaker is what mkdirAll needs from a filesystem: *sftp.Client and
// osDirs.
type dirMaker interface {
	Stat(p string) (fs.FileInfo, error)
	Mkdir(p string) error
	Chmod(p string, mode fs.FileMode) error
}

// mkdirAll creates dir and its missing parents, each with exactly perm
// (Mkdir applies the umask; Chmod undoes it). Existing directories are left
// as they are.
func mkdirAll(m dirMaker, dir string, perm fs.FileMode) error {
	var missing []string
	for p := dir; ; p = path.Dir(p) {
		fi, err := m.Stat(p)
		if err == nil {
			if !fi.IsDir() {
				return &fs.PathError{Op: "mkdir", Path: p, Err: syscall.ENOTDIR}
			}
			break
		}
		if !errors.Is(err, fs.ErrNotExist) || p == "/" {
			return err
		}
		missing = append(missing, p)
	}
	for i := len(missing) - 1; i >= 0; i-- {
		p := missing[i]
		if err := m.Mkdir(p); err != nil {
			if fi, serr := m.Stat(p); serr == nil && fi.IsDir() {
				continue // made meanwhile by someone else
			}
			return err
		}
		if err := m.Chmod(p, perm); err != nil {
			return err
		}
	}
	return nil
}

// checkPath refuses paths that are not absolute and clean.
func checkPath(p string) error {
	if !path.IsAbs(p) || path.Clean(p) != p {
		return fmt.Errorf("path %q is not absolute and clean", p)
	}
	return nil
}

// checkReadAt refuses reads no file could satisfy.
func checkReadAt(off int64, n int) error {
	if off < 0 || n < 0 || n > maxReadAt {
		return fmt.Errorf("read of %d bytes at offset %d out of range", n, off)
	}
	return nil
}

// tempName returns a fresh hidden name beside p for a file being written.
func tempName(p string) string {
	var b [8]byte
	rand.Read(b[:])
	dir, base := path.Split(p)
	return path.Join(dir, "."+base+".tmp-"+hex.EncodeToString(b[:]))
}

// readAt reads up to n bytes of r from offset off; the end of the file is
// not an error.
func readAt(r io.ReaderAt, off int64, n int) ([]byte, error) {
	buf := make([]byte, n)
	got, err := r.ReadAt(buf, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return buf[:got], nil
}
