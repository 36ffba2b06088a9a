// Command sluice-vk is the virtual kubelet: it registers a node, runs the
// pods bound to it as Slurm jobs on a site reached over SSH, and serves
// their logs to the API server.
//
//	sluice-vk --config sluice.yaml [--kubeconfig FILE] [--log-level info]
//	sluice-vk --version
//	sluice-vk config import --from-interlink SlurmConfig.yaml
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"syscall"

	"github.com/sluice-hpc/sluice/internal/config"
	"github.com/sluice-hpc/sluice/internal/version"
	"github.com/sluice-hpc/sluice/internal/vk"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "config" {
		os.Exit(configCommand(os.Args[2:], os.Stdout, os.Stderr))
	}
	configFile := flag.String("config", "", "the virtual kubelet's configuration file (required)")
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig file; if empty, the in-cluster configuration")
	level := flag.String("log-level", "info", "log level: debug, info, warn or error")
	namespace := flag.String("namespace", os.Getenv("POD_NAMESPACE"), "the virtual kubelet's namespace, holding the credentials shadows copy; if empty, default")
	printVersion := flag.Bool("version", false, "print the version and exit")
	relayBinary := flag.String("relay-binary", "", "the sluice-relay binary to place on the site; if empty, sluice-relay beside this executable")
	flag.Parse()
	if *printVersion {
		fmt.Println(versionString())
		return
	}

	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(*level)); err != nil {
		fmt.Fprintln(os.Stderr, "sluice-vk: --log-level:", err)
		os.Exit(2)
	}
	if *configFile == "" {
		fmt.Fprintln(os.Stderr, "sluice-vk: --config is required")
		os.Exit(2)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lvl}))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *configFile, vk.Options{Kubeconfig: *kubeconfig, Logger: log, Namespace: *namespace, RelayBinary: *relayBinary}); err != nil {
		log.Error("sluice-vk: exiting", "error", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, configFile string, opts vk.Options) error {
	cfg, err := config.Load(configFile)
	if err != nil {
		return err
	}
	return vk.Run(ctx, cfg, opts)
}

// versionString returns "sluice-vk VERSION (GOVERSION GOOS/GOARCH)", as
// sluice-tunnel prints its own: one version, internal/version's.
func versionString() string {
	return "sluice-vk " + version.String() + " (" + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + ")"
}
