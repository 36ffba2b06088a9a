//go:build bench

// Package stats holds the order statistics the benchmarks report: medians
// and nearest-rank quantiles.
package stats

import (
	"cmp"
	"math"
	"slices"
)

// Median returns the median of values, in any order; 0 if there are none.
func Median(values []float64) float64 {
	n := len(values)
	if n == 0 {
		return 0
	}
	s := slices.Clone(values)
	slices.Sort(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// Quantile returns the q-quantile (0 < q ≤ 1) of values, in any order, by
// nearest rank: the smallest value with at least q of them at or below it.
// It returns the zero value if there are none.
func Quantile[T cmp.Ordered](values []T, q float64) T {
	if len(values) == 0 {
		var zero T
		return zero
	}
	s := slices.Clone(values)
	slices.Sort(s)
	rank := int(math.Ceil(q*float64(len(s)))) - 1
	return s[min(max(rank, 0), len(s)-1)]
}
