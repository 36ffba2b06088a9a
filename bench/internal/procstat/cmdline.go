//go:build bench

package procstat

import (
	"os"
	"strconv"
	"strings"
)

// Matching returns the processes running now whose command line (its
// arguments joined by spaces) holds any of subs, and for which keep, if
// not nil, says true.
func Matching(keep func(cmdline string) bool, subs ...string) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || len(b) == 0 {
			continue
		}
		line := strings.ReplaceAll(strings.TrimRight(string(b), "\x00"), "\x00", " ")
		for _, s := range subs {
			if strings.Contains(line, s) && (keep == nil || keep(line)) {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}
