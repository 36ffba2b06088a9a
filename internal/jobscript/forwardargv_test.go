package jobscript

import (
	"slices"
	"testing"
)

func TestForwardArgv(t *testing.T) {
	got, err := ForwardArgv("42", "node1", "/data/.bin/sluice-relay-0123456789abcdef", 8888)
	want := []string{"srun", "--jobid=42", "--overlap", "--nodelist=node1", "--nodes=1", "--ntasks=1", "--quiet",
		"--unbuffered", "--", "/data/.bin/sluice-relay-0123456789abcdef", "--connect", "127.0.0.1:8888"}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("got %q, %v;\nwant %q", got, err, want)
	}
	for _, bad := range []struct {
		name, job, host, relay string
		port                   int
	}{
		{"job id", "4;2", "node1", "/r", 80},
		{"host", "42", "-oProxyCommand=x", "/r", 80},
		{"port 0", "42", "node1", "/r", 0},
		{"port too high", "42", "node1", "/r", 65536},
		{"relative relay", "42", "node1", "r", 80},
		{"unclean relay", "42", "node1", "/a/../r", 80},
	} {
		if got, err := ForwardArgv(bad.job, bad.host, bad.relay, bad.port); err == nil {
			t.Errorf("%s: got %q; want an error", bad.name, got)
		}
	}
}
