//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/config"
	corev1 "k8s.io/api/core/v1"
)

// TestLogFollowersAreCappedAndEndWithTheContainer: through the API server,
// a namespace's followers of a pod beyond its cap are refused with the
// reason, those within it (sharing one reading of the log) each read every
// line and end when the container does, and the log of the container that
// ended is then read at once, taking no place.
func TestLogFollowersAreCappedAndEndWithTheContainer(t *testing.T) {
	parallel(t)
	e := newEnv(t)
	e.create(e.pod("chatty", counting(8)))
	e.waitPod("chatty", "its container running", 60*time.Second, containerRunning)

	ctx := context.Background()
	follow := func() (io.ReadCloser, error) {
		return e.client.CoreV1().Pods(e.ns).GetLogs("chatty", &corev1.PodLogOptions{Follow: true}).Stream(ctx)
	}
	n := config.DefaultMaxLogFollowersPerNamespace
	var streams []io.ReadCloser
	for range n {
		rc, err := follow()
		if err != nil {
			t.Fatalf("follower %d of %d: %v", len(streams)+1, n, err)
		}
		defer rc.Close()
		streams = append(streams, rc)
	}
	if rc, err := follow(); err == nil {
		rc.Close()
		t.Errorf("follower %d in a namespace capped at %d: not refused", n+1, n)
	} else if !strings.Contains(err.Error(), "too many log followers in namespace "+e.ns) {
		t.Errorf("follower %d refused with %q; want the namespace's cap named", n+1, err)
	}

	var wg sync.WaitGroup
	got := make([][]string, n)
	for i, rc := range streams {
		wg.Go(func() {
			sc := bufio.NewScanner(rc)
			for sc.Scan() {
				got[i] = append(got[i], sc.Text())
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("the followers did not end with the container")
	}
	for i, g := range got {
		if !slices.Equal(g, lines(8)) {
			t.Errorf("follower %d read %q; want %q", i, g, lines(8))
		}
	}
	// The log of a container that ended is read to its end at once.
	if after := e.logs("chatty", corev1.PodLogOptions{Follow: true}); !slices.Equal(after, lines(8)) {
		t.Errorf("logs -f of the ended container: %q; want %q", after, lines(8))
	}
}
