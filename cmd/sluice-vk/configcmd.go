package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/sluice-hpc/sluice/internal/config"
)

// configCommand runs `sluice-vk config import --from-interlink FILE`: it
// prints the sluice configuration equivalent to interLink's Slurm plugin
// file FILE, with notes on what is not carried over and placeholders for
// what sluice needs that the file does not say. It returns the exit code.
//
// It prints rather than loads interLink's file: sluice needs keys that file
// does not hold (the node's name, the login node, the SSH credentials), and
// some of its keys change meaning (a relative DataRootFolder, a flavor's
// UID); a file the site reads, fills in and keeps is reviewed once, where
// loading would repeat the guesses silently at every start.
func configCommand(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "import" {
		fmt.Fprintln(stderr, "usage: sluice-vk config import --from-interlink FILE")
		return 2
	}
	fs := flag.NewFlagSet("sluice-vk config import", flag.ContinueOnError)
	fs.SetOutput(stderr)
	from := fs.String("from-interlink", "", "the configuration file of interLink's Slurm plugin (SlurmConfig.yaml)")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	if *from == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "usage: sluice-vk config import --from-interlink FILE")
		return 2
	}
	data, err := os.ReadFile(*from)
	if err != nil {
		fmt.Fprintln(stderr, "sluice-vk: config import:", err)
		return 1
	}
	im, err := config.ImportInterLink(data)
	if err != nil {
		fmt.Fprintf(stderr, "sluice-vk: config import: %s: %v\n", *from, err)
		return 1
	}
	fmt.Fprintf(stdout, "# sluice configuration imported from interLink's Slurm plugin file %s.\n", *from)
	fmt.Fprintf(stdout, "# Fill in every value that starts with %q: sluice-vk refuses to start until then.\n", config.Placeholder)
	if len(im.Notes) > 0 {
		fmt.Fprintln(stdout, "#\n# Not carried over, or changed:")
		for _, n := range im.Notes {
			fmt.Fprintln(stdout, "#   "+n)
		}
	}
	fmt.Fprintln(stdout, "#\n# The keys and their meaning: docs/interlink-migration.md.")
	if _, err := stdout.Write(im.YAML); err != nil {
		fmt.Fprintln(stderr, "sluice-vk: config import:", err)
		return 1
	}
	return 0
}
