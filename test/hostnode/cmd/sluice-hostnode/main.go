// Command sluice-hostnode is the rig's host node: a virtual kubelet that
// runs the pods bound to it (the shadows of offloaded pods) as processes
// of the rig host. It is test infrastructure; see test/hostnode/LIMITS.md.
//
//	sluice-hostnode --kubeconfig=$RIG_KUBECONFIG \
//	    --image=ghcr.io/sluice-hpc/sluice-tunnel:latest=/tmp/x/sluice-tunnel \
//	    --backend=default/kubernetes:443=127.0.0.1:6443 \
//	    --backend=default/redis:6379=127.0.0.1:6379
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/sluice-hpc/sluice/test/hostnode"
)

func main() {
	// the same binary is each container's init helper
	hostnode.InitMain()
	if err := run(os.Args[1:]); err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, "sluice-hostnode:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	opts, level, err := parseFlags(args)
	if err != nil {
		return err
	}
	opts.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return hostnode.Run(ctx, opts)
}

// parseFlags reads the command line into Options.
func parseFlags(args []string) (hostnode.Options, slog.Level, error) {
	opts := hostnode.Options{Images: map[string]string{}, Backends: map[hostnode.ServicePortKey]string{}}
	var level slog.Level
	fs := flag.NewFlagSet("sluice-hostnode", flag.ContinueOnError)
	fs.StringVar(&opts.NodeName, "node-name", hostnode.DefaultNodeName, "the node's name")
	fs.StringVar(&opts.Kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig file (default $KUBECONFIG)")
	fs.Func("image", "IMAGE=PATH: run the host binary PATH for containers of IMAGE (repeatable)", func(s string) error {
		image, path, err := hostnode.ParseImage(s)
		if err == nil {
			opts.Images[image] = path
		}
		return err
	})
	fs.Func("backend", "NAMESPACE/NAME:PORT=HOST:PORT: a fixed backend of a Service port (repeatable)", func(s string) error {
		key, addr, err := hostnode.ParseBackend(s)
		if err == nil {
			opts.Backends[key] = addr
		}
		return err
	})
	fs.Func("proxy-namespace", "serve only the Services of this namespace (repeatable; default: all)", func(s string) error {
		opts.ProxyNamespaces = append(opts.ProxyNamespaces, s)
		return nil
	})
	fs.StringVar(&opts.StateDir, "state-dir", "", "directory of the pods' files (default /var/lib/sluice-hostnode/NODE)")
	fs.StringVar(&opts.HostsFile, "hosts-file", "", "file to keep every Service's names and proxy address in, /etc/hosts format")
	fs.StringVar(&opts.KubeletListen, "kubelet-listen", "127.0.0.1:0", "kubelet API address (port 0: a free one)")
	fs.DurationVar(&opts.MaxBackoff, "max-backoff", 0, "cap of the wait before a container restarts (default 10s)")
	fs.TextVar(&level, "log-level", slog.LevelInfo, "log level: debug, info, warn or error")
	if err := fs.Parse(args); err != nil {
		return opts, level, err
	}
	if fs.NArg() > 0 {
		return opts, level, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	return opts, level, nil
}
