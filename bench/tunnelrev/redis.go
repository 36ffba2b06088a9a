//go:build bench

package main

import (
	"context"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"

	"github.com/sluice-hpc/sluice/bench/internal/rigbench"
)

// redisRate is one line of redis-benchmark -q: a test and its requests per
// second.
type redisRate struct {
	name string
	rps  float64
}

// redisBenchmark runs `redis-benchmark -q -t ping,set,get` as the job's
// user on the compute node against addr.
func (e *env) redisBenchmark(ctx context.Context, addr string, n int) ([]redisRate, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("redis-benchmark: %w", err)
	}
	out, err := rigbench.Output(e.rig.AsUser(ctx, rigbench.NodeNetns, "redis-benchmark", "-h", host, "-p", port, "-q", "-t", "ping,set,get", "-n", strconv.Itoa(n)))
	if err != nil {
		return nil, fmt.Errorf("redis-benchmark: %w", err)
	}
	rates := parseRedisQ(string(out))
	if len(rates) == 0 {
		return nil, fmt.Errorf("redis-benchmark: no rates in %q", out)
	}
	return rates, nil
}

// redisLine is a final line of redis-benchmark -q; progress lines before
// it end in a carriage return.
var redisLine = regexp.MustCompile(`^([A-Z_]+): ([0-9.]+) requests per second`)

func parseRedisQ(out string) []redisRate {
	var rates []redisRate
	for _, line := range strings.FieldsFunc(out, func(r rune) bool { return r == '\r' || r == '\n' }) {
		m := redisLine.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			continue
		}
		v, err := strconv.ParseFloat(m[2], 64)
		if err == nil {
			rates = append(rates, redisRate{name: m[1], rps: v})
		}
	}
	return rates
}
