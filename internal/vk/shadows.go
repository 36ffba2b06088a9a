package vk

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/sluice-hpc/sluice/internal/config"
	"github.com/sluice-hpc/sluice/internal/provider"
	"github.com/sluice-hpc/sluice/internal/relaybin"
	"github.com/sluice-hpc/sluice/internal/shadow"
	"github.com/sluice-hpc/sluice/internal/site"
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
// site once: the one relaybin.Find gives for the site's machine (the
// explicit opts.RelayBinary, else the relay for that machine beside the
// running executable). machine is the login host's uname -m read at start;
// if empty (the site did not answer then), it is asked at placement. A
// missing or unfit binary is an error only for the pods that need it.
func relayPlacer(opts Options, c *slurm.Client, r site.Runner, machine string) func(ctx context.Context) (string, error) {
	return func(ctx context.Context) (string, error) {
		m := machine
		if m == "" {
			var err error
			if m, err = siteMachine(ctx, r); err != nil {
				return "", err
			}
		}
		exe, err := os.Executable()
		if err != nil {
			return "", fmt.Errorf("find the relay binary: %w", err)
		}
		path, err := relaybin.Find(opts.RelayBinary, filepath.Dir(exe), m)
		if err != nil {
			return "", fmt.Errorf("find the relay binary: %w", err)
		}
		bin, err := os.ReadFile(path)
		if err != nil {
			return "", fmt.Errorf("read the relay binary: %w", err)
		}
		return c.PlaceRelay(ctx, bin)
	}
}

// siteMachine asks the login host for its machine (uname -m).
func siteMachine(ctx context.Context, r site.Runner) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, describeTimeout)
	defer cancel()
	out, err := site.RunBounded(ctx, r, 64, "uname", "-m")
	if err != nil {
		return "", fmt.Errorf("uname -m on the site: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}
