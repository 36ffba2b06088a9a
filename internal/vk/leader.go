package vk

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/sluice-hpc/sluice/internal/config"
	"github.com/sluice-hpc/sluice/internal/kubeconfig"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// Election makes replicas of one node take turns: only the replica that
// holds the Lease runs the node (registers it, submits, polls, cancels,
// serves the kubelet API); the others wait to take over.
type Election struct {
	// Namespace holds the Lease LeaseName(NodeName).
	Namespace string
	// Identity names this replica in the Lease (its pod's name).
	Identity string
	// LeaseDuration, RenewDeadline and RetryPeriod are client-go's: a
	// standby takes over at most LeaseDuration after the leader last renewed
	// (at once when the leader stops and releases the Lease). If zero, 15s,
	// 10s and 2s.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// Client reaches the API server. If nil, one is made from
	// Options.Kubeconfig.
	Client kubernetes.Interface
}

// LeaseName is the name of the Lease the replicas of node elect their
// leader with.
func LeaseName(node string) string {
	return "sluice-vk-" + node
}

// errLostLease ends a leader that lost its Lease while it ran: it must stop
// acting at once; restarted, it becomes a standby.
var errLostLease = errors.New("leader election: lost the lease")

// RunElected runs the virtual node as Run does, while this replica holds
// the Lease. It returns when ctx ends (the node stopped first, then the
// Lease released, so that a standby takes over without waiting), or with
// an error when the node stopped or the Lease was lost.
func RunElected(ctx context.Context, cfg *config.Config, opts Options, el Election) error {
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	if el.LeaseDuration == 0 {
		el.LeaseDuration, el.RenewDeadline, el.RetryPeriod = 15*time.Second, 10*time.Second, 2*time.Second
	}
	client := el.Client
	if client == nil {
		rc, err := kubeconfig.Load(opts.Kubeconfig)
		if err != nil {
			return err
		}
		if client, err = kubernetes.NewForConfig(rc); err != nil {
			return fmt.Errorf("kubernetes client: %w", err)
		}
	}
	if cfg.Node.MetricsListen != "" && opts.metrics == nil {
		ms, err := newMetricsServer(cfg.Node.MetricsListen, log)
		if err != nil {
			return err
		}
		defer ms.ln.Close()
		if err := ms.registerLeader(opts.Health); err != nil {
			return fmt.Errorf("metrics: %w", err)
		}
		mctx, stop := context.WithCancel(ctx)
		defer stop()
		go ms.serve(mctx)
		opts.metrics = ms
	}
	return elect(ctx, client, el, LeaseName(cfg.NodeName), log, opts.Health, func(ctx context.Context) error {
		return Run(ctx, cfg, opts)
	})
}

// elect runs run while this replica holds the Lease name (see RunElected).
func elect(ctx context.Context, client kubernetes.Interface, el Election, name string, log *slog.Logger, health *Health, run func(context.Context) error) error {
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: el.Namespace, Name: name},
		Client:     client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: el.Identity},
	}

	// The election outlives ctx until the node has stopped: the Lease is
	// released only then.
	electCtx, stopElection := context.WithCancel(context.WithoutCancel(ctx))
	defer stopElection()
	var leading atomic.Bool
	ran := make(chan error, 1)
	health.electing()
	var le *leaderelection.LeaderElector
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: lock, Name: name, ReleaseOnCancel: true,
		LeaseDuration: el.LeaseDuration, RenewDeadline: el.RenewDeadline, RetryPeriod: el.RetryPeriod,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(lead context.Context) {
				if ctx.Err() != nil || electCtx.Err() != nil {
					return // stopping: the node must not start
				}
				leading.Store(true)
				health.setLeading(true, func() error { return le.Check(leaseTolerance) })
				defer health.setLeading(false, nil)
				log.Info("sluice-vk: leading", "lease", el.Namespace+"/"+name, "identity", el.Identity)
				runCtx, cancel := context.WithCancel(lead)
				defer context.AfterFunc(ctx, cancel)()
				err := run(runCtx)
				cancel()
				ran <- err
				stopElection()
			},
			OnStoppedLeading: func() {},
			OnNewLeader: func(id string) {
				health.newLeader(id)
				if id != el.Identity {
					log.Info("sluice-vk: standby", "lease", el.Namespace+"/"+name, "leader", id)
				}
			},
		},
	})
	if err != nil {
		return fmt.Errorf("leader election: %w", err)
	}
	defer context.AfterFunc(ctx, func() {
		if !leading.Load() {
			stopElection()
		}
	})()
	log.Info("sluice-vk: waiting for the lease", "lease", el.Namespace+"/"+name, "identity", el.Identity)
	le.Run(electCtx)
	if !leading.Load() {
		return nil // ctx ended before this replica led
	}
	err = <-ran
	switch {
	case err != nil:
		return err
	case ctx.Err() == nil:
		return errLostLease
	}
	return nil
}
