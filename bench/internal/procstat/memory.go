//go:build bench

package procstat

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
)

// Memory is the resident memory of a process, in bytes.
type Memory struct {
	RSS int64 // VmRSS
	HWM int64 // VmHWM, the peak of VmRSS
}

// ReadMemory reads VmRSS and VmHWM of /proc/PID/status. A process without
// VmRSS (a zombie) is an error.
func ReadMemory(pid int) (Memory, error) {
	kb, err := readKB("/proc/"+strconv.Itoa(pid)+"/status", "VmRSS", "VmHWM")
	if err != nil {
		return Memory{}, fmt.Errorf("memory of %d: %w", pid, err)
	}
	if kb["VmRSS"] == 0 {
		return Memory{}, fmt.Errorf("memory of %d: no VmRSS (a zombie?)", pid)
	}
	return Memory{RSS: kb["VmRSS"] << 10, HWM: kb["VmHWM"] << 10}, nil
}

// ReadPSS reads Pss of /proc/PID/smaps_rollup, in bytes: the resident
// memory with each shared page split between the processes sharing it.
func ReadPSS(pid int) (int64, error) {
	kb, err := readKB("/proc/"+strconv.Itoa(pid)+"/smaps_rollup", "Pss")
	if err != nil {
		return 0, fmt.Errorf("pss of %d: %w", pid, err)
	}
	return kb["Pss"] << 10, nil
}

// readKB reads the "Key:   N kB" lines of file for keys; a key it does not
// find is left out.
func readKB(file string, keys ...string) (map[string]int64, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]int64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || !slices.Contains(keys, k) {
			continue
		}
		fields := strings.Fields(v)
		if len(fields) == 0 {
			return nil, fmt.Errorf("%s: %s: no value", file, k)
		}
		n, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", file, k, err)
		}
		out[k] = n
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return out, nil
}
