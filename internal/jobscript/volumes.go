package jobscript

import (
	"fmt"
	"io/fs"
	"reflect"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// volume is a pod volume made ready for the job: a directory of the job
// directory.
type volume struct {
	dir      string // volumes/<name>, relative to the job directory
	emptyDir bool
}

// The widest modes volume files get. Modes asked for are narrowed to these,
// and the owner may always read.
const (
	publicFileMode fs.FileMode = 0o644 // configMap, downwardAPI
	secretFileMode fs.FileMode = 0o600 // secret, serviceAccountToken
)

const supportedVolumes = "configMap, secret, projected, downwardAPI and emptyDir"

// buildVolumes turns the pod's volumes into files and directories of the job.
func (b *podBuilder) buildVolumes() error {
	b.volumes = map[string]volume{}
	for i := range b.pod.Spec.Volumes {
		v := &b.pod.Spec.Volumes[i]
		field := fmt.Sprintf("spec.volumes[%d]", i)
		if err := CheckDNSLabel("volume name", v.Name); err != nil {
			return podErr(field+".name", "%v", err)
		}
		if _, dup := b.volumes[v.Name]; dup {
			return podErr(field+".name", "volume %q is declared twice", v.Name)
		}
		vol := volume{dir: "volumes/" + v.Name}
		if b.site.NoPodData && v.EmptyDir == nil {
			kind := setField(v.VolumeSource)
			return podErr(field+"."+kind, "the site does not export pod data (Site.ExportPodData is false): only emptyDir volumes are allowed")
		}
		var err error
		switch {
		case v.ConfigMap != nil:
			s := v.ConfigMap
			err = b.configMapFiles(field+".configMap", vol.dir, s.Name, s.Items, s.Optional, s.DefaultMode)
		case v.Secret != nil:
			s := v.Secret
			err = b.secretFiles(field+".secret", vol.dir, s.SecretName, s.Items, s.Optional, s.DefaultMode)
		case v.DownwardAPI != nil:
			err = b.downwardFiles(field+".downwardAPI", vol.dir, v.DownwardAPI.Items, v.DownwardAPI.DefaultMode)
		case v.Projected != nil:
			err = b.projectedFiles(field+".projected", vol.dir, v.Projected)
		case v.EmptyDir != nil:
			vol.emptyDir = true
		default:
			kind := setField(v.VolumeSource)
			return podErr(field+"."+kind, "volume type %s is not supported (only %s are)", kind, supportedVolumes)
		}
		if err != nil {
			return err
		}
		b.volumes[v.Name] = vol
		b.addDir(vol.dir)
	}
	return nil
}

func (b *podBuilder) configMapFiles(field, dir, name string, items []corev1.KeyToPath, optional *bool, mode *int32) error {
	cm, err := b.configMap(name, isTrue(optional), field)
	if err != nil || cm == nil {
		return err
	}
	what := fmt.Sprintf("configmap %s/%s", b.pod.Namespace, name)
	return b.keyFiles(field, dir, what, configMapData(cm), items, isTrue(optional), mode, publicFileMode)
}

func (b *podBuilder) secretFiles(field, dir, name string, items []corev1.KeyToPath, optional *bool, mode *int32) error {
	s, err := b.secret(name, isTrue(optional), field)
	if err != nil || s == nil {
		return err
	}
	what := fmt.Sprintf("secret %s/%s", b.pod.Namespace, name)
	return b.keyFiles(field, dir, what, s.Data, items, isTrue(optional), mode, secretFileMode)
}

// keyFiles writes the keys of a ConfigMap or Secret as files: every key under
// its own name without items, else the listed keys under their paths.
func (b *podBuilder) keyFiles(field, dir, what string, data map[string][]byte, items []corev1.KeyToPath, optional bool, defaultMode *int32, widest fs.FileMode) error {
	if len(items) == 0 {
		for _, k := range sortedKeys(data) {
			if strings.Contains(k, "/") {
				return podErr(field, "%s: key %q cannot be a file name", what, k)
			}
			if err := b.volumeFile(field, dir, k, data[k], nil, defaultMode, widest); err != nil {
				return err
			}
		}
		return nil
	}
	for i, it := range items {
		f := fmt.Sprintf("%s.items[%d]", field, i)
		d, ok := data[it.Key]
		if !ok {
			if optional {
				continue
			}
			return fmt.Errorf("%s.key: %s has no key %q", f, what, it.Key)
		}
		if err := b.volumeFile(f, dir, it.Path, d, it.Mode, defaultMode, widest); err != nil {
			return err
		}
	}
	return nil
}

func (b *podBuilder) downwardFiles(field, dir string, items []corev1.DownwardAPIVolumeFile, defaultMode *int32) error {
	for i := range items {
		it := &items[i]
		f := fmt.Sprintf("%s.items[%d]", field, i)
		var value string
		var err error
		switch {
		case it.FieldRef != nil:
			value, err = b.fieldValue(it.FieldRef.FieldPath, f+".fieldRef.fieldPath")
		case it.ResourceFieldRef != nil:
			if it.ResourceFieldRef.ContainerName == "" {
				return podErr(f+".resourceFieldRef.containerName", "a volume must name the container")
			}
			value, err = b.resourceValue(it.ResourceFieldRef, "", f+".resourceFieldRef")
		default:
			return podErr(f, "neither fieldRef nor resourceFieldRef is set")
		}
		if err != nil {
			return err
		}
		if err := b.volumeFile(f, dir, it.Path, []byte(value), it.Mode, defaultMode, publicFileMode); err != nil {
			return err
		}
	}
	return nil
}

func (b *podBuilder) projectedFiles(field, dir string, p *corev1.ProjectedVolumeSource) error {
	for i := range p.Sources {
		s := &p.Sources[i]
		f := fmt.Sprintf("%s.sources[%d]", field, i)
		var err error
		switch {
		case s.ConfigMap != nil:
			c := s.ConfigMap
			err = b.configMapFiles(f+".configMap", dir, c.Name, c.Items, c.Optional, p.DefaultMode)
		case s.Secret != nil:
			c := s.Secret
			err = b.secretFiles(f+".secret", dir, c.Name, c.Items, c.Optional, p.DefaultMode)
		case s.DownwardAPI != nil:
			err = b.downwardFiles(f+".downwardAPI", dir, s.DownwardAPI.Items, p.DefaultMode)
		case s.ServiceAccountToken != nil:
			err = b.tokenFile(f+".serviceAccountToken", dir, s.ServiceAccountToken, p.DefaultMode)
		default:
			kind := setField(*s)
			return podErr(f+"."+kind, "projection %s is not supported", kind)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// tokenFile requests a token for the pod's service account, as the kubelet
// does. It is not refreshed: it lasts as long as the API server allows.
func (b *podBuilder) tokenFile(field, dir string, t *corev1.ServiceAccountTokenProjection, mode *int32) error {
	if b.src == nil {
		return fmt.Errorf("%s: no sources to request a token from", field)
	}
	sa := b.pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	token, err := b.src.ServiceAccountToken(b.ctx, b.pod.Namespace, sa, t.Audience, t.ExpirationSeconds)
	if err != nil {
		return fmt.Errorf("%s: token for service account %s/%s: %w", field, b.pod.Namespace, sa, err)
	}
	return b.volumeFile(field, dir, t.Path, []byte(token), nil, mode, secretFileMode)
}

// volumeFile adds one file of a volume. Its mode is the item's, else the
// volume's default, else 0644, narrowed to widest and always owner-readable.
func (b *podBuilder) volumeFile(field, dir, path string, data []byte, itemMode, defaultMode *int32, widest fs.FileMode) error {
	if err := checkRelPath(path); err != nil {
		return podErr(field+".path", "%v", err)
	}
	mode := fs.FileMode(0o644)
	if defaultMode != nil {
		mode = fs.FileMode(uint32(*defaultMode))
	}
	if itemMode != nil {
		mode = fs.FileMode(uint32(*itemMode))
	}
	mode = mode&widest | 0o400
	return b.addFile(field, File{Path: dir + "/" + path, Data: data, Mode: mode})
}

// mount turns a container's volume mount into a bind of the job directory.
// Volumes other than emptyDir are always read-only, as in Kubernetes.
func (b *podBuilder) mount(m *corev1.VolumeMount, env *containerEnv, field string) (Mount, error) {
	if !b.rt.mountsSupported() {
		return Mount{}, podErr(field, "runtime %s cannot mount volumes: it runs on the node's own filesystem "+
			"(the service-account volume is left out with automountServiceAccountToken: false)", b.rt)
	}
	vol, ok := b.volumes[m.Name]
	if !ok {
		return Mount{}, podErr(field+".name", "no volume %q in the pod", m.Name)
	}
	if err := checkMountTarget(m.MountPath); err != nil {
		return Mount{}, podErr(field+".mountPath", "%v", err)
	}
	sub, subField := m.SubPath, field+".subPath"
	if m.SubPathExpr != "" {
		sub, subField = env.expand(m.SubPathExpr), field+".subPathExpr"
	}
	src := vol.dir
	if sub != "" {
		if err := checkRelPath(sub); err != nil {
			return Mount{}, podErr(subField, "%v", err)
		}
		if strings.ContainsAny(sub, ":,") {
			return Mount{}, podErr(subField, "path %q holds ':' or ','", sub)
		}
		src += "/" + sub
		if vol.emptyDir {
			b.addDir(src)
		}
	}
	return Mount{Source: src, Target: m.MountPath, ReadOnly: m.ReadOnly || !vol.emptyDir}, nil
}

func (b *podBuilder) addDir(dir string) {
	for _, d := range b.job.Dirs {
		if d == dir {
			return
		}
	}
	b.job.Dirs = append(b.job.Dirs, dir)
}

// setField names the field of a one-of struct (a VolumeSource, a
// VolumeProjection) that is set, by its JSON name.
func setField(v any) string {
	rv := reflect.ValueOf(v)
	for i := 0; i < rv.NumField(); i++ {
		if f := rv.Field(i); f.Kind() == reflect.Pointer && !f.IsNil() {
			name, _, _ := strings.Cut(rv.Type().Field(i).Tag.Get("json"), ",")
			return name
		}
	}
	return "(none)"
}
