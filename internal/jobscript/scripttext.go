package jobscript

import (
	"errors"
	"fmt"
	"strings"
)

// sbatch refuses a batch script that holds a NUL byte ("The Slurm
// controller does not allow scripts that contain a NULL character") or a
// CR LF ("Batch script contains DOS line breaks"), at every submission. The
// text a pod puts into the script as it is, quoted (its containers'
// command and args, its pre-exec snippet), is checked for both, so that the
// pod is refused instead; a lone CR is accepted by sbatch and kept. Every
// other value in the script is a name or a path without control characters.

// checkScriptText checks text that the batch script holds as it is.
func checkScriptText(s string) error {
	switch {
	case strings.IndexByte(s, 0) >= 0:
		return errors.New("holds a NUL byte, which sbatch refuses in a batch script")
	case strings.Contains(s, "\r\n"):
		return errors.New("holds a CR LF line break, which sbatch refuses in a batch script (use LF line breaks)")
	}
	return nil
}

// checkArgv checks each word of a container's command or args; it returns
// the index of the first word at fault.
func checkArgv(words []string) (int, error) {
	for i, w := range words {
		if err := checkScriptText(w); err != nil {
			return i, err
		}
	}
	return 0, nil
}

// checkRendered is the last check of a rendered script, for what the
// checks of its parts missed: sbatch would refuse it.
func checkRendered(script []byte) error {
	if err := checkScriptText(string(script)); err != nil {
		return fmt.Errorf("the batch script %w", err)
	}
	return nil
}
