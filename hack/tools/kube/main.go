// Command kube is the rig's Kubernetes control plane in one binary: the API
// server, the controller manager and the scheduler of k8s.io/kubernetes,
// chosen by the first argument, so that the three link once.
//
//	kube apiserver|controller-manager|scheduler [FLAGS]
//	kube version
package main

import (
	"fmt"
	"os"
	"sort"
	"strings"
	_ "time/tzdata" // time zones for CronJob, as the upstream mains do

	"github.com/spf13/cobra"
	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"          // the JSON log format
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go metrics
	_ "k8s.io/component-base/metrics/prometheus/version"  // the build-info metric
	"k8s.io/component-base/version"
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
)

// commands maps each subcommand to the upstream constructor of its command.
var commands = map[string]func() *cobra.Command{
	"apiserver":          apiserver.NewAPIServerCommand,
	"controller-manager": controllermanager.NewControllerManagerCommand,
	"scheduler":          func() *cobra.Command { return scheduler.NewSchedulerCommand() },
}

func main() {
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	name := os.Args[1]
	switch name {
	case "version", "--version":
		fmt.Println(version.Get().GitVersion)
		return
	case "help", "--help", "-h":
		usage()
		return
	}
	newCommand, ok := commands[name]
	if !ok {
		fmt.Fprintf(os.Stderr, "kube: unknown command %q\n", name)
		usage()
		os.Exit(2)
	}
	command := newCommand()
	command.SetArgs(os.Args[2:])
	os.Exit(cli.Run(command))
}

func usage() {
	names := make([]string, 0, len(commands))
	for name := range commands {
		names = append(names, name)
	}
	sort.Strings(names)
	fmt.Fprintf(os.Stderr, "usage: kube %s [FLAGS]\n       kube version\n", strings.Join(names, "|"))
}
