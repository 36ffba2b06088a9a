package hostnode

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// fakeObjects is an objectSource in memory.
type fakeObjects struct {
	configMaps map[string]*corev1.ConfigMap // namespace/name
	secrets    map[string]*corev1.Secret
}

func (f fakeObjects) ConfigMap(_ context.Context, ns, name string) (*corev1.ConfigMap, error) {
	if cm, ok := f.configMaps[ns+"/"+name]; ok {
		return cm, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, name)
}

func (f fakeObjects) Secret(_ context.Context, ns, name string) (*corev1.Secret, error) {
	if s, ok := f.secrets[ns+"/"+name]; ok {
		return s, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, name)
}

var testObjects = fakeObjects{
	configMaps: map[string]*corev1.ConfigMap{
		"ns/settings": {Data: map[string]string{"MODE": "fast", "dashed-name": "x", "LEVEL": "3"}, BinaryData: map[string][]byte{"blob": []byte("b")}},
	},
	secrets: map[string]*corev1.Secret{
		"ns/creds": {Data: map[string][]byte{"password": []byte("s3cret"), "TOKEN": []byte("t")}},
	},
}

func testPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "web-1", Namespace: "ns", UID: "uid-1",
			Labels: map[string]string{"app": "web"}, Annotations: map[string]string{"a.b/c": "d"},
		},
		Spec: corev1.PodSpec{NodeName: "rig-host", ServiceAccountName: "sa"},
	}
}

var testAddrs = podAddrs{PodIP: netip.MustParseAddr("127.80.1.2"), HostIP: netip.MustParseAddr("127.0.0.1")}

func fieldEnv(name, path string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
}

func TestContainerEnv(t *testing.T) {
	yes := true
	c := &corev1.Container{
		Name: "app",
		EnvFrom: []corev1.EnvFromSource{
			{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}},
			{Prefix: "S_", SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}}},
			{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "gone"}, Optional: &yes}},
		},
		Env: []corev1.EnvVar{
			fieldEnv("POD_NAME", "metadata.name"),
			fieldEnv("POD_NAMESPACE", "metadata.namespace"),
			fieldEnv("POD_UID", "metadata.uid"),
			fieldEnv("POD_IP", "status.podIP"),
			fieldEnv("HOST_IP", "status.hostIP"),
			fieldEnv("NODE", "spec.nodeName"),
			fieldEnv("APP", "metadata.labels['app']"),
			fieldEnv("ANN", "metadata.annotations['a.b/c']"),
			{Name: "LISTEN", Value: "$(POD_IP):8080"},
			{Name: "LATER", Value: "$(DEFINED_LATER)"},
			{Name: "DEFINED_LATER", Value: "x"},
			{Name: "MODE", Value: "slow"}, // replaces envFrom's, in place
			{Name: "PW", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}, Key: "password"}}},
			{Name: "BLOB", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}, Key: "blob"}}},
			{Name: "OPT", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}, Key: "nope", Optional: &yes}}},
		},
	}
	env, err := containerEnv(context.Background(), testObjects, testPod(), c, testAddrs)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"PATH=" + defaultPath,
		"HOSTNAME=web-1",
		"KUBERNETES_SERVICE_HOST=kubernetes.default.svc.cluster.local",
		"KUBERNETES_SERVICE_PORT=443",
		"KUBERNETES_SERVICE_PORT_HTTPS=443",
		"LEVEL=3", "MODE=slow", "dashed-name=x",
		"S_TOKEN=t", "S_password=s3cret",
		"POD_NAME=web-1", "POD_NAMESPACE=ns", "POD_UID=uid-1", "POD_IP=127.80.1.2", "HOST_IP=127.0.0.1",
		"NODE=rig-host", "APP=web", "ANN=d",
		"LISTEN=127.80.1.2:8080",
		"LATER=$(DEFINED_LATER)",
		"DEFINED_LATER=x",
		"PW=s3cret", "BLOB=b",
	}
	if got := env.environ(); !slices.Equal(got, want) {
		t.Errorf("environ:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestContainerEnvErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		ev   corev1.EnvVar
		want string
	}{
		{"missing configMap", corev1.EnvVar{Name: "X", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "gone"}, Key: "k"}}}, `env X: configMap gone: configmaps "gone" not found`},
		{"missing key", corev1.EnvVar{Name: "X", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}, Key: "k"}}}, "env X: secret creds has no key k"},
		{"unknown field", fieldEnv("X", "status.phase"), "env X: fieldRef status.phase is not supported"},
		{"resourceFieldRef", corev1.EnvVar{Name: "X", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.cpu"}}},
			"env X: only value, fieldRef, configMapKeyRef and secretKeyRef are supported"},
	} {
		c := &corev1.Container{Name: "app", Env: []corev1.EnvVar{tc.ev}}
		_, err := containerEnv(context.Background(), testObjects, testPod(), c, testAddrs)
		if err == nil || err.Error() != "container app: "+tc.want {
			t.Errorf("%s: error %v; want %q", tc.name, err, "container app: "+tc.want)
		}
	}
}

func TestContainerArgv(t *testing.T) {
	env := &envList{}
	env.set("POD_IP", "127.80.1.2")
	for _, tc := range []struct {
		name string
		c    corev1.Container
		want []string
	}{
		{"entrypoint and args", corev1.Container{Args: []string{"forward", "--listen=$(POD_IP)", "--metrics=$(POD_IP):9464"}},
			[]string{"/opt/bin/tunnel", "forward", "--listen=127.80.1.2", "--metrics=127.80.1.2:9464"}},
		{"no args", corev1.Container{}, []string{"/opt/bin/tunnel"}},
		{"command replaces the entrypoint", corev1.Container{Command: []string{"sh", "-c", "echo $(POD_IP) $$HOME"}, Args: []string{"$(NOPE)"}},
			[]string{"sh", "-c", "echo 127.80.1.2 $HOME", "$(NOPE)"}},
	} {
		if got := containerArgv(&tc.c, "/opt/bin/tunnel", env); !slices.Equal(got, tc.want) {
			t.Errorf("%s: argv %q; want %q", tc.name, got, tc.want)
		}
	}
}
