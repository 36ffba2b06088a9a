// Command sluice-vk is the virtual kubelet: it registers a node, runs the
// pods bound to it as Slurm jobs on a site reached over SSH, and serves
// their logs to the API server.
//
//	sluice-vk --config sluice.yaml [--kubeconfig FILE] [--log-format text|json] [--log-level info]
//	          [--internal-ip IP] [--namespace NS] [--relay-binary FILE]
//	sluice-vk --version
//
// A configuration that is not valid is printed one problem a line on
// stderr, and sluice-vk exits with status 2, as for a wrong flag.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"syscall"

	"github.com/sluice-hpc/sluice/internal/config"
	"github.com/sluice-hpc/sluice/internal/version"
	"github.com/sluice-hpc/sluice/internal/vk"
	"github.com/sluice-hpc/sluice/internal/vkslog"
)

func main() {
	configFile := flag.String("config", "", "the virtual kubelet's configuration file (required)")
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig file; if empty, the in-cluster configuration")
	level := flag.String("log-level", "info", "log level: debug, info, warn or error")
	format := flag.String("log-format", vkslog.FormatText, "log format: text or json (client-go's and virtual-kubelet's lines too)")
	internalIP := flag.String("internal-ip", "", "the node's address, overriding Node.InternalIP (in a pod: its IP, from the downward API)")
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
	log, err := vkslog.NewLogger(os.Stderr, *format, lvl)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sluice-vk: --log-format:", err)
		os.Exit(2)
	}
	if *configFile == "" {
		fmt.Fprintln(os.Stderr, "sluice-vk: --config is required")
		os.Exit(2)
	}
	cfg, err := config.Load(*configFile, overrideInternalIP(*internalIP))
	if err != nil {
		printProblems(os.Stderr, err)
		os.Exit(2)
	}
	vkslog.RouteKlog(log)
	log.Info("sluice-vk: starting", "version", version.String(), "node", cfg.NodeName, "internal_ip", cfg.Node.InternalIP)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	opts := vk.Options{Kubeconfig: *kubeconfig, Logger: log, Namespace: *namespace, RelayBinary: *relayBinary}
	if err := vk.Run(ctx, cfg, opts); err != nil {
		log.Error("sluice-vk: exiting", "error", err)
		os.Exit(1)
	}
}

// overrideInternalIP sets Node.InternalIP to ip, unless ip is empty.
func overrideInternalIP(ip string) func(*config.Config) {
	return func(c *config.Config) {
		if ip != "" {
			c.Node.InternalIP = ip
		}
	}
}

// printProblems writes a configuration error to w, one problem a line:
// "sluice-vk: config FILE: KEY: what is wrong".
func printProblems(w io.Writer, err error) {
	for _, p := range config.Problems(err) {
		fmt.Fprintln(w, "sluice-vk:", p)
	}
}

// versionString returns "sluice-vk VERSION (GOVERSION GOOS/GOARCH)", as
// sluice-tunnel prints its own: one version, internal/version's.
func versionString() string {
	return "sluice-vk " + version.String() + " (" + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + ")"
}
