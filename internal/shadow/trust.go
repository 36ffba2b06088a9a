package shadow

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	psapi "k8s.io/pod-security-admission/api"
)

// ErrNamespaceNotTrusted is wrapped by the error Ensure returns for a
// shadow namespace that exists and that sluice neither created nor was told
// to trust: the shadow would hand the site's credentials, and the pod's
// traffic, to whoever made it. The error names the namespace and the way
// out; it holds until an operator acts, and the pod waits meanwhile.
var ErrNamespaceNotTrusted = errors.New("not trusted")

// A shadow namespace sluice created is recorded in a ConfigMap of the
// virtual kubelet's own namespace (Spec.CredentialsNamespace), one a
// namespace: its name and UID. Labels on the namespace would not do: its
// creator, whoever that is, sets them. The UID tells the namespace sluice
// created from one deleted and made again under the same name. The records
// outlive sluice-vk's restarts and its uninstall (they go with its
// namespace), and the virtual nodes installed in one namespace share them.
const (
	// recordPrefix starts the name of a record; the shadow namespace's
	// name (a DNS label) ends it.
	recordPrefix = "sluice-shadow-namespace."
	// LabelShadowNamespace, on a record, is the shadow namespace it
	// vouches for.
	LabelShadowNamespace = "sluice.io/shadow-namespace"

	recordKeyNamespace = "namespace"
	recordKeyUID       = "uid"
)

// RecordName is the name of the ConfigMap that records the shadow
// namespace ns.
func RecordName(ns string) string { return recordPrefix + ns }

// trust is what a Manager knows of the shadow namespaces: those found
// trusted (name → UID), those it created and could not record yet, and a
// lock a namespace so that one Ensure creates and records it while the
// others wait, instead of finding it made and not yet recorded.
type trust struct {
	mu         sync.Mutex
	trusted    map[string]types.UID
	unrecorded map[string]types.UID
	locks      map[string]*sync.Mutex
}

// lock locks the namespace ns and returns its unlock.
func (t *trust) lock(ns string) func() {
	t.mu.Lock()
	if t.locks == nil {
		t.locks = map[string]*sync.Mutex{}
	}
	l, ok := t.locks[ns]
	if !ok {
		l = &sync.Mutex{}
		t.locks[ns] = l
	}
	t.mu.Unlock()
	l.Lock()
	return l.Unlock
}

func (t *trust) known(ns *corev1.Namespace) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	uid, ok := t.trusted[ns.Name]
	return ok && uid == ns.UID
}

func (t *trust) remember(ns *corev1.Namespace) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.trusted == nil {
		t.trusted = map[string]types.UID{}
	}
	t.trusted[ns.Name] = ns.UID
	delete(t.unrecorded, ns.Name)
}

// created notes that this Manager created ns and could not record it yet.
func (t *trust) created(ns *corev1.Namespace) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.unrecorded == nil {
		t.unrecorded = map[string]types.UID{}
	}
	t.unrecorded[ns.Name] = ns.UID
}

// ours says whether this Manager created ns and could not record it yet.
func (t *trust) ours(ns *corev1.Namespace) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	uid, ok := t.unrecorded[ns.Name]
	return ok && uid == ns.UID
}

// ensureNamespace returns the shadow namespace ns when sluice may use it:
// it creates and records it when it is missing, enforcing the restricted
// Pod Security Standard (latest version): the tunnels need nothing more. A
// namespace that exists already is used only when it is the one sluice
// recorded (same UID), when Spec.TrustedNamespaces names it, or when an
// install from before the records adopts it (adoptable); it is left as it is,
// labels included. Any other is refused with ErrNamespaceNotTrusted,
// before anything is written there. The pod's own namespace, where a pod
// may ask for its shadow (annotations.ShadowSameNS), is the pod's to use:
// checkSameNamespace lets no credential be copied there.
func (m *Manager) ensureNamespace(ctx context.Context, pod *corev1.Pod, ns string) (*corev1.Namespace, error) {
	defer m.trust.lock(ns)()
	got, err := m.Client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	switch {
	case err == nil && ns == pod.Namespace:
		return got, nil
	case apierrors.IsNotFound(err):
		return m.createNamespace(ctx, ns)
	case err != nil:
		return nil, fmt.Errorf("shadow: get namespace %s: %w", ns, err)
	}
	if err := m.checkTrusted(ctx, got); err != nil {
		return nil, err
	}
	return got, nil
}

// createNamespace creates the shadow namespace ns and records it. One it
// cannot record is remembered as its own, and recorded at the next
// attempt: only a sluice-vk stopping in between leaves it unrecorded (and
// refused until an operator deletes it), since deleting it again would
// need the right to delete any namespace.
func (m *Manager) createNamespace(ctx context.Context, ns string) (*corev1.Namespace, error) {
	want := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: ns,
		Labels: map[string]string{
			LabelManagedBy:            ManagedBy,
			psapi.EnforceLevelLabel:   string(psapi.LevelRestricted),
			psapi.EnforceVersionLabel: psapi.VersionLatest,
		},
	}}
	got, err := m.Client.CoreV1().Namespaces().Create(ctx, want, metav1.CreateOptions{})
	switch {
	case apierrors.IsAlreadyExists(err):
		// Made meanwhile by someone else (or by another virtual node
		// sharing the records): trusted only as any existing one.
		if got, err = m.Client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err != nil {
			return nil, fmt.Errorf("shadow: get namespace %s: %w", ns, err)
		}
		if err := m.checkTrusted(ctx, got); err != nil {
			return nil, err
		}
		return got, nil
	case err != nil:
		return nil, fmt.Errorf("shadow: create namespace %s: %w", ns, err)
	}
	if err := m.record(ctx, got); err != nil {
		m.trust.created(got)
		return nil, err
	}
	m.trust.remember(got)
	m.log().Info("shadow namespace created", "namespace", ns, "uid", got.UID,
		"record", m.Spec.CredentialsNamespace+"/"+RecordName(ns))
	return got, nil
}

// checkTrusted returns nil when sluice may use the existing namespace ns,
// else an error wrapping ErrNamespaceNotTrusted.
func (m *Manager) checkTrusted(ctx context.Context, ns *corev1.Namespace) error {
	if m.trust.known(ns) || slices.Contains(m.Spec.TrustedNamespaces, ns.Name) {
		return nil
	}
	if ns.DeletionTimestamp != nil {
		return fmt.Errorf("shadow: namespace %s is being deleted", ns.Name)
	}
	if m.trust.ours(ns) {
		if err := m.record(ctx, ns); err != nil {
			return err
		}
		m.trust.remember(ns)
		return nil
	}
	if err := m.access(m.Spec.CredentialsNamespace); err != nil {
		return err
	}
	recorded, found, err := RecordedUID(ctx, m.Client, m.Spec.CredentialsNamespace, ns.Name)
	switch {
	case err != nil:
		return err
	case found && recorded == ns.UID:
		m.trust.remember(ns)
		return nil
	case found:
		return m.notTrusted(ns, fmt.Sprintf("it was deleted and made again since sluice created it (uid %s, recorded %s)", ns.UID, recorded))
	}
	adopt, err := m.adoptable(ctx, ns)
	if err != nil {
		return err
	}
	if !adopt {
		return m.notTrusted(ns, "sluice did not create it")
	}
	if err := m.record(ctx, ns); err != nil {
		return err
	}
	m.trust.remember(ns)
	m.log().Warn("shadow namespace adopted: made by sluice before its namespaces were recorded, it holds the copy of the site's credential",
		"namespace", ns.Name, "uid", ns.UID, "record", m.Spec.CredentialsNamespace+"/"+RecordName(ns.Name))
	return nil
}

// RecordedUID reads the record, in credentialsNS (sluice's own namespace),
// of the shadow namespace ns: the UID of the namespace of that name that
// sluice created or adopted, and whether there is a record at all. A
// namespace whose UID differs was deleted and made again by someone else.
// The records are written by sluice-vk only; the gateway reads them to
// tell a shadow sluice made from a look-alike.
func RecordedUID(ctx context.Context, c kubernetes.Interface, credentialsNS, ns string) (uid types.UID, found bool, err error) {
	rec, err := c.CoreV1().ConfigMaps(credentialsNS).Get(ctx, RecordName(ns), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return "", false, nil
	case err != nil:
		return "", false, fmt.Errorf("shadow: get the record of namespace %s: %w", ns, err)
	case rec.Data[recordKeyNamespace] != ns:
		// A record that names another namespace vouches for none.
		return "", true, nil
	}
	return types.UID(rec.Data[recordKeyUID]), true, nil
}

func (m *Manager) notTrusted(ns *corev1.Namespace, why string) error {
	return fmt.Errorf("shadow: namespace %s %w: %s, and sluice puts the site's credentials and the pod's tunnels only in the shadow namespaces it created (recorded in %s/%s) or those an operator trusts; "+
		"delete namespace %s so that sluice creates it, or add it to Network.TrustedShadowNamespaces",
		ns.Name, ErrNamespaceNotTrusted, why, m.Spec.CredentialsNamespace, RecordName(ns.Name), ns.Name)
}

// adoptable says whether ns, unrecorded, is a shadow namespace an install
// from before the records made: it carries sluice's label and holds a copy
// of the credential the tunnels log in with, equal to the original. Labels
// can be forged by the namespace's creator, but the credential cannot be
// without having it already: such a namespace was given the credential
// before, and using it again gives nothing new away. Without
// ReplicateCredentials there is no such proof: an operator trusts the
// namespace instead.
func (m *Manager) adoptable(ctx context.Context, ns *corev1.Namespace) (bool, error) {
	if ns.Labels[LabelManagedBy] != ManagedBy || !m.Spec.ReplicateCredentials || m.Spec.CredentialsNamespace == ns.Name {
		return false, nil
	}
	name := m.Spec.loginSecret()
	copied, err := m.Client.CoreV1().Secrets(ns.Name).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("shadow: get secret %s/%s: %w", ns.Name, name, err)
	}
	if copied.Labels[labelCopy] != "true" || copied.Annotations[AnnotationCopyOf] != m.Spec.CredentialsNamespace+"/"+name {
		return false, nil
	}
	orig, err := m.Client.CoreV1().Secrets(m.Spec.CredentialsNamespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return false, fmt.Errorf("shadow: read credential secret %s/%s: %w", m.Spec.CredentialsNamespace, name, err)
	}
	return len(orig.Data) > 0 && maps.EqualFunc(copied.Data, orig.Data, bytes.Equal), nil
}

// record writes the record of ns, the namespace sluice just created or
// adopted: a record of the same name vouching for another UID is stale
// (its namespace is gone, or Ensure would have used it) and is replaced.
func (m *Manager) record(ctx context.Context, ns *corev1.Namespace) error {
	if err := m.access(m.Spec.CredentialsNamespace); err != nil {
		return err
	}
	want := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name:      RecordName(ns.Name),
			Namespace: m.Spec.CredentialsNamespace,
			Labels:    map[string]string{LabelManagedBy: ManagedBy, LabelShadowNamespace: ns.Name},
		},
		Data: map[string]string{recordKeyNamespace: ns.Name, recordKeyUID: string(ns.UID)},
	}
	cms := m.Client.CoreV1().ConfigMaps(m.Spec.CredentialsNamespace)
	_, err := cms.Create(ctx, want, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		var live *corev1.ConfigMap
		if live, err = cms.Get(ctx, want.Name, metav1.GetOptions{}); err == nil {
			live.Labels, live.Data = want.Labels, want.Data
			_, err = cms.Update(ctx, live, metav1.UpdateOptions{})
		}
	}
	if err != nil {
		return fmt.Errorf("shadow: record namespace %s in %s/%s: %w", ns.Name, want.Namespace, want.Name, err)
	}
	return nil
}
