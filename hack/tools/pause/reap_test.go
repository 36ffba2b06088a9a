//go:build linux

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestPauseReapsAsPID1 runs pause as PID 1 of a new PID namespace
// (unshare, as root), leaves an orphan in that namespace (nsenter: a shell
// that exits before its sleep), and checks that the orphan, once it has
// exited, does not stay a zombie child of pause.
func TestPauseReapsAsPID1(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for a PID namespace")
	}
	for _, tool := range []string{"unshare", "nsenter"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s", tool)
		}
	}
	bin := buildPause(t)
	// --kill-child: killing unshare below must end pause too, which would
	// otherwise outlive the test (and keep whatever it inherited open).
	cmd := exec.Command("unshare", "--pid", "--fork", "--kill-child", bin)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	pause := waitChild(t, cmd.Process.Pid, filepath.Base(bin))

	// A shell in pause's namespace starts a short sleep and exits: the
	// sleep becomes pause's child, and a zombie unless pause reaps it.
	// (Its output goes to /dev/null, so that the shell is waited for, not
	// the sleep too.)
	if out, err := exec.Command("nsenter", "-t", strconv.Itoa(pause), "-p", "--",
		"sh", "-c", "sleep 1 >/dev/null 2>&1 &").CombinedOutput(); err != nil {
		t.Fatalf("nsenter: %v: %s", err, out)
	}
	deadline := time.Now().Add(10 * time.Second)
	sawChild := false
	for {
		kids := children(pause)
		if len(kids) > 0 {
			sawChild = true
		}
		if sawChild && len(kids) == 0 {
			break // reaped
		}
		if time.Now().After(deadline) {
			states := make([]string, 0, len(kids))
			for _, k := range kids {
				states = append(states, k+":"+procState(k))
			}
			t.Fatalf("pause (pid %d) still has children %v 10 s on (saw one: %v)", pause, states, sawChild)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitChild returns the PID of parent's child named name, polling until it
// appears.
func waitChild(t *testing.T, parent int, name string) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for _, k := range children(parent) {
			comm, _ := os.ReadFile("/proc/" + k + "/comm")
			if strings.TrimSpace(string(comm)) == name {
				pid, _ := strconv.Atoi(k)
				return pid
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no %s under pid %d", name, parent)
	return 0
}

// children returns the PIDs of pid's children.
func children(pid int) []string {
	tasks, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/children")
	var out []string
	for _, f := range tasks {
		b, _ := os.ReadFile(f)
		out = append(out, strings.Fields(string(b))...)
	}
	return out
}

func procState(pid string) string {
	b, _ := os.ReadFile("/proc/" + pid + "/stat")
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2 : i+3]
	}
	return "?"
}
