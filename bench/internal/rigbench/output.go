//go:build bench

package rigbench

import (
	"bytes"
	"fmt"
	"os/exec"
)

// Output runs cmd and returns its standard output; if it fails, the error
// holds its standard error.
func Output(cmd *exec.Cmd) ([]byte, error) {
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%w: %s", err, bytes.TrimSpace(stderr.Bytes()))
	}
	return stdout.Bytes(), nil
}
