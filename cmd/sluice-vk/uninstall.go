package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/sluice-hpc/sluice/internal/vk"
)

// uninstall runs `sluice-vk uninstall`, the chart's pre-delete hook (see
// vk.Uninstall), and returns the exit status: 0 done, 1 failed, 2 usage.
func uninstall(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("sluice-vk uninstall", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var u vk.Uninstall
	fs.StringVar(&u.Node, "node", "", "the virtual node's name (required)")
	fs.StringVar(&u.Namespace, "namespace", os.Getenv("POD_NAMESPACE"), "sluice-vk's namespace (required)")
	fs.StringVar(&u.Deployment, "deployment", "", "sluice-vk's Deployment (required)")
	fs.StringVar(&u.Selector, "selector", "", "label selector of sluice-vk's pods (required)")
	fs.BoolVar(&u.DeleteCopies, "delete-copies", false, "delete the copies of --namespace's credentials in shadow namespaces (all that are marked as such)")
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig file; if empty, the in-cluster configuration")
	timeout := fs.Duration("timeout", 5*time.Minute, "how long to wait for the pods to go")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "sluice-vk uninstall: unexpected arguments %q\n", fs.Args())
		return 2
	}
	for _, f := range []struct{ name, v string }{{"node", u.Node}, {"namespace", u.Namespace}, {"deployment", u.Deployment}, {"selector", u.Selector}} {
		if f.v == "" {
			fmt.Fprintf(stderr, "sluice-vk uninstall: --%s is required\n", f.name)
			return 2
		}
	}
	u.Log = slog.New(slog.NewTextHandler(stderr, nil))
	client, err := vk.Client(*kubeconfig)
	if err != nil {
		fmt.Fprintln(stderr, "sluice-vk uninstall:", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	if err := u.Run(ctx, client); err != nil {
		fmt.Fprintln(stderr, "sluice-vk", err)
		return 1
	}
	return 0
}
