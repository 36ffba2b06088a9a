package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// sumsFile lists the SHA-256 of every released file, as sha256sum prints
// them (`sha256sum -c SHA256SUMS` checks them).
const sumsFile = "SHA256SUMS"

// writeSums writes dir/SHA256SUMS over the regular files of dir, sorted by
// name (os.ReadDir sorts): the archives, SBOMs and the chart (not images.txt, not itself, not
// the layout directories, whose tars are listed).
func writeSums(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("sums: %w", err)
	}
	var lines []string
	for _, e := range entries {
		n := e.Name()
		if !e.Type().IsRegular() || n == sumsFile || n == "images.txt" || strings.HasPrefix(n, ".") {
			continue
		}
		sum, err := fileSHA256(filepath.Join(dir, n))
		if err != nil {
			return fmt.Errorf("sums: %w", err)
		}
		lines = append(lines, sum+"  "+n+"\n")
	}
	return os.WriteFile(filepath.Join(dir, sumsFile), []byte(strings.Join(lines, "")), 0o644)
}

func fileSHA256(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
