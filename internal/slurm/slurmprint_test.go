package slurm

import (
	"fmt"
	"slices"
	"strings"
)

// heldJob is a job as slurmctld and slurmdbd hold it. printSqueue and
// printSacct print jobs the way squeue and sacct do, following the format
// and the delimiter of the command line they are given, so that a test can
// hold any job name Slurm accepts (a newline, a copy of another job's
// fields) and see what sluice makes of the real output.
type heldJob struct {
	ID, State, Reason, Host, Start, End, Exit, Name string
}

// printSqueue prints jobs as `squeue -o FORMAT [-j ID] [--name=N]` does.
func printSqueue(args []string, jobs []heldJob) ([]byte, error) {
	format, id, name := "", "", ""
	for i, a := range args {
		if i+1 < len(args) && a == "-o" {
			format = args[i+1]
		}
		if i+1 < len(args) && a == "-j" {
			id = args[i+1]
		}
		if n, ok := strings.CutPrefix(a, "--name="); ok {
			name = n
		}
	}
	if format == "" {
		return nil, fmt.Errorf("fake squeue: no -o in %q", args)
	}
	var out strings.Builder
	for _, j := range jobs {
		if id != "" && j.ID != id || name != "" && j.Name != name {
			continue
		}
		for i := 0; i < len(format); i++ {
			if format[i] != '%' || i+1 == len(format) {
				out.WriteByte(format[i])
				continue
			}
			i++
			v, ok := map[byte]string{'i': j.ID, 'T': j.State, 'r': j.Reason, 'B': j.Host,
				'S': j.Start, 'e': j.End, 'j': j.Name}[format[i]]
			if !ok {
				return nil, fmt.Errorf("fake squeue: unknown field %%%c", format[i])
			}
			out.WriteString(v)
		}
		out.WriteByte('\n')
	}
	return []byte(out.String()), nil
}

// printSacct prints jobs as `sacct -n {-p|-P} [--delimiter=D] -o F,G,… [-j IDS] [--name=N]` does.
func printSacct(args []string, jobs []heldJob) ([]byte, error) {
	var fields, ids []string
	delim, trailing, name := "|", false, ""
	for i, a := range args {
		switch {
		case a == "-o" && i+1 < len(args):
			fields = strings.Split(args[i+1], ",")
		case a == "-j" && i+1 < len(args):
			ids = strings.Split(args[i+1], ",")
		case a == "-p":
			trailing = true
		case strings.HasPrefix(a, "--delimiter="):
			delim = strings.TrimPrefix(a, "--delimiter=")
		case strings.HasPrefix(a, "--name="):
			name = strings.TrimPrefix(a, "--name=")
		}
	}
	var out strings.Builder
	for _, j := range jobs {
		if ids != nil && !slices.Contains(ids, j.ID) || name != "" && j.Name != name {
			continue
		}
		for i, f := range fields {
			v, ok := map[string]string{"JobID": j.ID, "State": j.State, "ExitCode": j.Exit, "Reason": j.Reason,
				"NodeList": j.Host, "Start": j.Start, "End": j.End, "JobName": j.Name}[f]
			if !ok {
				return nil, fmt.Errorf("fake sacct: unknown field %s", f)
			}
			if i > 0 {
				out.WriteString(delim)
			}
			out.WriteString(v)
		}
		if trailing {
			out.WriteString(delim)
		}
		out.WriteByte('\n')
	}
	return []byte(out.String()), nil
}

// queueJobs reads jobs from lines written the way sluice once asked squeue
// for them, "ID|STATE|REASON|HOST|START|END|NAME", the name last and free
// to hold '|'. Tests write what squeue holds in this form.
func queueJobs(text string) []heldJob {
	var jobs []heldJob
	for line := range strings.Lines(text) {
		f := strings.SplitN(strings.TrimSuffix(line, "\n"), "|", 7)
		f = append(f, make([]string, 7-len(f))...)
		jobs = append(jobs, heldJob{ID: f[0], State: f[1], Reason: f[2], Host: f[3], Start: f[4], End: f[5], Name: f[6]})
	}
	return jobs
}

// acctJobs reads jobs from lines "ID|STATE|EXIT|REASON|NODES|START|END|NAME".
func acctJobs(text string) []heldJob {
	var jobs []heldJob
	for line := range strings.Lines(text) {
		f := strings.SplitN(strings.TrimSuffix(line, "\n"), "|", 8)
		f = append(f, make([]string, 8-len(f))...)
		jobs = append(jobs, heldJob{ID: f[0], State: f[1], Exit: f[2], Reason: f[3], Host: f[4], Start: f[5], End: f[6], Name: f[7]})
	}
	return jobs
}
