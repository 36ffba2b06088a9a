package sshxtest

import (
	"errors"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/pkg/sftp"
	"golang.org/x/crypto/ssh"
)

// signals maps SSH signal names to the signals the server sends.
var signals = map[string]syscall.Signal{
	"HUP": syscall.SIGHUP, "INT": syscall.SIGINT, "KILL": syscall.SIGKILL, "TERM": syscall.SIGTERM,
}

// session serves one session channel until the client closes it or the
// command or sftp server ends.
func (s *Server) session(ch ssh.Channel, reqs <-chan *ssh.Request) {
	defer ch.Close()
	var (
		mu  sync.Mutex
		cmd *exec.Cmd
		wg  sync.WaitGroup
	)
	kill := func(sig syscall.Signal) {
		mu.Lock()
		defer mu.Unlock()
		if cmd != nil && cmd.Process != nil {
			syscall.Kill(-cmd.Process.Pid, sig)
		}
	}
	defer wg.Wait()
	defer kill(syscall.SIGKILL)
	for req := range reqs {
		switch req.Type {
		case "exec":
			var p struct{ Command string }
			if err := ssh.Unmarshal(req.Payload, &p); err != nil {
				req.Reply(false, nil)
				continue
			}
			mu.Lock()
			cmd = exec.Command("/bin/sh", "-c", p.Command)
			cmd.Stdin, cmd.Stdout, cmd.Stderr = ch, ch, ch.Stderr()
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			cmd.WaitDelay = time.Second
			err := cmd.Start()
			mu.Unlock()
			req.Reply(err == nil, nil)
			if err != nil {
				return
			}
			wg.Add(1)
			go func(cmd *exec.Cmd) {
				defer wg.Done()
				sendExit(ch, cmd.Wait())
				ch.Close()
			}(cmd)
		case "subsystem":
			var p struct{ Name string }
			if err := ssh.Unmarshal(req.Payload, &p); err != nil || p.Name != "sftp" {
				req.Reply(false, nil)
				continue
			}
			req.Reply(true, nil)
			wg.Add(1)
			go func() {
				defer wg.Done()
				serveSFTP(ch)
			}()
		case "signal":
			var p struct{ Signal string }
			if ssh.Unmarshal(req.Payload, &p) == nil {
				if sig, ok := signals[p.Signal]; ok {
					kill(sig)
				}
			}
		default:
			if req.WantReply {
				req.Reply(false, nil)
			}
		}
	}
}

// sendExit reports how a command ended, as exit-status or exit-signal.
func sendExit(ch ssh.Channel, err error) {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			name := "KILL"
			for n, sig := range signals {
				if sig == ws.Signal() {
					name = n
				}
			}
			ch.SendRequest("exit-signal", false, ssh.Marshal(struct {
				Signal     string
				CoreDumped bool
				Error      string
				Lang       string
			}{Signal: name}))
			return
		}
	}
	code := 0
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		code = 255
	}
	ch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{uint32(code)}))
}

func serveSFTP(ch ssh.Channel) {
	defer ch.Close()
	srv, err := sftp.NewServer(ch)
	if err != nil {
		return
	}
	srv.Serve()
	srv.Close()
}
