package main

import (
	"bufio"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
)

// softMemoryShare is the part of its cgroup's memory limit a tunnel keeps
// Go's heap under.
const softMemoryShare = 0.8

// setSoftMemoryLimit sets Go's soft memory limit to softMemoryShare of the
// memory limit of the process's cgroup, unless GOMEMLIMIT is set. The
// garbage collector then runs sooner as the heap nears it, instead of
// letting the heap grow to twice what is live: a forward's live memory is
// bounded (--max-conns channel windows), its garbage is not, and the
// container is killed at its limit. It returns the limit set, 0 if none.
func setSoftMemoryLimit() int64 {
	if os.Getenv("GOMEMLIMIT") != "" {
		return 0
	}
	limit := cgroupMemoryLimit("/proc/self/cgroup", "/sys/fs/cgroup")
	if limit <= 0 {
		return 0
	}
	soft := int64(float64(limit) * softMemoryShare)
	debug.SetMemoryLimit(soft)
	return soft
}

// noMemoryLimit is above any real limit: cgroup v1 spells "none" as a
// number near 2^63.
const noMemoryLimit = 1 << 60

// cgroupMemoryLimit returns the memory limit in bytes of the cgroup that
// cgroupFile (/proc/self/cgroup) names, under root (/sys/fs/cgroup), for
// cgroup v1 and v2 alike; 0 if there is none or it cannot be read. A cgroup
// path not visible under root (a container's own cgroup namespace shows its
// cgroup at the root) is read at the root.
func cgroupMemoryLimit(cgroupFile, root string) int64 {
	f, err := os.Open(cgroupFile)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		controllers, path := parts[1], filepath.Clean("/"+parts[2])
		switch {
		case parts[0] == "0" && controllers == "":
			if limit := readLimit(filepath.Join(root, path, "memory.max"), filepath.Join(root, "memory.max")); limit > 0 {
				return limit
			}
		case hasController(controllers, "memory"):
			dir := filepath.Join(root, "memory")
			return readLimit(filepath.Join(dir, path, "memory.limit_in_bytes"), filepath.Join(dir, "memory.limit_in_bytes"))
		}
	}
	return 0
}

func hasController(list, name string) bool {
	for c := range strings.SplitSeq(list, ",") {
		if c == name {
			return true
		}
	}
	return false
}

// readLimit reads a limit from the first of files that exists: 0 for
// "max", an unlimited value, or one it cannot read.
func readLimit(files ...string) int64 {
	for _, file := range files {
		b, err := os.ReadFile(file)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return 0
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil || n <= 0 || n >= noMemoryLimit {
			return 0
		}
		return n
	}
	return 0
}
