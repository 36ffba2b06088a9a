//go:build bench

package main

import (
	"slices"
	"testing"
	"time"
)

func TestResultsOfOneRoundTrip(t *testing.T) {
	const rtt = 50 * time.Millisecond
	chains := []*chain{
		{name: chainSluice}, {name: chainSluice, rtt: rtt},
		{name: chainDirect}, {name: chainDirect, rtt: rtt},
	}
	res := newResults()
	for i, c := range chains {
		res.add("up1", c.id(), float64(i))
		res.setups[c.id()] = []time.Duration{time.Duration(i)}
		res.cpu[c.id()] = time.Duration(i)
		count(res.failed, c.id(), "rr16")
	}
	at := chainsAt(chains, rtt)
	if len(at) != 2 || at[0] != chains[1] || at[1] != chains[3] {
		t.Fatalf("chainsAt(50ms) = %v; want the second and fourth chains", at)
	}
	got := res.of(at)
	if v := got.values["up1"][chainSluice]; !slices.Equal(v, []float64{1}) {
		t.Errorf("up1 of sluice across 50ms = %v; want [1], the value of sluice@50ms", v)
	}
	if v := got.values["up1"][chainDirect]; !slices.Equal(v, []float64{3}) {
		t.Errorf("up1 of direct across 50ms = %v; want [3]", v)
	}
	if got.cpu[chainSluice] != 1 || !slices.Equal(got.setups[chainDirect], []time.Duration{3}) {
		t.Errorf("cpu %v, set-ups %v; want sluice@50ms's and direct@50ms's", got.cpu, got.setups)
	}
	if len(got.values["up1"]) != 2 || got.failed[chainSluice]["rr16"] != 1 {
		t.Errorf("values %v, failed %v; want only the two chains across 50ms, by name", got.values, got.failed)
	}
}
