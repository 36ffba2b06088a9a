package hostnode

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
)

// volumeFile is one file of a ConfigMap, Secret, projected or downward-API
// volume.
type volumeFile struct {
	Data []byte
	Mode fs.FileMode
}

// volumeFiles maps a path inside the volume to its file.
type volumeFiles map[string]volumeFile

// tokenSource issues the service account tokens of projected volumes.
type tokenSource interface {
	Token(ctx context.Context, pod *corev1.Pod, p *corev1.ServiceAccountTokenProjection) ([]byte, error)
	// Forget drops what is kept for a pod that is gone.
	Forget(uid types.UID)
}

// defaultFileMode is the mode of a volume's files when the pod says none.
const defaultFileMode fs.FileMode = 0o644

// checkVolumes refuses the pods whose volumes the host node cannot give:
// only emptyDir, hostPath, configMap, secret, downwardAPI and projected
// (configMap, secret, downwardAPI and serviceAccountToken sources) are
// supported.
func checkVolumes(pod *corev1.Pod) error {
	for _, v := range pod.Spec.Volumes {
		vs := v.VolumeSource
		switch {
		case vs.EmptyDir != nil, vs.HostPath != nil, vs.ConfigMap != nil, vs.Secret != nil, vs.DownwardAPI != nil:
		case vs.Projected != nil:
			for i, s := range vs.Projected.Sources {
				if s.ConfigMap == nil && s.Secret == nil && s.DownwardAPI == nil && s.ServiceAccountToken == nil {
					return fmt.Errorf("volume %s: projected source %d: only configMap, secret, downwardAPI and serviceAccountToken sources are supported by sluice-hostnode", v.Name, i)
				}
			}
		default:
			return fmt.Errorf("volume %s: only emptyDir, hostPath, configMap, secret, downwardAPI and projected volumes are supported by sluice-hostnode", v.Name)
		}
	}
	return nil
}

// hasFiles tells whether a volume's content comes from API objects (and is
// written, refreshed and mounted read-only), as opposed to emptyDir and
// hostPath.
func hasFiles(v *corev1.Volume) bool {
	vs := v.VolumeSource
	return vs.ConfigMap != nil || vs.Secret != nil || vs.DownwardAPI != nil || vs.Projected != nil
}

// volumeReferences tells whether volume v reads the ConfigMap (kind
// "ConfigMap") or Secret (kind "Secret") called name.
func volumeReferences(v *corev1.Volume, kind, name string) bool {
	vs := v.VolumeSource
	switch kind {
	case "ConfigMap":
		if vs.ConfigMap != nil && vs.ConfigMap.Name == name {
			return true
		}
	case "Secret":
		if vs.Secret != nil && vs.Secret.SecretName == name {
			return true
		}
	}
	if vs.Projected == nil {
		return false
	}
	for _, s := range vs.Projected.Sources {
		if kind == "ConfigMap" && s.ConfigMap != nil && s.ConfigMap.Name == name ||
			kind == "Secret" && s.Secret != nil && s.Secret.Name == name {
			return true
		}
	}
	return false
}

// buildVolumeFiles reads the files of a volume for which hasFiles is true.
func buildVolumeFiles(ctx context.Context, src objectSource, tokens tokenSource, pod *corev1.Pod, v *corev1.Volume, addrs podAddrs) (volumeFiles, error) {
	files := volumeFiles{}
	vs := v.VolumeSource
	var err error
	switch {
	case vs.ConfigMap != nil:
		err = addConfigMapFiles(ctx, src, pod.Namespace, vs.ConfigMap.Name, vs.ConfigMap.Items, vs.ConfigMap.Optional, mode(vs.ConfigMap.DefaultMode), files)
	case vs.Secret != nil:
		err = addSecretFiles(ctx, src, pod.Namespace, vs.Secret.SecretName, vs.Secret.Items, vs.Secret.Optional, mode(vs.Secret.DefaultMode), files)
	case vs.DownwardAPI != nil:
		err = addDownwardFiles(pod, vs.DownwardAPI.Items, mode(vs.DownwardAPI.DefaultMode), addrs, files)
	case vs.Projected != nil:
		err = addProjectedFiles(ctx, src, tokens, pod, vs.Projected, addrs, files)
	default:
		return nil, fmt.Errorf("volume %s has no files", v.Name)
	}
	if err != nil {
		return nil, fmt.Errorf("volume %s: %w", v.Name, err)
	}
	for p := range files {
		if err := checkVolumePath(p); err != nil {
			return nil, fmt.Errorf("volume %s: %w", v.Name, err)
		}
	}
	return files, nil
}

func mode(m *int32) fs.FileMode {
	if m == nil {
		return defaultFileMode
	}
	return fs.FileMode(*m) & fs.ModePerm
}

func addProjectedFiles(ctx context.Context, src objectSource, tokens tokenSource, pod *corev1.Pod, p *corev1.ProjectedVolumeSource, addrs podAddrs, files volumeFiles) error {
	def := mode(p.DefaultMode)
	for _, s := range p.Sources {
		var err error
		switch {
		case s.ConfigMap != nil:
			err = addConfigMapFiles(ctx, src, pod.Namespace, s.ConfigMap.Name, s.ConfigMap.Items, s.ConfigMap.Optional, def, files)
		case s.Secret != nil:
			err = addSecretFiles(ctx, src, pod.Namespace, s.Secret.Name, s.Secret.Items, s.Secret.Optional, def, files)
		case s.DownwardAPI != nil:
			err = addDownwardFiles(pod, s.DownwardAPI.Items, def, addrs, files)
		case s.ServiceAccountToken != nil:
			if tokens == nil {
				return errors.New("serviceAccountToken: no token source")
			}
			var tok []byte
			if tok, err = tokens.Token(ctx, pod, s.ServiceAccountToken); err == nil {
				files[s.ServiceAccountToken.Path] = volumeFile{Data: tok, Mode: def}
			}
		default:
			err = errors.New("only configMap, secret, downwardAPI and serviceAccountToken sources are supported")
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func addConfigMapFiles(ctx context.Context, src objectSource, ns, name string, items []corev1.KeyToPath, opt *bool, def fs.FileMode, files volumeFiles) error {
	cm, err := src.ConfigMap(ctx, ns, name)
	if err != nil {
		if apierrors.IsNotFound(err) && optional(opt) {
			return nil
		}
		return fmt.Errorf("configMap %s: %w", name, err)
	}
	data := make(map[string][]byte, len(cm.Data)+len(cm.BinaryData))
	for k, v := range cm.Data {
		data[k] = []byte(v)
	}
	maps.Copy(data, cm.BinaryData)
	if err := addKeyFiles("configMap "+name, data, items, opt, def, files); err != nil {
		return err
	}
	return nil
}

func addSecretFiles(ctx context.Context, src objectSource, ns, name string, items []corev1.KeyToPath, opt *bool, def fs.FileMode, files volumeFiles) error {
	s, err := src.Secret(ctx, ns, name)
	if err != nil {
		if apierrors.IsNotFound(err) && optional(opt) {
			return nil
		}
		return fmt.Errorf("secret %s: %w", name, err)
	}
	data := make(map[string][]byte, len(s.Data)+len(s.StringData))
	for k, v := range s.StringData {
		data[k] = []byte(v)
	}
	maps.Copy(data, s.Data)
	return addKeyFiles("secret "+name, data, items, opt, def, files)
}

// addKeyFiles adds a file per key (at the key's name), or per item (at its
// path, with its mode when set). A missing key fails unless the source is
// optional.
func addKeyFiles(what string, data map[string][]byte, items []corev1.KeyToPath, opt *bool, def fs.FileMode, files volumeFiles) error {
	if len(items) == 0 {
		for _, k := range slices.Sorted(maps.Keys(data)) {
			files[k] = volumeFile{Data: data[k], Mode: def}
		}
		return nil
	}
	for _, it := range items {
		d, ok := data[it.Key]
		if !ok {
			if optional(opt) {
				continue
			}
			return fmt.Errorf("%s has no key %s", what, it.Key)
		}
		m := def
		if it.Mode != nil {
			m = mode(it.Mode)
		}
		files[it.Path] = volumeFile{Data: d, Mode: m}
	}
	return nil
}

func addDownwardFiles(pod *corev1.Pod, items []corev1.DownwardAPIVolumeFile, def fs.FileMode, addrs podAddrs, files volumeFiles) error {
	for _, it := range items {
		if it.FieldRef == nil {
			return fmt.Errorf("downwardAPI %s: only fieldRef is supported", it.Path)
		}
		var v string
		switch it.FieldRef.FieldPath {
		case "metadata.labels":
			v = formatMap(pod.Labels)
		case "metadata.annotations":
			v = formatMap(pod.Annotations)
		default:
			var err error
			if v, err = fieldValue(pod, it.FieldRef.FieldPath, addrs); err != nil {
				return fmt.Errorf("downwardAPI %s: %w", it.Path, err)
			}
		}
		m := def
		if it.Mode != nil {
			m = mode(it.Mode)
		}
		files[it.Path] = volumeFile{Data: []byte(v), Mode: m}
	}
	return nil
}

// formatMap writes labels or annotations as the kubelet does: key="value"
// lines, sorted.
func formatMap(m map[string]string) string {
	var b strings.Builder
	for i, k := range slices.Sorted(maps.Keys(m)) {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%s=%q", k, m[k])
	}
	return b.String()
}

// checkVolumePath refuses a file path that would leave the volume or clash
// with the writer's own ..names.
func checkVolumePath(p string) error {
	if p == "" || path.IsAbs(p) || strings.HasPrefix(p, "..") {
		return fmt.Errorf("bad file path %q", p)
	}
	for _, el := range strings.Split(p, "/") {
		if el == ".." || el == "" || el == "." {
			return fmt.Errorf("bad file path %q", p)
		}
	}
	return nil
}
