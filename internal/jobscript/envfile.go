package jobscript

import (
	"fmt"
	"strings"

	"github.com/sluice-hpc/sluice/internal/site"
)

// envEntry is one variable of a container's environment.
type envEntry struct {
	Name, Value string
}

// envFileMode is the mode of env/<container>: it may hold secrets.
const envFileMode = 0o600

// envFilePath is the env file of a container, relative to the job directory.
func envFilePath(container string) string { return "env/" + container }

// formatEnvFile writes vars as the batch script reads them: one
// NAME='value' assignment per variable, in order, values quoted for the
// shell (a value may span lines). Names must be shell names the shell lets a
// script set (checkAssignable), and values free of NUL bytes, which no
// environment can hold.
func formatEnvFile(vars []envEntry) ([]byte, error) {
	var b strings.Builder
	for _, v := range vars {
		if err := checkAssignable(v.Name); err != nil {
			return nil, err
		}
		if strings.IndexByte(v.Value, 0) >= 0 {
			return nil, fmt.Errorf("value of %s holds a NUL byte", v.Name)
		}
		b.WriteString(v.Name + "=" + site.Quote(v.Value) + "\n")
	}
	return []byte(b.String()), nil
}
