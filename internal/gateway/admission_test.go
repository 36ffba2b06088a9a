package gateway

import (
	"fmt"
	"testing"
	"time"
)

func TestAdmissionPerSource(t *testing.T) {
	a := newAdmission(100, 2)
	for i := range 2 {
		if ok, why := a.admit("10.0.0.1"); !ok {
			t.Fatalf("handshake %d from a source under its cap refused: %s", i, why)
		}
	}
	if ok, _ := a.admit("10.0.0.1"); ok {
		t.Error("a third handshake at once from one source was admitted over a cap of 2")
	}
	if ok, why := a.admit("10.0.0.2"); !ok {
		t.Errorf("another source refused while the first is at its cap: %s", why)
	}
	a.done("10.0.0.1", true)
	if ok, why := a.admit("10.0.0.1"); !ok {
		t.Errorf("a source back under its cap refused: %s", why)
	}
}

func TestAdmissionEarlyDrop(t *testing.T) {
	a := newAdmission(10, 100)
	a.drop = func() float64 { return 0.5 }
	admitted := 0
	for range 20 {
		if ok, _ := a.admit("10.0.0.1"); ok {
			admitted++
		}
	}
	// Up to 5 (half) always; past it, a draw of 0.5 drops once the fill
	// past half reaches half the remainder: at 5+3 of 10.
	if admitted != 8 {
		t.Errorf("%d handshakes admitted with a cap of 10 and draws of 0.5; want 8", admitted)
	}
	a.drop = func() float64 { return 0.999 }
	for a.total < 10 {
		if ok, why := a.admit("10.0.0.1"); !ok {
			t.Fatalf("refused at %d of 10 with the luckiest draw: %s", a.total, why)
		}
	}
	if ok, _ := a.admit("10.0.0.1"); ok {
		t.Error("a handshake admitted past the cap")
	}
}

func TestAdmissionPenalty(t *testing.T) {
	now := time.Unix(1e9, 0)
	a := newAdmission(100, 100)
	a.now = func() time.Time { return now }
	fail := func() {
		t.Helper()
		if ok, why := a.admit("10.0.0.9"); !ok {
			t.Fatalf("refused: %s", why)
		}
		a.done("10.0.0.9", false)
	}
	for range freeFailures {
		fail()
	}
	fail() // the first penalised failure: 1 s
	if ok, _ := a.admit("10.0.0.9"); ok {
		t.Fatal("a source past its free failures was admitted at once")
	}
	if ok, why := a.admit("10.0.0.10"); !ok {
		t.Errorf("another source refused for the first's failures: %s", why)
	}
	now = now.Add(basePenalty)
	fail() // 2 s
	now = now.Add(basePenalty)
	if ok, _ := a.admit("10.0.0.9"); ok {
		t.Error("the penalty did not grow with a further failure")
	}
	for range 10 {
		now = now.Add(maxPenalty)
		fail()
	}
	now = now.Add(maxPenalty - time.Millisecond)
	if ok, _ := a.admit("10.0.0.9"); ok {
		t.Error("admitted before the longest penalty ended")
	}
	now = now.Add(time.Millisecond)
	if ok, why := a.admit("10.0.0.9"); !ok {
		t.Fatalf("still refused once the longest penalty (%v) ended: %s", maxPenalty, why)
	}
	a.done("10.0.0.9", true)
	fail()
	if ok, why := a.admit("10.0.0.9"); !ok {
		t.Errorf("a failure after logging in was penalised: %s", why)
	}
}

// TestAdmissionSourcesBounded: a flood of failing sources fills the
// records to maxSources and no further; the records are swept at most once
// every pruneEvery, and expired ones make room for new sources.
func TestAdmissionSourcesBounded(t *testing.T) {
	now := time.Unix(1e9, 0)
	a := newAdmission(maxSources+16, 1)
	a.now = func() time.Time { return now }
	fail := func(src string) {
		t.Helper()
		if ok, why := a.admit(src); !ok {
			t.Fatalf("%s refused: %s", src, why)
		}
		a.done(src, false)
	}
	for i := range maxSources + 10 {
		fail(fmt.Sprintf("src-%d", i))
	}
	if n := len(a.sources); n != maxSources {
		t.Fatalf("%d sources recorded; want the bound %d", n, maxSources)
	}
	swept := a.pruned
	now = now.Add(forgetFailures / 2)
	fail("late-1")
	fail("late-2")
	if _, ok := a.sources["late-1"]; ok {
		t.Error("a new source was recorded while the records were full and none expired")
	}
	if !a.pruned.After(swept) {
		t.Error("the full records were not swept for a new source")
	}
	swept = a.pruned
	fail("late-3")
	if a.pruned != swept {
		t.Error("the records were swept again within pruneEvery")
	}
	now = now.Add(forgetFailures)
	fail("after")
	if _, ok := a.sources["after"]; !ok || len(a.sources) != 1 {
		t.Errorf("after the records expired: %d recorded, new source recorded %v; want it alone", len(a.sources), ok)
	}
}
