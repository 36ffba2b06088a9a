// Package rigenv reads rig.env, the description of the local rig that
// hack/rig/rig.sh up writes: KEY=VALUE lines, # comments.
package rigenv

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// File is the rig.env of the rig: under $SLUICE_RIG_DIR when set, else
// /var/lib/sluice-rig.
func File() string {
	dir := os.Getenv("SLUICE_RIG_DIR")
	if dir == "" {
		dir = "/var/lib/sluice-rig"
	}
	return filepath.Join(dir, "rig.env")
}

// Read parses a rig.env file.
func Read(file string) (map[string]string, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("read rig env: %w", err)
	}
	defer f.Close()
	vars := make(map[string]string)
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("read rig env: %s:%d: not KEY=VALUE", file, n)
		}
		vars[k] = v
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read rig env: %w", err)
	}
	return vars, nil
}
