package hostnode

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/sluice-hpc/sluice/internal/vkslog"

	"github.com/virtual-kubelet/virtual-kubelet/node"
	"github.com/virtual-kubelet/virtual-kubelet/node/nodeutil"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/record"
)

// Node is a running host node.
type Node struct {
	name, kubeletAddr string
	done              chan struct{}
	err               error
}

// Name is the node's name.
func (n *Node) Name() string { return n.name }

// KubeletAddr is the host:port the kubelet API listens on.
func (n *Node) KubeletAddr() string { return n.kubeletAddr }

// Done is closed once the node stopped and its processes are gone.
func (n *Node) Done() <-chan struct{} { return n.done }

// Wait waits until the node stopped and returns what stopped it: nil when
// its context ended.
func (n *Node) Wait() error {
	<-n.done
	return n.err
}

// Run runs a host node until ctx ends.
func Run(ctx context.Context, opts Options) error {
	n, err := Start(ctx, opts)
	if err != nil {
		return err
	}
	return n.Wait()
}

// informerResync is how often the informers resync (which also retries a
// proxy listener that could not listen).
const informerResync = 30 * time.Second

// Start registers the node and returns once its pod controller is ready;
// the node runs until ctx ends, and then stops every pod's processes (2 s
// of grace at most) before Done is closed.
func Start(ctx context.Context, opts Options) (*Node, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("sluice-hostnode: %w", err)
	}
	log := opts.Logger.With("node", opts.NodeName)
	rc, err := restConfig(opts)
	if err != nil {
		return nil, err
	}
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	podsDir := filepath.Join(opts.StateDir, "pods")
	if err := cleanPodsDir(podsDir); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", opts.KubeletListen)
	if err != nil {
		return nil, fmt.Errorf("kubelet API: %w", err)
	}
	n := &Node{name: opts.NodeName, kubeletAddr: ln.Addr().String(), done: make(chan struct{})}
	s := &starter{opts: opts, log: log, rc: rc, client: client, ln: ln, podsDir: podsDir}
	if err := s.start(ctx, n); err != nil {
		ln.Close()
		return nil, err
	}
	return n, nil
}

func restConfig(opts Options) (*rest.Config, error) {
	rc := opts.RestConfig
	if rc == nil {
		var err error
		if rc, err = clientcmd.BuildConfigFromFlags("", opts.Kubeconfig); err != nil {
			return nil, fmt.Errorf("kubeconfig %s: %w", opts.Kubeconfig, err)
		}
	} else {
		rc = rest.CopyConfig(rc)
	}
	if rc.QPS == 0 {
		rc.QPS, rc.Burst = 50, 100
	}
	return rc, nil
}

// starter wires the node's parts together.
type starter struct {
	opts    Options
	log     *slog.Logger
	rc      *rest.Config
	client  kubernetes.Interface
	ln      net.Listener
	podsDir string
}

func (s *starter) start(ctx context.Context, n *Node) error {
	// everything but the pods and the Events stops with runCtx; the pods
	// get their grace period in shutdown, and their last Events go out
	runCtx, cancel := context.WithCancel(vkslog.WithContext(ctx, s.log))
	podsCtx, stopPods := context.WithCancel(context.WithoutCancel(ctx))
	eb := record.NewBroadcaster(record.WithContext(context.WithoutCancel(ctx)))
	eb.StartRecordingToSink(&corev1client.EventSinkImpl{Interface: s.client.CoreV1().Events(corev1.NamespaceAll)})
	recorder := eb.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "sluice-hostnode", Host: s.opts.NodeName})

	podInformers := informers.NewSharedInformerFactoryWithOptions(s.client, informerResync, nodeutil.PodInformerFilter(s.opts.NodeName))
	others := informers.NewSharedInformerFactory(s.client, informerResync)
	podInformer := podInformers.Core().V1().Pods()
	cms, secrets, svcs := others.Core().V1().ConfigMaps(), others.Core().V1().Secrets(), others.Core().V1().Services()
	// every pod, for the proxy: the pods of another host node are on
	// this machine's loopback too
	allPods := others.Core().V1().Pods()

	var table serviceTable
	prov := newProvider(podsCtx, providerConfig{
		NodeName: s.opts.NodeName, HostIP: hostIP, Images: s.opts.Images, PodsDir: s.podsDir,
		InitPath: s.opts.InitPath, MaxBackoff: s.opts.MaxBackoff,
		Objects:   apiObjects{client: s.client, configMaps: cms.Lister(), secrets: secrets.Lister()},
		Tokens:    &apiTokens{client: s.client},
		Recorder:  recorder,
		Services:  table.hosts,
		RemovePod: removePod(s.client),
		Log:       s.log,
	})
	px := &proxy{Static: s.opts.Backends, Log: s.log, Pods: func(ns string, sel labels.Selector, sp corev1.ServicePort) []string {
		pods, err := allPods.Lister().Pods(ns).List(sel)
		if err != nil {
			return nil
		}
		return readyBackends(pods, sp)
	}}
	if len(s.opts.ProxyNamespaces) > 0 {
		px.Namespaces = map[string]bool{}
		for _, ns := range s.opts.ProxyNamespaces {
			px.Namespaces[ns] = true
		}
	}
	px.start(runCtx)
	stop := func() {
		cancel()
		prov.shutdown()
		stopPods()
		px.wait()
		others.Shutdown()
		podInformers.Shutdown()
		eb.Shutdown()
	}
	fail := func(err error) error {
		stop()
		return err
	}

	servicesChanged := func() {
		px.sync(table.list())
		prov.servicesChanged()
		if s.opts.HostsFile != "" {
			if err := writeFileAtomic(s.opts.HostsFile, hostsMapFile(table.hosts())); err != nil {
				s.log.Warn("sluice-hostnode: hosts file not written", "error", err)
			}
		}
	}
	allPods.Informer() // registered before the factory starts
	if err := watch(svcs.Informer(), cms.Informer(), secrets.Informer(), &table, prov, servicesChanged); err != nil {
		return fail(err)
	}
	others.Start(runCtx.Done())
	for typ, ok := range others.WaitForCacheSync(runCtx.Done()) {
		if !ok {
			return fail(fmt.Errorf("sluice-hostnode: %v informer did not sync", typ))
		}
	}
	servicesChanged()

	pc, err := node.NewPodController(node.PodControllerConfig{
		PodClient: s.client.CoreV1(), PodInformer: podInformer, EventRecorder: recorder, Provider: prov,
		ConfigMapInformer: cms, SecretInformer: secrets, ServiceInformer: svcs,
		SkipDownwardAPIResolution: true,
	})
	if err != nil {
		return fail(fmt.Errorf("pod controller: %w", err))
	}
	nodeObj := newNode(s.opts.NodeName, int32(s.ln.Addr().(*net.TCPAddr).Port), time.Now())
	nc, err := node.NewNodeController(node.NewNaiveNodeProvider(), nodeObj, s.client.CoreV1().Nodes(),
		node.WithNodeEnableLeaseV1(nodeutil.NodeLeaseV1Client(s.client), node.DefaultLeaseDuration))
	if err != nil {
		return fail(fmt.Errorf("node controller: %w", err))
	}
	srv, err := kubeletServer(runCtx, s.opts.NodeName, s.rc, s.client, prov, podInformer.Lister())
	if err != nil {
		return fail(err)
	}
	podInformers.Start(runCtx.Done())
	r := &liveNode{n: n, pc: pc, nc: nc, done: make(chan error, 2), stop: stop}
	go func() { r.done <- pc.Run(runCtx, 4) }()
	go func() { r.done <- serveKubelet(runCtx, srv, s.ln) }()
	if err := r.waitReady(ctx, runCtx); err != nil {
		return err
	}
	s.log.Info("sluice-hostnode: node running", "kubelet_api", n.kubeletAddr, "state_dir", s.opts.StateDir)
	go r.supervise(ctx)
	return nil
}

// liveNode is a started node: its controllers and the kubelet API, which
// report on done.
type liveNode struct {
	n         *Node
	pc        *node.PodController
	nc        *node.NodeController
	ncStarted bool
	done      chan error // the pod controller's and the kubelet API's ends
	stop      func()
}

// waitReady starts the node controller once the pod controller is ready,
// and waits for the node to be registered.
func (r *liveNode) waitReady(ctx, runCtx context.Context) error {
	select {
	case <-r.pc.Ready():
	case <-r.pc.Done():
		return r.end(fmt.Errorf("pod controller: %w", r.pc.Err()))
	case <-ctx.Done():
		r.end(nil)
		return fmt.Errorf("sluice-hostnode: %w", ctx.Err())
	}
	r.ncStarted = true
	go r.nc.Run(runCtx) //nolint:errcheck // its error is read from nc.Err
	select {
	case <-r.nc.Ready():
		return nil
	case <-r.nc.Done():
		return r.end(fmt.Errorf("node controller: %w", r.nc.Err()))
	case <-ctx.Done():
		r.end(nil)
		return fmt.Errorf("sluice-hostnode: %w", ctx.Err())
	}
}

// supervise stops the node when ctx ends or a part of it fails.
func (r *liveNode) supervise(ctx context.Context) {
	var first error
	select {
	case <-ctx.Done():
	case <-r.nc.Done():
		first = fmt.Errorf("node controller: %w", r.nc.Err())
	case err := <-r.done:
		first = err
		if first == nil {
			first = errors.New("sluice-hostnode: a component stopped")
		}
		r.done <- nil // counted in end
	}
	r.end(first)
}

// end stops everything, waits for it, and closes the node's Done with
// first (or the first error a part ended with).
func (r *liveNode) end(first error) error {
	r.stop()
	for range 2 {
		if err := <-r.done; first == nil && err != nil && !errors.Is(err, context.Canceled) {
			first = err
		}
	}
	if r.ncStarted {
		<-r.nc.Done()
	}
	r.n.err = first
	close(r.n.done)
	return first
}

// watch feeds the Service table and the pods' volumes from the informers.
func watch(svcs, cms, secrets cache.SharedIndexInformer, table *serviceTable, prov *provider, servicesChanged func()) error {
	_, err := svcs.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if svc, ok := obj.(*corev1.Service); ok {
				table.set(svc)
				servicesChanged()
			}
		},
		UpdateFunc: func(_, obj any) {
			if svc, ok := obj.(*corev1.Service); ok {
				table.set(svc)
				servicesChanged()
			}
		},
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if svc, ok := obj.(*corev1.Service); ok {
				table.remove(svc.Namespace, svc.Name)
				servicesChanged()
			}
		},
	})
	if err != nil {
		return fmt.Errorf("service informer: %w", err)
	}
	for kind, inf := range map[string]cache.SharedIndexInformer{"ConfigMap": cms, "Secret": secrets} {
		changed := func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if m, ok := obj.(interface {
				GetNamespace() string
				GetName() string
			}); ok {
				prov.objectChanged(kind, m.GetNamespace(), m.GetName())
			}
		}
		_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    changed,
			UpdateFunc: func(_, obj any) { changed(obj) },
			DeleteFunc: changed,
		})
		if err != nil {
			return fmt.Errorf("%s informer: %w", kind, err)
		}
	}
	return nil
}

// removePod deletes a pod whose processes ended at once (grace 0), unless
// it is gone or is another pod of the same name.
func removePod(client kubernetes.Interface) func(ctx context.Context, namespace, name string, uid types.UID) error {
	return func(ctx context.Context, namespace, name string, uid types.UID) error {
		opts := metav1.DeleteOptions{GracePeriodSeconds: new(int64(0)), Preconditions: metav1.NewUIDPreconditions(string(uid))}
		err := client.CoreV1().Pods(namespace).Delete(ctx, name, opts)
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return nil
		}
		return err
	}
}

// writeFileAtomic replaces path with data through a temporary file.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
