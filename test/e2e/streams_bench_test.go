//go:build e2e && bench

package e2e

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"slices"
	"strconv"
	"testing"
	"time"
)

// TestStreamsBench measures, in one run on one job: kubectl port-forward
// (client-go's, websocket) against ssh -J login node -L, as 64 MiB
// download time and as connection set-up (a new connection's first
// answer, median of 20); and kubectl exec -- true over 50 runs, p50/p99.
//
//	go test -tags 'e2e bench' -run TestStreamsBench -v ./test/e2e/
func TestStreamsBench(t *testing.T) {
	e := newStreamEnv(t)
	port := e.httpdPod("bench")
	viaSluice, end := e.forwardToServer(e.restConfig(), "bench", port, true)
	defer end()
	viaSSH := e.sshForward(port)

	results := map[string][2]time.Duration{}
	for _, p := range []struct{ name, addr string }{{"sluice", viaSluice}, {"ssh", viaSSH}} {
		start := time.Now()
		_, n := download(t, p.addr, "/big")
		took := time.Since(start)
		if n != 64<<20 {
			t.Fatalf("%s: got %d bytes", p.name, n)
		}
		var setups []time.Duration
		for range 20 {
			start := time.Now()
			if _, err := httpGet(p.addr, "/hello"); err != nil {
				t.Fatalf("%s: %v", p.name, err)
			}
			setups = append(setups, time.Since(start))
		}
		slices.Sort(setups)
		results[p.name] = [2]time.Duration{took, setups[len(setups)/2]}
		t.Logf("%s: 64 MiB in %v (%.1f MiB/s), connection set-up + GET median %v", p.name, took.Round(time.Millisecond),
			64/took.Seconds(), setups[len(setups)/2].Round(100*time.Microsecond))
	}
	s, h := results["sluice"], results["ssh"]
	t.Logf("ratios sluice/ssh: throughput %.2f, set-up %.2f", h[0].Seconds()/s[0].Seconds(), s[1].Seconds()/h[1].Seconds())

	var took []time.Duration
	for range 50 {
		start := time.Now()
		if _, code := e.kubectl("exec", "bench", "--", "true"); code != 0 {
			t.Fatalf("exec true: exit %d", code)
		}
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	t.Logf("kubectl exec -- true over 50 runs: p50 %v, p99 %v, max %v", took[24].Round(time.Millisecond),
		took[48].Round(time.Millisecond), took[49].Round(time.Millisecond))
}

// sshForward runs ssh -J login node -L, the way a user reaches the job's
// port by hand, and returns the local address once it answers.
func (e *env) sshForward(port int) string {
	e.t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		e.t.Fatal(err)
	}
	local := ln.Addr().String()
	ln.Close()
	r := e.rig
	opts := fmt.Sprintf("-i %s -o BatchMode=yes -o UserKnownHostsFile=%s", r.Get(e.t, "RIG_KEY"), r.Get(e.t, "RIG_KNOWN_HOSTS"))
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, "ssh", "-i", r.Get(e.t, "RIG_KEY"), "-o", "BatchMode=yes",
		"-o", "UserKnownHostsFile="+r.Get(e.t, "RIG_NODE_KNOWN_HOSTS"), "-o", "ExitOnForwardFailure=yes",
		"-o", "ProxyCommand=ssh "+opts+" -W %h:%p "+r.Get(e.t, "RIG_USER")+"@"+r.Get(e.t, "RIG_LOGIN_ADDR"),
		"-N", "-L", local+":127.0.0.1:"+strconv.Itoa(port), r.Get(e.t, "RIG_USER")+"@"+r.Get(e.t, "RIG_NODE_NAME"))
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	e.waitFor("ssh -L to answer", 30*time.Second, func() bool {
		_, err := httpGet(local, "/hello")
		return err == nil
	})
	return local
}
