package kubeletstream

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/sluice-hpc/sluice/internal/provider"
	"github.com/virtual-kubelet/virtual-kubelet/node/api"
)

// Output follows what a running container writes; *provider.Provider
// implements it.
type Output interface {
	// FollowOutput returns the container's output from now on, until the
	// container ends or ctx does.
	FollowOutput(ctx context.Context, namespace, pod, container string) (io.ReadCloser, error)
}

// errNoAttach answers kubectl attach on a server without Output.
var errNoAttach = errors.New("attach: not served on this node: read the output with kubectl logs -f, or run a shell with kubectl exec -it")

// errNoStdin refuses kubectl attach -i: a Slurm batch job's container has
// no standard input to attach to.
var errNoStdin = errors.New("the container has no stdin to attach to (it runs in a Slurm batch job, whose runtime gives it none): " +
	"kubectl attach without -i follows its output; kubectl exec -it runs a shell in it")

var _ Output = (*provider.Provider)(nil)

var _ api.ContainerAttachHandlerFunc = (*Server)(nil).Attach

// Attach follows container's output (stdout and stderr, as the job records
// them together) from the moment kubectl attached until the container
// ends or kubectl goes away, written to kubectl's stdout (its stderr when
// it asked for that alone). Attaching to the container's stdin is refused
// (errNoStdin); Wrap refuses it before the streams are set up.
func (s *Server) Attach(ctx context.Context, namespace, pod, container string, attach api.AttachIO) error {
	if s.Output == nil {
		return errNoAttach
	}
	if attach.Stdin() != nil {
		return fmt.Errorf("attach: %w", errNoStdin)
	}
	var out io.Writer = attach.Stdout()
	if attach.Stdout() == nil {
		out = attach.Stderr()
	}
	if out == nil {
		return errors.New("attach: neither stdout nor stderr asked for")
	}
	rc, err := s.Output.FollowOutput(ctx, namespace, pod, container)
	if err != nil {
		return fmt.Errorf("attach: %w", err)
	}
	defer rc.Close()
	if _, err := io.Copy(out, rc); err != nil && ctx.Err() == nil {
		return fmt.Errorf("attach: copy the container's output to kubectl: %w", err)
	}
	return nil
}
