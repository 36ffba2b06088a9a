package slurm

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// suffixedInt parses a whole number from 0 to limit with an optional K, M,
// G, T or P suffix (powers of 1024), as Slurm prints counts and sizes.
func suffixedInt(s string, limit int64) (int64, error) {
	if s == "" {
		return 0, errors.New("empty number")
	}
	mult := int64(1)
	if i := strings.IndexByte("KMGTP", s[len(s)-1]); i >= 0 {
		mult = int64(1) << (10 * (i + 1))
		s = s[:len(s)-1]
	}
	v, err := boundedInt(s, limit)
	if err != nil {
		return 0, err
	}
	if v > limit/mult {
		return 0, fmt.Errorf("%s over %d", s, limit)
	}
	return v * mult, nil
}

// maxUsageBytes bounds a step's memory: 1 EiB, far above any node's, and
// far below int64's limit.
const maxUsageBytes = 1 << 60

// parseBytes parses a size in bytes, as --noconvert prints it; a K, M, G,
// T or P suffix is taken too.
func parseBytes(s string) (int64, error) {
	return suffixedInt(s, maxUsageBytes)
}

// maxCPUDays bounds a CPU time: 100,000 days (a step of 10,000 cores for
// ten days) keeps it inside time.Duration.
const maxCPUDays = 100_000

// parseCPUTime parses a CPU time as Slurm prints one: [D-]HH:MM:SS
// (TRESUsageInTot, AveCPU) or [[HH:]MM:]SS.mmm (TotalCPU), where the first
// field may exceed its range (it is not carried into a larger unit).
func parseCPUTime(s string) (time.Duration, error) {
	bad := func() (time.Duration, error) { return 0, fmt.Errorf("malformed CPU time %.32q", s) }
	var days int64
	rest := s
	if d, r, ok := strings.Cut(s, "-"); ok {
		n, err := boundedInt(d, maxCPUDays)
		if err != nil {
			return bad()
		}
		days, rest = n, r
	}
	fields := strings.Split(rest, ":")
	if len(fields) > 3 || days > 0 && len(fields) != 3 {
		return bad()
	}
	whole, frac, dot := strings.Cut(fields[len(fields)-1], ".")
	fields[len(fields)-1] = whole
	var secs int64
	for i, f := range fields {
		limit := int64(59)
		if i == 0 {
			limit = maxCPUDays * 24 * 3600 // the first field is not carried
		}
		n, err := boundedInt(f, limit)
		if err != nil {
			return bad()
		}
		secs = secs*60 + n
	}
	secs += days * 24 * 3600
	if secs > maxCPUDays*24*3600 {
		return bad()
	}
	d := time.Duration(secs) * time.Second
	if dot {
		if frac == "" || len(frac) > 9 || strings.Trim(frac, "0123456789") != "" {
			return bad()
		}
		n, err := strconv.ParseInt(frac+strings.Repeat("0", 9-len(frac)), 10, 64)
		if err != nil {
			return bad()
		}
		d += time.Duration(n)
	}
	return d, nil
}
