package vk

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/sluice-hpc/sluice/internal/config"
	"github.com/sluice-hpc/sluice/internal/provider"
	"github.com/sluice-hpc/sluice/internal/shadow"
	"github.com/sluice-hpc/sluice/internal/slurm"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
)

// shadows returns the shadow manager of a node whose tunnel is on (S3), or
// nil when it is off.
func shadows(cfg *config.Config, opts Options, client kubernetes.Interface, recorder record.EventRecorder, log *slog.Logger) (provider.Shadows, error) {
	if !cfg.Network.EnableTunnel || cfg.Network.ShadowMode != "ssh" {
		return nil, nil
	}
	ns := opts.Namespace
	if ns == "" {
		ns = "default"
	}
	spec := shadow.SpecFrom(cfg, ns)
	if opts.PublishKeySecret && cfg.Network.SSH.Auth == "publickey" {
		// With Kerberos the tunnels read KeytabSecret: no key to publish.
		spec.KeyFile, spec.CertificateFile = cfg.Network.SSH.KeyFile, cfg.Network.SSH.CertificateFile
	}
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	return &shadow.Manager{Client: client, Spec: spec, Log: log, Recorder: recorder}, nil
}

// relayPlacer returns the function that places the relay binary on the
// site once: the file opts.RelayBinary, else sluice-relay beside the
// running executable. A missing binary is an error only for the pods that
// need it.
func relayPlacer(opts Options, c *slurm.Client) func(ctx context.Context) (string, error) {
	return func(ctx context.Context) (string, error) {
		path := opts.RelayBinary
		if path == "" {
			exe, err := os.Executable()
			if err != nil {
				return "", fmt.Errorf("find the relay binary: %w", err)
			}
			path = filepath.Join(filepath.Dir(exe), "sluice-relay")
		}
		bin, err := os.ReadFile(path)
		if err != nil {
			return "", fmt.Errorf("read the relay binary: %w", err)
		}
		return c.PlaceRelay(ctx, bin)
	}
}
