package jobscript

import (
	"fmt"
	"path"
	"strconv"
)

// ForwardArgv is the command line, run on the login node, that carries one
// kubectl port-forward stream to port on the loopback of a running job's
// batch host: srun into the job's allocation (as ExecArgv does) running the
// relay binary placed on the site (Client.PlaceRelay) with --connect, which
// joins srun's standard streams to 127.0.0.1:port. Each word is to be
// quoted (site.Join).
func ForwardArgv(job string, host, relay string, port int) ([]string, error) {
	argv, err := stepArgv(job, host)
	if err != nil {
		return nil, fmt.Errorf("port-forward: %w", err)
	}
	if port < 1 || port > 65535 {
		return nil, fmt.Errorf("port-forward: port %d out of range", port)
	}
	if !path.IsAbs(relay) || path.Clean(relay) != relay || hasControl(relay) {
		return nil, fmt.Errorf("port-forward: relay binary %q is not a clean absolute path", relay)
	}
	return append(argv, "--unbuffered", "--", relay, "--connect", "127.0.0.1:"+strconv.Itoa(port)), nil
}
