// Command demo runs a pod as a Slurm job on the local rig, end to end: it
// loads a site configuration, turns hack/demo/pod.yaml into a job, submits it
// over SSH, follows its output and its state, and prints what came back.
//
// It is what `make demo` runs after the rig is up.
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"text/template"
	"time"

	"github.com/sluice-hpc/sluice/internal/config"
	"github.com/sluice-hpc/sluice/internal/jobscript"
	"github.com/sluice-hpc/sluice/internal/rigenv"
	"github.com/sluice-hpc/sluice/internal/site"
	"github.com/sluice-hpc/sluice/internal/slurm"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"
)

func main() {
	dir := flag.String("dir", "hack/demo", "directory holding pod.yaml and sluice.yaml.tmpl")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, *dir); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, dir string) error {
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	rig, err := rigenv.Read(rigenv.File())
	if err != nil {
		return err
	}
	cfg, err := loadConfig(filepath.Join(dir, "sluice.yaml.tmpl"), rig)
	if err != nil {
		return err
	}
	pod, cms, err := loadPod(filepath.Join(dir, "pod.yaml"), rig["RIG_IMAGE"])
	if err != nil {
		return err
	}

	runner, err := site.Open(cfg, log)
	if err != nil {
		return err
	}
	client := &slurm.Client{
		Site:     runner,
		DataRoot: cfg.Site.DataRoot,
		Runtime:  jobscript.Runtime(cfg.Site.ContainerRuntime),
		Logger:   log,
	}
	job, err := jobscript.FromPod(ctx, pod, sources(cms), jobscript.PodOptions{Runtime: client.Runtime})
	if err != nil {
		return err
	}

	step("pod %s/%s (uid %s) → Slurm job on %s@%s", pod.Namespace, pod.Name, pod.UID,
		cfg.Network.SSH.User, cfg.Network.SSH.LoginHost)
	id, err := client.Submit(ctx, job)
	if err != nil {
		return err
	}
	ref := client.Ref(pod.Namespace, string(pod.UID), id)
	step("submitted as job %s; job directory %s", id, ref.Dir)

	st, err := watch(ctx, client, ref, cfg.Site.PollInterval)
	if err != nil {
		return err
	}
	phase, reason := slurm.PodPhase(st.State)
	step("job %s ended: Slurm state %s on node %s → pod phase %s %s", id, st.State, st.BatchHost, phase, reason)
	for _, c := range append(job.Init, job.Containers...) {
		cs := st.Containers[c.Name]
		step("container %-8s exit code %d; its log:", c.Name, cs.ExitCode)
		if err := printLogs(ctx, client, ref, c.Name); err != nil {
			return err
		}
	}
	if phase != slurm.PhaseSucceeded {
		return fmt.Errorf("the pod ended %s (%s)", phase, reason)
	}
	return nil
}

// watch polls the job's status, printing each change, until Slurm says it is over.
func watch(ctx context.Context, client *slurm.Client, ref slurm.JobRef, every time.Duration) (slurm.Status, error) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	var last slurm.State
	for {
		all, err := client.Status(ctx, []slurm.JobRef{ref})
		if err != nil {
			return slurm.Status{}, err
		}
		st := all[ref.UID]
		if st.State != last {
			phase, _ := slurm.PodPhase(st.State)
			step("  %s (pod %s)%s", st.State, phase, onNode(st.BatchHost))
			last = st.State
		}
		if st.State.Final() {
			return st, nil
		}
		select {
		case <-ctx.Done():
			return slurm.Status{}, ctx.Err()
		case <-tick.C:
		}
	}
}

func onNode(host string) string {
	if host == "" {
		return ""
	}
	return " on node " + host
}

func printLogs(ctx context.Context, client *slurm.Client, ref slurm.JobRef, container string) error {
	rc, err := client.Logs(ctx, ref, container, slurm.LogOptions{Tail: -1, Timestamps: true})
	if err != nil {
		return err
	}
	defer rc.Close()
	var buf bytes.Buffer
	if _, err := io.Copy(&buf, rc); err != nil {
		return fmt.Errorf("read logs of %s: %w", container, err)
	}
	for _, line := range strings.SplitAfter(buf.String(), "\n") {
		if line != "" {
			fmt.Print("    | ", line)
		}
	}
	return nil
}

func step(format string, args ...any) {
	fmt.Printf("==> "+format+"\n", args...)
}

func loadConfig(file string, rig map[string]string) (*config.Config, error) {
	tmpl, err := template.New(filepath.Base(file)).Option("missingkey=error").ParseFiles(file)
	if err != nil {
		return nil, fmt.Errorf("load demo config: %w", err)
	}
	var out bytes.Buffer
	if err := tmpl.Execute(&out, rig); err != nil {
		return nil, fmt.Errorf("load demo config: %w", err)
	}
	cfg, err := config.Parse(out.Bytes())
	if err != nil {
		return nil, fmt.Errorf("load demo config: %w", err)
	}
	return cfg, nil
}

// loadPod reads the demo's ConfigMaps and pod, gives the pod a fresh UID
// (as the API server would) and the rig's image.
func loadPod(file, image string) (*corev1.Pod, map[string]*corev1.ConfigMap, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, nil, fmt.Errorf("load demo pod: %w", err)
	}
	var pod *corev1.Pod
	cms := make(map[string]*corev1.ConfigMap)
	for _, doc := range bytes.Split(data, []byte("\n---\n")) {
		var meta struct{ Kind string }
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			return nil, nil, fmt.Errorf("load demo pod: %w", err)
		}
		switch meta.Kind {
		case "ConfigMap":
			var cm corev1.ConfigMap
			if err := yaml.UnmarshalStrict(doc, &cm); err != nil {
				return nil, nil, fmt.Errorf("load demo pod: %w", err)
			}
			cms[cm.Name] = &cm
		case "Pod":
			pod = new(corev1.Pod)
			if err := yaml.UnmarshalStrict(doc, pod); err != nil {
				return nil, nil, fmt.Errorf("load demo pod: %w", err)
			}
		default:
			return nil, nil, fmt.Errorf("load demo pod: unexpected kind %q", meta.Kind)
		}
	}
	if pod == nil {
		return nil, nil, errors.New("load demo pod: no Pod in " + file)
	}
	pod.UID = types.UID(uuid())
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			cs[i].Image = image
		}
	}
	return pod, cms, nil
}

func uuid() string {
	b := make([]byte, 16)
	rand.Read(b)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// sources gives FromPod the demo's ConfigMaps; the demo has no Secrets and
// no API server to issue tokens.
type sources map[string]*corev1.ConfigMap

func (s sources) ConfigMap(_ context.Context, _, name string) (*corev1.ConfigMap, error) {
	if cm, ok := s[name]; ok {
		return cm, nil
	}
	return nil, apierrors.NewNotFound(corev1.Resource("configmaps"), name)
}

func (s sources) Secret(_ context.Context, _, name string) (*corev1.Secret, error) {
	return nil, apierrors.NewNotFound(corev1.Resource("secrets"), name)
}

func (s sources) ServiceAccountToken(context.Context, string, string, string, *int64) (string, error) {
	return "", errors.New("the demo has no API server to issue service account tokens")
}
