// Command helm is the helm the chart's tests and the demo use, built from
// helm.sh/helm/v4 (never downloaded as a binary). See hack/tools/build.sh.
package main

import (
	"errors"
	"os"

	helmcmd "helm.sh/helm/v4/pkg/cmd"
	"helm.sh/helm/v4/pkg/kube"
)

func main() {
	// The field manager helm names in managedFields, whatever this binary
	// is called (helm's own main sets it the same way).
	kube.ManagedFieldsManager = "helm"
	cmd, err := helmcmd.NewRootCmd(os.Stdout, os.Args[1:], helmcmd.SetupLogging)
	if err != nil {
		os.Stderr.WriteString("helm: " + err.Error() + "\n")
		os.Exit(1)
	}
	if err := cmd.Execute(); err != nil {
		// cobra has printed the error
		if cerr, ok := errors.AsType[helmcmd.CommandError](err); ok {
			os.Exit(cerr.ExitCode)
		}
		os.Exit(1)
	}
}
