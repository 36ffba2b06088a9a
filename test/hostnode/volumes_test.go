package hostnode

import (
	"context"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

func int32p(v int32) *int32 { return &v }

// fakeTokens issues "token-for-AUDIENCE".
type fakeTokens struct{}

func (fakeTokens) Token(_ context.Context, _ *corev1.Pod, p *corev1.ServiceAccountTokenProjection) ([]byte, error) {
	return []byte("token-for-" + p.Audience), nil
}
func (fakeTokens) Forget(types.UID) {}

func volumeObjects() fakeObjects {
	return fakeObjects{
		configMaps: map[string]*corev1.ConfigMap{
			"ns/hosts": {Data: map[string]string{"known_hosts": "login ssh-ed25519 AAAA", "other": "o"}, BinaryData: map[string][]byte{"bin": {0, 1}}},
			"ns/node":  {Data: map[string]string{"node": "node1"}},
		},
		secrets: map[string]*corev1.Secret{
			"ns/key": {Data: map[string][]byte{"ssh-privatekey": []byte("PRIVATE"), "ssh-publickey": []byte("PUBLIC")}},
		},
	}
}

func describe(files volumeFiles) string {
	var b strings.Builder
	for _, p := range slices.Sorted(maps.Keys(files)) {
		f := files[p]
		b.WriteString(p + " " + f.Mode.String() + " " + string(f.Data) + "\n")
	}
	return b.String()
}

func TestBuildVolumeFiles(t *testing.T) {
	yes := true
	pod := testPod()
	for _, tc := range []struct {
		name string
		vs   corev1.VolumeSource
		want string
	}{
		{"configMap, all keys", corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "hosts"}}},
			"bin -rw-r--r-- \x00\x01\nknown_hosts -rw-r--r-- login ssh-ed25519 AAAA\nother -rw-r--r-- o\n"},
		{"configMap items, modes", corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "hosts"}, DefaultMode: int32p(0o440),
			Items: []corev1.KeyToPath{{Key: "known_hosts", Path: "ssh/known_hosts"}, {Key: "other", Path: "o", Mode: int32p(0o600)}}}},
			"o -rw------- o\nssh/known_hosts -r--r----- login ssh-ed25519 AAAA\n"},
		{"secret with item and mode 0400", corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: "key", DefaultMode: int32p(0o400), Items: []corev1.KeyToPath{{Key: "ssh-privatekey", Path: "ssh-privatekey"}}}},
			"ssh-privatekey -r-------- PRIVATE\n"},
		{"optional missing configMap", corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "gone"}, Optional: &yes}}, ""},
		{"optional missing key", corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "node"}, Optional: &yes,
			Items: []corev1.KeyToPath{{Key: "nope", Path: "x"}}}}, ""},
		{"downwardAPI", corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
			{Path: "name", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}},
			{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
		}}}, "labels -rw-r--r-- app=\"web\"\nname -rw-r--r-- web-1\n"},
		{"projected", corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{DefaultMode: int32p(0o444), Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", Audience: "api"}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "node"}}},
			{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "key"},
				Items: []corev1.KeyToPath{{Key: "ssh-publickey", Path: "pub"}}}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{
				{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}}},
		}}}, "namespace -r--r--r-- ns\nnode -r--r--r-- node1\npub -r--r--r-- PUBLIC\ntoken -r--r--r-- token-for-api\n"},
	} {
		v := &corev1.Volume{Name: "v", VolumeSource: tc.vs}
		files, err := buildVolumeFiles(context.Background(), volumeObjects(), fakeTokens{}, pod, v, testAddrs)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if got := describe(files); got != tc.want {
			t.Errorf("%s: files\n%s\nwant\n%s", tc.name, got, tc.want)
		}
	}
}

func TestBuildVolumeFilesErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		vs   corev1.VolumeSource
		want string
	}{
		{"missing configMap", corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "gone"}}}, `volume v: configMap gone: configmaps "gone" not found`},
		{"missing key", corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "key",
			Items: []corev1.KeyToPath{{Key: "nope", Path: "x"}}}}, "volume v: secret key has no key nope"},
		{"escaping path", corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "node"}, Items: []corev1.KeyToPath{{Key: "node", Path: "a/../../x"}}}},
			`volume v: bad file path "a/../../x"`},
		{"resourceFieldRef", corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
			{Path: "cpu", ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.cpu"}}}}},
			"volume v: downwardAPI cpu: only fieldRef is supported"},
	} {
		v := &corev1.Volume{Name: "v", VolumeSource: tc.vs}
		_, err := buildVolumeFiles(context.Background(), volumeObjects(), fakeTokens{}, testPod(), v, testAddrs)
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s: error %v; want %q", tc.name, err, tc.want)
		}
	}
}

func TestCheckVolumes(t *testing.T) {
	ok := []corev1.Volume{
		{Name: "e", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "k"}}},
	}
	if err := checkVolumes(&corev1.Pod{Spec: corev1.PodSpec{Volumes: ok}}); err != nil {
		t.Errorf("supported volumes refused: %v", err)
	}
	for _, v := range []corev1.Volume{
		{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}}},
		{Name: "bundle", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
			{ClusterTrustBundle: &corev1.ClusterTrustBundleProjection{Path: "b"}}}}}},
	} {
		err := checkVolumes(&corev1.Pod{Spec: corev1.PodSpec{Volumes: append(slices.Clone(ok), v)}})
		if err == nil || !strings.Contains(err.Error(), "volume "+v.Name+": ") || !strings.Contains(err.Error(), "supported by sluice-hostnode") {
			t.Errorf("volume %s: error %v; want it refused by name", v.Name, err)
		}
	}
}

func TestVolumeReferences(t *testing.T) {
	v := &corev1.Volume{VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
		{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}},
		{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}}},
	}}}}
	for _, tc := range []struct {
		kind, name string
		want       bool
	}{{"ConfigMap", "cm", true}, {"Secret", "s", true}, {"Secret", "cm", false}, {"ConfigMap", "other", false}} {
		if got := volumeReferences(v, tc.kind, tc.name); got != tc.want {
			t.Errorf("volumeReferences(%s %s) = %v", tc.kind, tc.name, got)
		}
	}
}

func TestWriteVolumeDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "vol")
	first := volumeFiles{
		"node":            {Data: []byte("node1"), Mode: 0o644},
		"ssh/known_hosts": {Data: []byte("k1"), Mode: 0o400},
		"gone":            {Data: []byte("x"), Mode: 0o644},
	}
	changed, err := writeVolumeDir(dir, first)
	if err != nil || !changed {
		t.Fatalf("first write: %v, changed %v", err, changed)
	}
	checkVolumeDir(t, dir, first)
	old, _ := os.Readlink(filepath.Join(dir, dataLink))

	if changed, err := writeVolumeDir(dir, first); err != nil || changed {
		t.Errorf("same files again: %v, changed %v; want no change", err, changed)
	}

	// a process holding the directory open (as a bind mount does) sees the
	// new files through the same path
	held, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	second := volumeFiles{
		"node":            {Data: []byte("node2"), Mode: 0o644},
		"ssh/known_hosts": {Data: []byte("k1"), Mode: 0o600},
	}
	if changed, err := writeVolumeDir(dir, second); err != nil || !changed {
		t.Fatalf("second write: %v, changed %v", err, changed)
	}
	checkVolumeDir(t, dir, second)
	if _, err := os.Lstat(filepath.Join(dir, "gone")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("link of a removed key: %v; want it gone", err)
	}
	if _, err := os.Stat(filepath.Join(dir, old)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("old data directory %s: %v; want it removed", old, err)
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if len(names) != 4 { // ..data, ..data-NNN, node, ssh
		t.Errorf("volume directory holds %q; want ..data, its target, node and ssh", names)
	}

	if changed, err := writeVolumeDir(dir, volumeFiles{}); err != nil || !changed {
		t.Fatalf("empty write: %v, changed %v", err, changed)
	}
	checkVolumeDir(t, dir, volumeFiles{})
}

// checkVolumeDir reads each file through the volume's top-level links.
func checkVolumeDir(t *testing.T, dir string, files volumeFiles) {
	t.Helper()
	for p, f := range files {
		name := filepath.Join(dir, p)
		data, err := os.ReadFile(name)
		if err != nil {
			t.Errorf("read %s: %v", p, err)
			continue
		}
		if string(data) != string(f.Data) {
			t.Errorf("%s holds %q; want %q", p, data, f.Data)
		}
		if fi, err := os.Stat(name); err != nil || fi.Mode().Perm() != f.Mode {
			t.Errorf("%s mode %v (%v); want %v", p, fi.Mode().Perm(), err, f.Mode)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "..") {
			continue
		}
		if e.Type()&fs.ModeSymlink == 0 {
			t.Errorf("%s is not a link through ..data", e.Name())
		}
	}
}
