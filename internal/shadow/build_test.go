package shadow

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/sluice-hpc/sluice/internal/annotations"
	"github.com/sluice-hpc/sluice/internal/jobscript"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
)

func TestBuildBoth(t *testing.T) {
	pod := testPod("science", "notebook",
		withPorts("http=8080", "9090", "5353/UDP"),
		withAnnotation(annotations.ReverseForwards, "redis:6379, 8443:kubernetes.default.svc.cluster.local:443 minio.storage:9000 localhost:7000 [fd00::1]:5432"))
	objs, err := testSpec().Build(pod)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	name := Name(pod)
	if objs.Namespace != "science-shadow" || objs.Name != name || !objs.Forward || !objs.Reverse {
		t.Fatalf("got %s/%s forward %v reverse %v; want science-shadow/%s, both", objs.Namespace, objs.Name, objs.Forward, objs.Reverse, name)
	}

	wantLabels := map[string]string{
		"app.kubernetes.io/managed-by": "sluice",
		"sluice.io/shadow":             name,
		"sluice.io/pod-uid":            testUID,
		"sluice.io/node":               "hpc-a",
	}
	d, svc, cm := objs.Deployment, objs.Service, objs.ConfigMap
	for what, labels := range map[string]map[string]string{
		"deployment": d.Labels, "service": svc.Labels, "configmap": cm.Labels, "pod template": d.Spec.Template.Labels,
	} {
		if !reflect.DeepEqual(labels, wantLabels) {
			t.Errorf("%s labels = %v; want %v", what, labels, wantLabels)
		}
	}
	for what, a := range map[string]map[string]string{
		"deployment": d.Annotations, "service": svc.Annotations, "configmap": cm.Annotations, "pod template": d.Spec.Template.Annotations,
	} {
		if a[AnnotationPod] != "science/notebook" {
			t.Errorf("%s annotation %s = %q; want science/notebook", what, AnnotationPod, a[AnnotationPod])
		}
	}
	for what, n := range map[string]string{"deployment": d.Name, "service": svc.Name, "configmap": cm.Name} {
		if want := map[bool]string{true: name + "-node", false: name}[what == "configmap"]; n != want {
			t.Errorf("%s name = %q; want %q", what, n, want)
		}
	}
	for what, ns := range map[string]string{"deployment": d.Namespace, "service": svc.Namespace, "configmap": cm.Namespace} {
		if ns != "science-shadow" {
			t.Errorf("%s namespace = %q; want science-shadow", what, ns)
		}
	}
	if len(d.OwnerReferences) != 0 {
		t.Errorf("deployment in another namespace than its pod has owners %v", d.OwnerReferences)
	}

	// The node ConfigMap.
	if !reflect.DeepEqual(cm.Data, map[string]string{"node": "", "job": "", "socket-dir": ""}) {
		t.Errorf("configmap data = %v; want node, job and socket-dir empty", cm.Data)
	}

	// The Deployment.
	if *d.Spec.Replicas != 1 || !reflect.DeepEqual(d.Spec.Selector.MatchLabels, map[string]string{"sluice.io/shadow": name}) {
		t.Errorf("deployment replicas %d selector %v; want 1, sluice.io/shadow=%s", *d.Spec.Replicas, d.Spec.Selector.MatchLabels, name)
	}
	ps := d.Spec.Template.Spec
	if ps.AutomountServiceAccountToken == nil || *ps.AutomountServiceAccountToken {
		t.Errorf("automountServiceAccountToken = %v; want false", ps.AutomountServiceAccountToken)
	}
	if got := containerNames(ps.Containers); !reflect.DeepEqual(got, []string{"ssh-forward", "ssh-reverse"}) {
		t.Fatalf("containers %v; want ssh-forward, ssh-reverse", got)
	}
	common := []string{
		"--login=10.251.1.2:2222",
		"--user=alice",
		"--key=/etc/sluice/ssh/ssh-privatekey",
		"--login-known-hosts=/etc/sluice/login-hosts/known_hosts",
		"--node-known-hosts=/etc/sluice/node-hosts/known_hosts",
		"--node-file=/etc/sluice/node/node",
	}
	wantForward := append(append([]string{"forward"}, common...),
		"--target=node", "--ports=8080,9090", "--listen=$(POD_IP)",
		// the job has a relay (reverse forwards): its forward entry
		"--entry-dir-file=/etc/sluice/node/socket-dir",
		"--metrics=$(POD_IP):9464")
	wantReverse := append(append([]string{"reverse"}, common...),
		// read from the node ConfigMap: the pod UID, which squeue shows
		// every user of the site, does not name it
		"--socket-dir-file=/etc/sluice/node/socket-dir",
		"--forward=6379=redis.science:6379",
		"--forward=8443=kubernetes.default.svc.cluster.local:443",
		"--forward=9000=minio.storage:9000",
		"--forward=7000=localhost:7000",
		"--forward=5432=[fd00::1]:5432",
		"--metrics=$(POD_IP):9465")
	for _, c := range ps.Containers {
		want := map[string][]string{"ssh-forward": wantForward, "ssh-reverse": wantReverse}[c.Name]
		if !reflect.DeepEqual(c.Args, want) {
			t.Errorf("%s args:\n got %q\nwant %q", c.Name, c.Args, want)
		}
		if len(c.Command) != 0 {
			t.Errorf("%s command = %q; want none", c.Name, c.Command)
		}
		if c.Image != "ghcr.io/sluice-hpc/sluice-tunnel:v1" {
			t.Errorf("%s image = %q", c.Name, c.Image)
		}
		if len(c.Env) != 1 || c.Env[0].Name != "POD_IP" || c.Env[0].ValueFrom == nil ||
			c.Env[0].ValueFrom.FieldRef == nil || c.Env[0].ValueFrom.FieldRef.FieldPath != "status.podIP" {
			t.Errorf("%s env = %+v; want POD_IP from status.podIP", c.Name, c.Env)
		}
		wantMounts := map[string]string{
			"ssh-key": "/etc/sluice/ssh", "login-hosts": "/etc/sluice/login-hosts",
			"node-hosts": "/etc/sluice/node-hosts", "node": "/etc/sluice/node",
		}
		for _, m := range c.VolumeMounts {
			if wantMounts[m.Name] != m.MountPath || !m.ReadOnly {
				t.Errorf("%s mounts %s at %s (read-only %v); want at %q, read-only", c.Name, m.Name, m.MountPath, m.ReadOnly, wantMounts[m.Name])
			}
			delete(wantMounts, m.Name)
		}
		if len(wantMounts) > 0 {
			t.Errorf("%s does not mount %v", c.Name, wantMounts)
		}
	}

	// The volumes.
	vols := map[string]corev1.Volume{}
	for _, v := range ps.Volumes {
		vols[v.Name] = v
	}
	if len(vols) != 4 {
		t.Errorf("volumes %v; want ssh-key, login-hosts, node-hosts, node", volumeNamesOf(ps.Volumes))
	}
	if s := vols["ssh-key"].Secret; s == nil || s.SecretName != "hpc-ssh-key" || s.DefaultMode == nil || *s.DefaultMode != 0o440 ||
		!reflect.DeepEqual(s.Items, []corev1.KeyToPath{{Key: "ssh-privatekey", Path: "ssh-privatekey"}}) {
		t.Errorf("ssh-key volume = %+v; want Secret hpc-ssh-key, key ssh-privatekey, mode 0440", vols["ssh-key"].VolumeSource)
	}
	for vol, cmName := range map[string]string{"login-hosts": "hpc-known-hosts", "node-hosts": "hpc-node-keys"} {
		if c := vols[vol].ConfigMap; c == nil || c.Name != cmName ||
			!reflect.DeepEqual(c.Items, []corev1.KeyToPath{{Key: "known_hosts", Path: "known_hosts"}}) {
			t.Errorf("%s volume = %+v; want ConfigMap %s, key known_hosts", vol, vols[vol].VolumeSource, cmName)
		}
	}
	if c := vols["node"].ConfigMap; c == nil || c.Name != name+"-node" || len(c.Items) != 0 {
		t.Errorf("node volume = %+v; want the whole ConfigMap %s-node", vols["node"].VolumeSource, name)
	}

	// The Service: TCP ports only, named.
	if svc.Spec.Type != corev1.ServiceTypeClusterIP || !reflect.DeepEqual(svc.Spec.Selector, map[string]string{"sluice.io/shadow": name}) {
		t.Errorf("service type %s selector %v; want ClusterIP, sluice.io/shadow=%s", svc.Spec.Type, svc.Spec.Selector, name)
	}
	wantPorts := []corev1.ServicePort{
		{Name: "http", Protocol: corev1.ProtocolTCP, Port: 8080, TargetPort: intstr.FromInt32(8080)},
		{Name: "tcp-9090", Protocol: corev1.ProtocolTCP, Port: 9090, TargetPort: intstr.FromInt32(9090)},
	}
	if !reflect.DeepEqual(svc.Spec.Ports, wantPorts) {
		t.Errorf("service ports = %+v; want %+v", svc.Spec.Ports, wantPorts)
	}
}

func TestBuildTenantAndTarget(t *testing.T) {
	s := testSpec()
	s.TenantNamespace = "hpc-tenant"
	s.ForwardTarget = "login"
	s.LoginHost = "fd00::2"
	pod := testPod("science", "web", withPorts("80"), withAnnotation(annotations.ReverseForwards, "redis:6379"))
	objs, err := s.Build(pod)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	for what, ns := range map[string]string{"objects": objs.Namespace, "deployment": objs.Deployment.Namespace,
		"service": objs.Service.Namespace, "configmap": objs.ConfigMap.Namespace} {
		if ns != "hpc-tenant" {
			t.Errorf("%s namespace = %q; want hpc-tenant", what, ns)
		}
	}
	fwd := container(objs, "ssh-forward").Args
	if !slicesContain(fwd, "--target=login") || !slicesContain(fwd, "--login=[fd00::2]:2222") {
		t.Errorf("forward args %q; want --target=login and --login=[fd00::2]:2222", fwd)
	}
	// The shadow dials a bare Service name in the pod's namespace, not the
	// tenant's.
	if rev := container(objs, "ssh-reverse").Args; !slicesContain(rev, "--forward=6379=redis.science:6379") {
		t.Errorf("reverse args %q; want --forward=6379=redis.science:6379", rev)
	}
}

func slicesContain(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func TestBuildOneTunnel(t *testing.T) {
	t.Run("reverse only", func(t *testing.T) {
		objs, err := testSpec().Build(testPod("ns", "p", withPorts("53/UDP"), withAnnotation(annotations.ReverseForwards, "redis:6379")))
		if err != nil {
			t.Fatalf("Build: %v", err)
		}
		if objs.Service != nil {
			t.Errorf("got a Service for a pod without TCP ports")
		}
		ps := objs.Deployment.Spec.Template.Spec
		if got := containerNames(ps.Containers); !reflect.DeepEqual(got, []string{"ssh-reverse"}) {
			t.Errorf("containers %v; want ssh-reverse alone", got)
		}
		if got := ps.Containers[0].Args[len(ps.Containers[0].Args)-1]; got != "--metrics=$(POD_IP):9465" {
			t.Errorf("reverse metrics %q; want --metrics=$(POD_IP):9465", got)
		}
	})
	t.Run("forward only", func(t *testing.T) {
		objs, err := testSpec().Build(testPod("ns", "p", withPorts("80")))
		if err != nil {
			t.Fatalf("Build: %v", err)
		}
		if got := containerNames(objs.Deployment.Spec.Template.Spec.Containers); !reflect.DeepEqual(got, []string{"ssh-forward"}) {
			t.Errorf("containers %v; want ssh-forward alone", got)
		}
	})
}

func TestMetricsPorts(t *testing.T) {
	tests := []struct {
		ports    []string
		fwd, rev string
	}{
		{[]string{"80"}, "9464", "9465"},
		{[]string{"9464"}, "9465", "9466"},
		{[]string{"9464", "9465", "9466"}, "9467", "9468"},
		{[]string{"9465"}, "9464", "9466"},
		{[]string{"80", "9464/UDP"}, "9464", "9465"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.ports, ","), func(t *testing.T) {
			objs, err := testSpec().Build(testPod("ns", "p", withPorts(tt.ports...), withAnnotation(annotations.ReverseForwards, "redis:6379")))
			if err != nil {
				t.Fatalf("Build: %v", err)
			}
			for name, want := range map[string]string{"ssh-forward": tt.fwd, "ssh-reverse": tt.rev} {
				c := container(objs, name)
				if c == nil {
					t.Fatalf("no %s container", name)
				}
				if got := c.Args[len(c.Args)-1]; got != "--metrics=$(POD_IP):"+want {
					t.Errorf("%s: %q; want --metrics=$(POD_IP):%s", name, got, want)
				}
			}
		})
	}
}

func TestServicePortNames(t *testing.T) {
	second := corev1.Container{Name: "second", Image: "busybox", Ports: []corev1.ContainerPort{
		{Name: "http", ContainerPort: 8081},   // the name repeats: tcp-8081
		{Name: "8-web", ContainerPort: 8082},  // valid container port name, not a Service port name
		{ContainerPort: 8080},                 // the port repeats: one Service port
		{Name: "tcp-80", ContainerPort: 8083}, // takes the name port 80 would get
	}}
	objs, err := testSpec().Build(testPod("ns", "p", withPorts("http=8080", "80"), withContainer(second)))
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	var got []string
	for _, p := range objs.Service.Spec.Ports {
		got = append(got, p.Name+"="+p.TargetPort.String())
		if msgs := validation.IsDNS1035Label(p.Name); len(msgs) > 0 || len(p.Name) > 15 {
			t.Errorf("port name %q is not a Service port name: %v", p.Name, msgs)
		}
	}
	want := []string{"tcp-80-2=80", "http=8080", "tcp-8081=8081", "tcp-8082=8082", "tcp-80=8083"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("service ports %v; want %v", got, want)
	}
	if args := container(objs, "ssh-forward").Args; !slicesContain(args, "--ports=80,8080,8081,8082,8083") {
		t.Errorf("forward args %q; want --ports=80,8080,8081,8082,8083", args)
	}
}

func TestBuildRefused(t *testing.T) {
	long := strings.Repeat("n", 57)
	noSocketDir := testSpec()
	noSocketDir.SocketDirRoot = ""
	tests := []struct {
		name  string
		spec  Spec
		pod   *corev1.Pod
		field string // the PodError's field; "" for another error
	}{
		{"namespace too long for -shadow", testSpec(), testPod(long, "p", withPorts("80")), "metadata.namespace"},
		{"no uid", testSpec(), testPod("ns", "p", withPorts("80"), withUID("")), "metadata.uid"},
		{"reverse without a socket dir", noSocketDir, testPod("ns", "p", withAnnotation(annotations.ReverseForwards, "redis:6379")),
			"metadata.annotations[" + annotations.ReverseForwards + "]"},
		{"malformed reverse", testSpec(), testPod("ns", "p", withAnnotation(annotations.ReverseForwards, "redis:0")), ""},
		{"unknown kept container", testSpec(), testPod("ns", "p", withPorts("80"), withAnnotation(annotations.DisableOffloadContainers, "main sidecar")),
			"metadata.annotations[" + annotations.DisableOffloadContainers + "]"},
		{"a container kept as an init container", testSpec(), testPod("ns", "p", withPorts("80"), withAnnotation(annotations.DisableOffloadInitContainers, "main")),
			"metadata.annotations[" + annotations.DisableOffloadInitContainers + "]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := tt.spec.Build(tt.pod)
			if err == nil {
				t.Fatalf("Build made %+v; want an error", objs)
			}
			var perr *jobscript.PodError
			if tt.field == "" {
				var ref *annotations.Refusal
				if !errors.As(err, &ref) {
					t.Errorf("got %v; want an *annotations.Refusal", err)
				}
				return
			}
			if !errors.As(err, &perr) || perr.Field != tt.field {
				t.Errorf("got %v; want a PodError on %s", err, tt.field)
			}
		})
	}
	t.Run("long namespace with a tenant", func(t *testing.T) {
		s := testSpec()
		s.TenantNamespace = "hpc-tenant"
		if _, err := s.Build(testPod(long, "p", withPorts("80"))); err != nil {
			t.Errorf("Build: %v", err)
		}
	})
}

func TestSpecValidate(t *testing.T) {
	tests := []struct {
		field string
		edit  func(*Spec)
	}{
		{"NodeName", func(s *Spec) { s.NodeName = "" }},
		{"LoginHost", func(s *Spec) { s.LoginHost = "-oProxyCommand=x" }},
		{"LoginPort", func(s *Spec) { s.LoginPort = 0 }},
		{"User", func(s *Spec) { s.User = "alice bob" }},
		{"KeySecret", func(s *Spec) { s.KeySecret = "" }},
		{"NodeHostKeys", func(s *Spec) { s.NodeHostKeys = "Bad_Name" }},
		{"ForwardTarget", func(s *Spec) { s.ForwardTarget = "compute" }},
		{"TunnelImage", func(s *Spec) { s.TunnelImage = "" }},
		{"SocketDirRoot", func(s *Spec) { s.SocketDirRoot = "tmp/x" }},
		{"TenantNamespace", func(s *Spec) { s.TenantNamespace = "Tenant" }},
		{"CredentialsNamespace", func(s *Spec) { s.ReplicateCredentials, s.CredentialsNamespace = true, "" }},
		{"ReplicateCredentials", func(s *Spec) { s.ReplicateCredentials, s.TenantNamespace = true, "hpc-tenant" }},
		{"KeyFile", func(s *Spec) { s.KeyFile = "/etc/sluice/ssh/ssh-privatekey" }},
	}
	if err := testSpec().Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	for _, tt := range tests {
		t.Run(tt.field, func(t *testing.T) {
			s := testSpec()
			tt.edit(&s)
			err := s.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.field+":") {
				t.Errorf("Validate = %v; want an error naming %s", err, tt.field)
			}
			if _, err := s.Build(testPod("ns", "p", withPorts("80"))); err == nil {
				t.Errorf("Build accepted the spec")
			}
		})
	}
	s := testSpec()
	s.ReplicateCredentials, s.TenantNamespace, s.CredentialsNamespace = true, "hpc-tenant", "hpc-tenant"
	if err := s.Validate(); err != nil {
		t.Errorf("Validate with the credentials in the tenant namespace: %v", err)
	}
}

func TestBuildSocks(t *testing.T) {
	s := testSpec()
	t.Run("with forwards", func(t *testing.T) {
		pod := testPod("science", "job", withAnnotation(annotations.ReverseForwards, "redis:6379"), withAnnotation(annotations.ReverseSocksPort, "1080"))
		objs, err := s.Build(pod)
		if err != nil {
			t.Fatalf("Build: %v", err)
		}
		rev := container(objs, "ssh-reverse").Args
		if !slicesContain(rev, "--socks-port=1080") || !slicesContain(rev, "--forward=6379=redis.science:6379") {
			t.Errorf("reverse args %q; want the forward and --socks-port=1080", rev)
		}
	})
	t.Run("alone", func(t *testing.T) {
		pod := testPod("science", "job", withAnnotation(annotations.ReverseSocksPort, "1080"))
		objs, err := s.Build(pod)
		if err != nil || objs == nil {
			t.Fatalf("Build: %v, %v; want a shadow for the proxy", objs, err)
		}
		rev := container(objs, "ssh-reverse").Args
		if !slicesContain(rev, "--socks-port=1080") {
			t.Errorf("reverse args %q; want --socks-port=1080", rev)
		}
		for _, a := range rev {
			if strings.HasPrefix(a, "--forward=") {
				t.Errorf("reverse args %q hold a forward; want none", rev)
			}
		}
		if objs.Service != nil || len(objs.Deployment.Spec.Template.Spec.Containers) != 1 {
			t.Errorf("a SOCKS-only pod got a Service or more than the reverse container")
		}
	})
}

func TestBuildUserspaceSshd(t *testing.T) {
	s := testSpec()
	s.ReverseSshd = "userspace"
	objs, err := s.Build(testPod("science", "job", withAnnotation(annotations.ReverseForwards, "redis:6379")))
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	if rev := container(objs, "ssh-reverse").Args; !slicesContain(rev, "--sshd=userspace") {
		t.Errorf("reverse args %q; want --sshd=userspace", rev)
	}
	s.ReverseNodeExec = "srun"
	objs, err = s.Build(testPod("science", "job", withAnnotation(annotations.ReverseForwards, "redis:6379")))
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	if rev := container(objs, "ssh-reverse").Args; !slicesContain(rev, "--node-exec=srun") || !slicesContain(rev, "--job-file=/etc/sluice/node/job") {
		t.Errorf("reverse args %q; want --node-exec=srun --job-file=/etc/sluice/node/job", rev)
	}
	s.ReverseSshd = "root"
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "ReverseSshd") {
		t.Errorf("Validate with ReverseSshd root: %v; want an error naming it", err)
	}
}
