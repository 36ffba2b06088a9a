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

	"github.com/sluice-hpc/sluice/internal/config"
	"github.com/sluice-hpc/sluice/internal/doctor"
)

// doctorCommand runs `sluice-vk doctor --config FILE [--json]`: it checks
// the site the configuration names (doctor.Doctor), prints one line per
// check (or JSON) on stdout and returns the exit status: 0 when nothing
// failed, 1 when a check failed, 2 for a wrong flag or configuration.
func doctorCommand(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("sluice-vk doctor", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configFile := fs.String("config", "", "the virtual kubelet's configuration file (required)")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	queueWait := fs.Duration("queue-wait", 2*time.Minute, "how long the probe job may wait in the queue")
	verbose := fs.Bool("v", false, "log what sluice's code does on the way (on stderr)")
	relayBinary := fs.String("relay-binary", "", "the sluice-relay sluice-vk is given; if empty, the relays beside this executable")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	if *configFile == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "usage: sluice-vk doctor --config FILE [--json] [--queue-wait 2m] [--relay-binary FILE] [-v]")
		return 2
	}
	cfg, err := config.Load(*configFile)
	if err != nil {
		printProblems(stderr, err)
		return 2
	}
	d := &doctor.Doctor{Config: cfg, QueueWait: *queueWait, RelayBinary: *relayBinary}
	if *verbose {
		d.Logger = slog.New(slog.NewTextHandler(stderr, nil))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	report := d.Run(ctx)
	if *asJSON {
		err = report.WriteJSON(stdout)
	} else {
		err = report.WriteText(stdout)
	}
	if err != nil {
		fmt.Fprintln(stderr, "sluice-vk doctor:", err)
		return 1
	}
	if report.Failed() {
		return 1
	}
	return 0
}
