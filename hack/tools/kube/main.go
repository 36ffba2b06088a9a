// Command kube is the rig's Kubernetes in one binary: the API server, the
// controller manager and the scheduler of k8s.io/kubernetes, and the node's
// kubelet and kube-proxy, chosen by the first argument, so that all link once.
//
//	kube apiserver|controller-manager|kubelet|proxy|scheduler [FLAGS]
//	kube version
//	kube commands
package main

import (
	"context"
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
	kubeproxy "k8s.io/kubernetes/cmd/kube-proxy/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
	kubelet "k8s.io/kubernetes/cmd/kubelet/app"
)

// commands maps each subcommand to the upstream constructor of its command.
var commands = map[string]func() *cobra.Command{
	"apiserver":          apiserver.NewAPIServerCommand,
	"controller-manager": controllermanager.NewControllerManagerCommand,
	"scheduler":          func() *cobra.Command { return scheduler.NewSchedulerCommand() },
	"kubelet":            func() *cobra.Command { return kubelet.NewKubeletCommand(context.Background()) },
	"proxy":              kubeproxy.NewProxyCommand,
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
	case "commands":
		// what this binary holds, one line: hack/tools/build.sh rebuilds a
		// cached binary whose list is not the one it wants
		fmt.Println(strings.Join(commandNames(), " "))
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

func commandNames() []string {
	names := make([]string, 0, len(commands))
	for name := range commands {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

func usage() {
	fmt.Fprintf(os.Stderr, "usage: kube %s [FLAGS]\n       kube version|commands\n", strings.Join(commandNames(), "|"))
}
