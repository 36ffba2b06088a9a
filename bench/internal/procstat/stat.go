//go:build bench

// Package procstat reads what the benchmarks measure of processes in
// /proc: their parents, CPU time and memory.
package procstat

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTick is the length of a /proc/PID/stat CPU tick (USER_HZ, 100 on
// Linux).
const clockTick = 10 * time.Millisecond

// Stat is what the benchmarks read of /proc/PID/stat.
type Stat struct {
	PPID int
	// CPU is utime + stime, every thread of the process.
	CPU time.Duration
	// ChildrenCPU is cutime + cstime: the CPU time of the children it has
	// waited for.
	ChildrenCPU time.Duration
}

// ReadStat reads /proc/PID/stat.
func ReadStat(pid int) (Stat, error) {
	file := "/proc/" + strconv.Itoa(pid) + "/stat"
	b, err := os.ReadFile(file)
	if err != nil {
		return Stat{}, fmt.Errorf("read stat: %w", err)
	}
	// pid (comm) state ppid ...: the command name may hold spaces and
	// parentheses, so fields count from after its last ')'.
	end := bytes.LastIndexByte(b, ')')
	if end < 0 {
		return Stat{}, fmt.Errorf("read stat: %s: no command name", file)
	}
	f := strings.Fields(string(b[end+1:]))
	if len(f) < 15 {
		return Stat{}, fmt.Errorf("read stat: %s: %d fields", file, len(f))
	}
	// f[0] is field 3 (state): ppid is field 4, utime to cstime 14 to 17.
	var st Stat
	st.PPID, _ = strconv.Atoi(f[1])
	ticks := make([]int64, 4)
	for i, s := range f[11:15] {
		ticks[i], _ = strconv.ParseInt(s, 10, 64)
	}
	st.CPU = time.Duration(ticks[0]+ticks[1]) * clockTick
	st.ChildrenCPU = time.Duration(ticks[2]+ticks[3]) * clockTick
	return st, nil
}

// Descendants returns roots and every descendant of them that runs now:
// roots first, then their children, grandchildren and so on.
func Descendants(roots ...int) []int {
	children := map[int][]int{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, err := ReadStat(pid); err == nil {
			children[st.PPID] = append(children[st.PPID], pid)
		}
	}
	out := append([]int(nil), roots...)
	seen := map[int]bool{}
	for _, pid := range roots {
		seen[pid] = true
	}
	for i := 0; i < len(out); i++ {
		for _, c := range children[out[i]] {
			if !seen[c] {
				seen[c] = true
				out = append(out, c)
			}
		}
	}
	return out
}
