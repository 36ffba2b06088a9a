package kubeletstream

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

// fakeOutput follows a container whose output is "line 1\nline 2\n", or
// fails for container "gone".
type fakeOutput struct{}

func (fakeOutput) FollowOutput(_ context.Context, _, _, container string) (io.ReadCloser, error) {
	if container == "gone" {
		return nil, errors.New("no container gone")
	}
	return io.NopCloser(strings.NewReader("line 1\nline 2\n")), nil
}

// blockingOutput is output that never ends until ctx does.
type blockingOutput struct{}

func (blockingOutput) FollowOutput(ctx context.Context, _, _, _ string) (io.ReadCloser, error) {
	pr, pw := io.Pipe()
	go func() {
		<-ctx.Done()
		pw.Close()
	}()
	return pr, nil
}

func TestAttachFollowsTheOutput(t *testing.T) {
	s := &Server{Output: fakeOutput{}}
	var out, errb bytes.Buffer
	if err := s.Attach(context.Background(), "ns", "pod", "main", attachIO{out: nopCloser{&out}, err: nopCloser{&errb}}); err != nil {
		t.Fatal(err)
	}
	if out.String() != "line 1\nline 2\n" || errb.Len() != 0 {
		t.Errorf("got stdout %q stderr %q; want the output on stdout", out.String(), errb.String())
	}
	errb.Reset()
	if err := s.Attach(context.Background(), "ns", "pod", "main", attachIO{err: nopCloser{&errb}}); err != nil || errb.String() != "line 1\nline 2\n" {
		t.Errorf("got %q, %v with stderr alone; want the output there", errb.String(), err)
	}
	err := s.Attach(context.Background(), "ns", "pod", "main", attachIO{in: strings.NewReader("x"), out: nopCloser{&out}})
	if !errors.Is(err, errNoStdin) {
		t.Errorf("got %v for attach with stdin; want errNoStdin", err)
	}
	if err := s.Attach(context.Background(), "ns", "pod", "gone", attachIO{out: nopCloser{&out}}); err == nil || !strings.Contains(err.Error(), "no container gone") {
		t.Errorf("got %v for a failed follow; want its error", err)
	}
	if err := (&Server{}).Attach(context.Background(), "ns", "pod", "main", attachIO{out: nopCloser{&out}}); !errors.Is(err, errNoAttach) {
		t.Errorf("got %v without Output; want errNoAttach", err)
	}
}

func TestAttachEndsWithKubectl(t *testing.T) {
	s := &Server{Output: blockingOutput{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Attach(ctx, "ns", "pod", "main", attachIO{out: nopCloser{io.Discard}}) }()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("got %v when kubectl went away; want a clean end", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("attach went on 5s after kubectl went away")
	}
}
