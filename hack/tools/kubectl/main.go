// Command kubectl is the rig's kubectl, built from k8s.io/kubectl at the
// control plane's release, for machines whose packages hold none in the
// supported version skew (Debian 12's kubernetes-client is v1.20). See
// hack/tools/build.sh.
package main

import (
	"k8s.io/component-base/cli"
	"k8s.io/kubectl/pkg/cmd"
	cmdutil "k8s.io/kubectl/pkg/cmd/util"
)

func main() {
	if err := cli.RunNoErrOutput(cmd.NewDefaultKubectlCommand()); err != nil {
		// prints the error as kubectl does and exits non-zero
		cmdutil.CheckErr(err)
	}
}
