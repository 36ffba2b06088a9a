package jobscript

import (
	"strings"

	"github.com/sluice-hpc/sluice/internal/jobscript/scripttest"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var _ Sources = (*scripttest.Sources)(nil)

func ptr[T any](v T) *T { return &v }

func qty(s string) resource.Quantity { return resource.MustParse(s) }

// fullPod has init and two containers, env of every kind, volumes of every
// supported kind, resources, flags and a pre-exec snippet. images are the
// init container's and the two containers'.
func fullPod(images [3]string) *corev1.Pod {
	env := []corev1.EnvVar{
		{Name: "QUOTED", Value: `it's "quoted" $HOME \ back` + "`id`"},
		{Name: "MULTI", Value: "line one\nline two\n"},
		{Name: "DEPENDENT", Value: "$(QUOTED)|$$(QUOTED)|$(UNDEFINED)|$(CFG_mode)"},
		{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
		{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
		{Name: "APP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['app']"}}},
		{Name: "CPU_MILLI", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.cpu", Divisor: qty("1m")}}},
		{Name: "MEM_MIB", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "requests.memory", Divisor: qty("1Mi")}}},
		{Name: "DB_PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "db-secret"}, Key: "password"}}},
		{Name: "MAYBE", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "app-config"}, Key: "absent", Optional: ptr(true)}}},
	}
	envFrom := []corev1.EnvFromSource{
		{Prefix: "CFG_", ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "app-config"}}},
		{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "absent"}, Optional: ptr(true)}},
	}
	saMount := corev1.VolumeMount{Name: "kube-api-access-x7k2p", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "team-a", Name: "train-7f9c", UID: "6f1d2c3b-4a5e-4f60-8a7b-9c0d1e2f3a4b",
			Labels: map[string]string{"app": "train"},
			Annotations: map[string]string{
				AnnotationFlags:   "--partition=gpu\n--qos=high\n\n  --exclusive  \n",
				AnnotationPreExec: "module load apptainer\nexport APPTAINER_CACHEDIR=\"${TMPDIR:-/tmp}/cache\"",
			},
		},
		Spec: corev1.PodSpec{
			NodeName: "hpc-a", ServiceAccountName: "trainer",
			ActiveDeadlineSeconds: ptr(int64(5400)),
			InitContainers: []corev1.Container{{
				Name: "fetch", Image: images[0],
				Command: []string{"sh", "-c", "echo fetching $(CFG_URL) into $1"}, Args: []string{"/scratch"},
				EnvFrom:      envFrom[:1],
				VolumeMounts: []corev1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}},
				Resources:    corev1.ResourceRequirements{Limits: corev1.ResourceList{"cpu": qty("4"), "memory": qty("1Gi")}},
			}},
			Containers: []corev1.Container{{
				Name: "trainer", Image: images[1], WorkingDir: "/work",
				Command: []string{"python3", "-m", "train"}, Args: []string{"--epochs=$(EPOCHS)", "--name", "$(POD_NAME)", "$$(POD_NAME)"},
				Env:     append([]corev1.EnvVar{{Name: "EPOCHS", Value: "10"}}, env...),
				EnvFrom: envFrom,
				VolumeMounts: []corev1.VolumeMount{
					{Name: "config", MountPath: "/etc/app"},
					{Name: "creds", MountPath: "/run/secrets/db", ReadOnly: true},
					{Name: "scratch", MountPath: "/scratch"},
					{Name: "scratch", MountPath: "/cache", SubPath: "cache"},
					{Name: "podinfo", MountPath: "/etc/podinfo"},
					saMount,
				},
				Resources: corev1.ResourceRequirements{
					Limits:   corev1.ResourceList{"cpu": qty("1500m"), "memory": qty("1Gi"), "nvidia.com/gpu": qty("1")},
					Requests: corev1.ResourceList{"cpu": qty("1"), "memory": qty("768Mi")},
				},
			}, {
				Name: "sidecar-logger", Image: images[2],
				Command:      []string{"sh", "-c", "while :; do date; sleep 60; done"},
				Env:          []corev1.EnvVar{{Name: "EMPTY"}},
				VolumeMounts: []corev1.VolumeMount{{Name: "scratch", MountPath: "/scratch", ReadOnly: true}, saMount},
				Resources:    corev1.ResourceRequirements{Requests: corev1.ResourceList{"cpu": qty("500m"), "memory": qty("512Mi")}},
			}},
			Volumes: []corev1.Volume{
				{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: "app-config"},
					Items:                []corev1.KeyToPath{{Key: "mode", Path: "conf/mode.txt"}, {Key: "URL", Path: "url", Mode: ptr(int32(0o755))}},
				}}},
				{Name: "creds", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
					SecretName: "db-secret", DefaultMode: ptr(int32(0o777)),
				}}},
				{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "podinfo", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{
					Items: []corev1.DownwardAPIVolumeFile{
						{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
						{Path: "cpu", ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "sidecar-logger", Resource: "requests.cpu", Divisor: qty("1m")}},
					},
				}}},
				kubeAPIAccess("kube-api-access-x7k2p"),
			},
		},
	}
}

// kubeAPIAccess is the volume the ServiceAccount admission plugin adds.
func kubeAPIAccess(name string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		DefaultMode: ptr(int32(0o644)),
		Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{ExpirationSeconds: ptr(int64(3607)), Path: "token"}},
			{ConfigMap: &corev1.ConfigMapProjection{
				LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
				Items:                []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}},
			}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{
				{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}},
			}}},
		},
	}}}
}

// withoutVolumes strips a pod of its volumes and mounts, for RuntimeNone.
func withoutVolumes(p *corev1.Pod) *corev1.Pod {
	p.Spec.Volumes = nil
	for _, cs := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for i := range cs {
			cs[i].VolumeMounts = nil
		}
	}
	return p
}

// longPod has names as long as Kubernetes allows.
func longPod() *corev1.Pod {
	label := func(c byte) string { return string(c) + strings.Repeat("x", 61) + string(c) }
	name := strings.Repeat(label('a')+".", 3) + strings.Repeat("b", 61)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: label('n'), Name: name, UID: "ffffffff-ffff-4fff-bfff-ffffffffffff"},
		Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: label('i'), Image: "registry.example.org:5000/group/sub/image:v1.2.3", Command: []string{"true"}}},
			Containers:     []corev1.Container{{Name: label('c'), Image: "/shared/images/tool.sif", Command: []string{"true"}}},
		},
	}
}

func envVar(name, value string) corev1.EnvVar { return corev1.EnvVar{Name: name, Value: value} }

func fieldEnv(name, path string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
}
