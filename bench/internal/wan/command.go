package wan

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

// Command is the name of the subcommand the benchmarks run Main as.
const Command = "wan"

// Args returns the arguments of Main (after Command) for a relay that
// listens on listen, in the network namespace it is started in, and
// passes connections to target across link.
func Args(listen, target string, link Link) []string {
	return []string{"-listen", listen, "-target", target, "-delay", link.Delay.String(),
		"-rate", strconv.FormatInt(link.Rate, 10)}
}

// Main runs a Relay as a process of its own, so that a benchmark can put
// one in any network namespace: it prints the address it listens on as
// its first line of standard output, serves until SIGTERM or SIGINT, and
// logs to standard error. It returns the exit code.
func Main(args []string) int {
	fs := flag.NewFlagSet(Command, flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:0", "address to listen on")
	var r Relay
	fs.StringVar(&r.Target, "target", "", "host:port to pass each connection to")
	fs.DurationVar(&r.Delay, "delay", 0, "one-way delay, each way (the round trip grows by twice this)")
	fs.Int64Var(&r.Rate, "rate", 0, "bytes a second one direction of a connection keeps (0: DefaultRate)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if r.Target == "" || fs.NArg() > 0 || r.Delay < 0 || r.Delay > MaxRTT || r.Rate < 0 {
		fmt.Fprintln(os.Stderr, "wan: want -target HOST:PORT, a -delay of 0 to", MaxRTT, "and a -rate not negative")
		return 2
	}
	r.Log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, "wan:", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	fmt.Println(ln.Addr())
	r.Log.Info("relay up", "listen", ln.Addr().String(), "target", r.Target, "delay", r.Delay, "limit", r.limit())
	if err := r.Serve(ctx, ln); err != nil {
		r.Log.Error("relay ended", "error", err)
		return 1
	}
	return 0
}

// ReadAddr reads the address Main prints first from out, waiting at most
// timeout.
func ReadAddr(out io.Reader, timeout time.Duration) (string, error) {
	line := make(chan string, 1)
	go func() {
		var b []byte
		one := make([]byte, 1)
		for {
			n, err := out.Read(one)
			if n == 1 && one[0] != '\n' {
				b = append(b, one[0])
			}
			if err != nil || n == 1 && one[0] == '\n' {
				line <- string(b)
				return
			}
		}
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case s := <-line:
		if _, _, err := net.SplitHostPort(s); err != nil {
			return "", fmt.Errorf("wan relay: no address: %q", s)
		}
		return s, nil
	case <-t.C:
		return "", fmt.Errorf("wan relay: no address within %v", timeout)
	}
}
