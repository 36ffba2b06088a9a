// Command sluice-vk is the virtual kubelet: it registers a node, runs the
// pods bound to it as Slurm jobs on a site reached over SSH, and serves
// their logs to the API server.
//
//	sluice-vk --config sluice.yaml [--kubeconfig FILE] [--log-format text|json] [--log-level info]
//	          [--internal-ip IP] [--namespace NS] [--relay-binary FILE] [--health-listen :10248]
//	          [--leader-elect [--leader-elect-namespace NS] [--leader-elect-lease-duration 15s] …]
//	sluice-vk --version
//	sluice-vk config import --from-interlink SlurmConfig.yaml
//	sluice-vk doctor --config sluice.yaml [--json] [--queue-wait 2m] [-v]
//	sluice-vk uninstall --node NAME --namespace NS --deployment NAME --selector SEL [--timeout 5m]
//
// --health-listen serves /healthz and /readyz (vk.Health) over plain HTTP,
// for the kubelet's probes.
//
// doctor checks the site the configuration names and prints one line per
// check (internal/doctor); it exits 1 when a check failed.
//
// uninstall is the chart's pre-delete hook: it deletes the node's pods (the
// running sluice-vk cancels their jobs), scales sluice-vk to zero, then
// deletes the node and the leader Lease (vk.Uninstall).
//
// A configuration that is not valid is printed one problem a line on
// stderr, and sluice-vk exits with status 2, as for a wrong flag.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"github.com/sluice-hpc/sluice/internal/config"
	"github.com/sluice-hpc/sluice/internal/version"
	"github.com/sluice-hpc/sluice/internal/vk"
	"github.com/sluice-hpc/sluice/internal/vkslog"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "config" {
		os.Exit(configCommand(os.Args[2:], os.Stdout, os.Stderr))
	}
	if len(os.Args) > 1 && os.Args[1] == "uninstall" {
		os.Exit(uninstall(os.Args[2:], os.Stderr))
	}
	if len(os.Args) > 1 && os.Args[1] == "doctor" {
		os.Exit(doctorCommand(os.Args[2:], os.Stdout, os.Stderr))
	}
	flag.Usage = usage
	configFile := flag.String("config", "", "the virtual kubelet's configuration file (required)")
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig file; if empty, the in-cluster configuration")
	level := flag.String("log-level", "info", "log level: debug, info, warn or error")
	format := flag.String("log-format", vkslog.FormatText, "log format: text or json (client-go's and virtual-kubelet's lines too)")
	internalIP := flag.String("internal-ip", "", "the node's address, overriding Node.InternalIP (in a pod: its IP, from the downward API)")
	namespace := flag.String("namespace", os.Getenv("POD_NAMESPACE"), "the virtual kubelet's namespace, holding the credentials shadows copy; if empty, default")
	printVersion := flag.Bool("version", false, "print the version and exit")
	publishKey := flag.Bool("publish-key-secret", false, "on a node confined to Network.TenantNamespace, write Network.SSH.KeySecret there from Network.SSH.KeyFile (the chart's credentials.existingSecret)")
	healthListen := flag.String("health-listen", "", "serve /healthz and /readyz over plain HTTP on this address (:10248); if empty, not served")
	relayBinary := flag.String("relay-binary", "", "the sluice-relay binary to place on the site, built for its machine; if empty, the one for the site's uname -m beside this executable (sluice-relay-linux-ARCH, else sluice-relay)")
	var el vk.Election
	elect := flag.Bool("leader-elect", false, "run the node only while holding the Lease sluice-vk-<NodeName>: replicas take over from each other")
	flag.StringVar(&el.Namespace, "leader-elect-namespace", os.Getenv("POD_NAMESPACE"), "the Lease's namespace (required with --leader-elect)")
	flag.DurationVar(&el.LeaseDuration, "leader-elect-lease-duration", 15*time.Second, "how long a standby waits after the leader's last renewal")
	flag.DurationVar(&el.RenewDeadline, "leader-elect-renew-deadline", 10*time.Second, "how long the leader tries to renew before it stops")
	flag.DurationVar(&el.RetryPeriod, "leader-elect-retry-period", 2*time.Second, "how often candidates try the Lease")
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
	if *elect && el.Namespace == "" {
		fmt.Fprintln(os.Stderr, "sluice-vk: --leader-elect needs --leader-elect-namespace (or POD_NAMESPACE)")
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
	opts := vk.Options{Kubeconfig: *kubeconfig, Logger: log, Namespace: *namespace, RelayBinary: *relayBinary, PublishKeySecret: *publishKey}
	if *healthListen != "" {
		ln, err := net.Listen("tcp", *healthListen)
		if err != nil {
			log.Error("sluice-vk: exiting", "error", fmt.Errorf("health server: %w", err))
			os.Exit(1)
		}
		opts.Health = &vk.Health{}
		go func() {
			if err := vk.ServeHealth(ctx, ln, opts.Health, log); err != nil {
				log.Error("sluice-vk: health server stopped", "error", err)
			}
		}()
	}
	run := vk.Run
	if *elect {
		el.Identity = identity()
		run = func(ctx context.Context, cfg *config.Config, opts vk.Options) error {
			return vk.RunElected(ctx, cfg, opts, el)
		}
	}
	if err := run(ctx, cfg, opts); err != nil {
		log.Error("sluice-vk: exiting", "error", err)
		os.Exit(1)
	}
}

// usage prints how to call sluice-vk: its subcommands, then its flags.
func usage() {
	w := flag.CommandLine.Output()
	fmt.Fprint(w, `sluice-vk runs a virtual node whose pods are Slurm jobs on an HPC site.

Usage:
  sluice-vk --config FILE [flags]     run the node
  sluice-vk config import --from-interlink FILE
                                      write a sluice configuration from interLink's SlurmConfig.yaml
  sluice-vk doctor --config FILE      check the site the configuration names, one line a check
  sluice-vk uninstall --node NAME ... the chart's pre-delete hook: delete the node's pods, then the node
  sluice-vk --version                 print the version

Run "sluice-vk SUBCOMMAND --help" for a subcommand's flags.

Flags:
`)
	flag.PrintDefaults()
}

// identity names this process in the Lease: its pod's name (POD_NAME, else
// the host name) and a random suffix, so that a container restarted in the
// same pod is a new candidate, not the leader it replaces.
func identity() string {
	name := os.Getenv("POD_NAME")
	if name == "" {
		name, _ = os.Hostname()
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return name + "_" + hex.EncodeToString(b)
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
