//go:build bench

package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-hpc/sluice/internal/vk"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// standby is a sluice-vk process (the real binary) started with
// --leader-elect for the benchmark's node while the benchmark holds the
// Lease: a standby replica, whose memory is measured beside the leader's.
type standby struct {
	cmd *exec.Cmd
	log string
}

// startStandby holds the Lease of node name (namespace name) for the
// benchmark, then starts bin as a standby for it.
func startStandby(ctx context.Context, client kubernetes.Interface, bin, kubeconfig, name string, poll time.Duration) (*standby, error) {
	now := metav1.NewMicroTime(time.Now())
	holder, secs := "vk1000", int32(3600)
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: name, Name: vk.LeaseName(name)},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &secs, AcquireTime: &now, RenewTime: &now},
	}
	if _, err := client.CoordinationV1().Leases(name).Create(ctx, lease, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("standby: hold the lease: %w", err)
	}
	dir, err := os.MkdirTemp("", name+"-standby-")
	if err != nil {
		return nil, fmt.Errorf("standby: %w", err)
	}
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, nodeConfig(name, poll, 1000), 0o600); err != nil {
		return nil, fmt.Errorf("standby: %w", err)
	}
	s := &standby{log: filepath.Join(dir, "standby.log")}
	out, err := os.Create(s.log)
	if err != nil {
		return nil, fmt.Errorf("standby: %w", err)
	}
	defer out.Close()
	s.cmd = exec.Command(bin, "--config", cfg, "--kubeconfig", kubeconfig, "--leader-elect",
		"--leader-elect-namespace", name, "--log-format", "text")
	s.cmd.Stdout, s.cmd.Stderr = out, out
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("standby: start %s: %w", bin, err)
	}
	fmt.Fprintf(os.Stderr, "vk1000: standby %s (pid %d) logs to %s\n", bin, s.cmd.Process.Pid, s.log)
	return s, nil
}

// rss is the standby's VmRSS in bytes, 0 if it is not running.
func (s *standby) rss() uint64 {
	if s == nil {
		return 0
	}
	return procStatus("/proc/"+strconv.Itoa(s.cmd.Process.Pid)+"/status", "VmRSS:")
}

// stop ends the standby and checks that it never led.
func (s *standby) stop() error {
	if s == nil {
		return nil
	}
	_ = s.cmd.Process.Signal(os.Interrupt)
	_ = s.cmd.Wait()
	b, err := os.ReadFile(s.log)
	if err != nil {
		return err
	}
	if strings.Contains(string(b), "sluice-vk: leading") {
		return fmt.Errorf("standby: it led the node (log %s)", s.log)
	}
	return os.RemoveAll(filepath.Dir(s.log))
}
