//go:build bench

package main

import "testing"

func TestCountDropped(t *testing.T) {
	log := []byte(`Accepted publickey for alice from 10.251.1.2 port 40100 ssh2
beginning MaxStartups throttling
drop connection #3 from [10.251.1.2]:40116 on [10.251.1.2]:2222 past MaxStartups
exited MaxStartups throttling after 00:00:01, 12 connections dropped
beginning MaxStartups throttling
drop connection #4 from [10.251.1.2]:40200 on [10.251.1.2]:2222 past MaxStartups
exited MaxStartups throttling after 00:00:00, 1 connections dropped
beginning MaxStartups throttling
drop connection #3 from [10.251.1.2]:40300 on [10.251.1.2]:2222 past MaxStartups
`)
	if got := countDropped(log); got != 14 {
		t.Errorf("countDropped = %d; want 14 (12 + 1 + one period still going on)", got)
	}
	if got := countDropped(nil); got != 0 {
		t.Errorf("countDropped(nil) = %d; want 0", got)
	}
}
