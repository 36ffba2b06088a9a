package provider

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/sluice-hpc/sluice/internal/site"
	"github.com/sluice-hpc/sluice/internal/slurm"
	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
	"github.com/virtual-kubelet/virtual-kubelet/node/api"
)

func TestLogOptions(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	since := now.Add(-time.Hour)
	tests := []struct {
		name string
		in   api.ContainerLogOpts
		want slurm.LogOptions
	}{
		{"all", api.ContainerLogOpts{}, slurm.LogOptions{Tail: -1}},
		{"tail", api.ContainerLogOpts{Tail: 5}, slurm.LogOptions{Tail: 5}},
		{"since seconds", api.ContainerLogOpts{SinceSeconds: 60}, slurm.LogOptions{Tail: -1, Since: now.Add(-time.Minute)}},
		{"since time", api.ContainerLogOpts{SinceTime: since}, slurm.LogOptions{Tail: -1, Since: since}},
		{"follow, timestamps, limit", api.ContainerLogOpts{Follow: true, Timestamps: true, LimitBytes: 10},
			slurm.LogOptions{Tail: -1, Follow: true, Timestamps: true, LimitBytes: 10}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := logOptions(tt.in, now); got != tt.want {
				t.Errorf("got %+v; want %+v", got, tt.want)
			}
		})
	}
}

func TestGetContainerLogs(t *testing.T) {
	pod := testPod("logs")
	h := newHarness(t, nil, pod)
	if err := h.p.CreatePod(context.Background(), pod); err != nil {
		t.Fatalf("CreatePod: %v", err)
	}
	h.waitEvent("submitted as Slurm job")
	ctx := context.Background()

	if _, err := h.p.GetContainerLogs(ctx, "ns", "logs", "main", api.ContainerLogOpts{}); !errdefs.IsInvalidInput(err) {
		t.Errorf("logs of a container not started: got %v; want an invalid-input error (waiting to start)", err)
	}
	h.jobs.mu.Lock()
	h.jobs.logs["main"] = "hello\n"
	h.jobs.mu.Unlock()
	rc, err := h.p.GetContainerLogs(ctx, "ns", "logs", "main", api.ContainerLogOpts{Tail: 1})
	if err != nil {
		t.Fatalf("GetContainerLogs: %v", err)
	}
	data, _ := io.ReadAll(rc)
	rc.Close()
	if string(data) != "hello\n" || h.jobs.logOpts[len(h.jobs.logOpts)-1].Tail != 1 {
		t.Errorf("got %q with %+v; want hello with Tail 1", data, h.jobs.logOpts)
	}
	for _, c := range []struct {
		ns, name, container string
		opts                api.ContainerLogOpts
		check               func(error) bool
	}{
		{"ns", "nope", "main", api.ContainerLogOpts{}, errdefs.IsNotFound},
		{"ns", "logs", "other", api.ContainerLogOpts{}, errdefs.IsNotFound},
		{"ns", "logs", "main", api.ContainerLogOpts{Previous: true}, errdefs.IsInvalidInput},
	} {
		if _, err := h.p.GetContainerLogs(ctx, c.ns, c.name, c.container, c.opts); !c.check(err) {
			t.Errorf("logs of %s/%s %s %+v: got %v; want a typed error", c.ns, c.name, c.container, c.opts, err)
		}
	}
}

func TestGetContainerLogsOfALogThatIsNotARegularFile(t *testing.T) {
	pod := testPod("logs")
	h := newHarness(t, nil, pod)
	if err := h.p.CreatePod(context.Background(), pod); err != nil {
		t.Fatalf("CreatePod: %v", err)
	}
	h.waitEvent("submitted as Slurm job")
	h.jobs.mu.Lock()
	h.jobs.logErrs = map[string]error{"main": fmt.Errorf("logs of container main: main.log: %w (a named pipe)", site.ErrNotRegular)}
	h.jobs.mu.Unlock()
	_, err := h.p.GetContainerLogs(context.Background(), "ns", "logs", "main", api.ContainerLogOpts{})
	if !errdefs.IsInvalidInput(err) || !strings.Contains(err.Error(), "main.log: not a regular file (a named pipe)") {
		t.Errorf("logs of a named pipe = %v; want an invalid-input error saying main.log is not a regular file", err)
	}
}
