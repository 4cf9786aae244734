package tektonrun

import (
	"errors"
	"fmt"
	"io/fs"
	"sync"

	"github.com/tektoncd/pipeline/pkg/client/clientset/versioned"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// TargetOptions say which cluster and namespace to use, loaded the way kubectl loads them.
type TargetOptions struct {
	Kubeconfig string  // --kubeconfig; empty: KUBECONFIG, ~/.kube/config, then in-cluster
	Context    string  // --context
	Namespace  string  // -n; empty: the kubeconfig context's namespace, in-cluster: the pod's namespace, else "default"
	InCluster  bool    // force the in-cluster service account
	QPS        float32 // client QPS (0: 50)
	Burst      int     // client burst (0: 100)
	UserAgent  string  // optional
}

// Target is one namespace of one cluster: what Concourse calls a worker.
type Target struct {
	Name      string // "<context or in-cluster>/<namespace>", for messages
	Namespace string
	Config    *rest.Config // nil when built from existing clients
	Kube      kubernetes.Interface
	Tekton    versioned.Interface

	mu sync.Mutex
	// lastPodSecurity is what the latest check found of the namespace's Pod Security.
	lastPodSecurity *PodSecurity
}

// inCluster names the target of a pod's own service account, where there is no context.
const inCluster = "in-cluster"

// NewTarget loads the cluster's configuration the way kubectl does and builds its clients.
// It does not contact the cluster: Check does.
func NewTarget(o TargetOptions) (*Target, error) {
	if o.InCluster && (o.Kubeconfig != "" || o.Context != "") {
		return nil, errors.New("--in-cluster uses the pod's service account: leave out --kubeconfig and --context")
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if o.InCluster {
		// Load no file at all, so that clientcmd falls back to the pod's service account
		// and its namespace, exactly as when there is no kubeconfig.
		rules = &clientcmd.ClientConfigLoadingRules{}
		if _, err := rest.InClusterConfig(); err != nil {
			return nil, fmt.Errorf("--in-cluster: %w", err)
		}
	}
	rules.ExplicitPath = o.Kubeconfig
	overrides := &clientcmd.ConfigOverrides{CurrentContext: o.Context}
	overrides.Context.Namespace = o.Namespace
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)

	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, kubeconfigError(o, err)
	}
	ns, _, err := cc.Namespace()
	if err != nil {
		return nil, kubeconfigError(o, err)
	}
	name := o.Context
	if name == "" && !o.InCluster {
		if raw, err := cc.RawConfig(); err == nil {
			name = raw.CurrentContext
		}
	}
	if name == "" {
		name = inCluster
	}

	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = o.QPS, o.Burst
	if cfg.QPS == 0 {
		cfg.QPS = 50
	}
	if cfg.Burst == 0 {
		cfg.Burst = 100
	}
	if o.UserAgent != "" {
		cfg.UserAgent = o.UserAgent
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("Kubernetes client for %s: %w", name, err)
	}
	tekton, err := versioned.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("Tekton client for %s: %w", name, err)
	}
	t := NewTargetFromClients(ns, kube, tekton)
	t.Name = name + "/" + ns
	t.Config = cfg
	return t, nil
}

// kubeconfigError says how to fix what clientcmd could not load.
func kubeconfigError(o TargetOptions, err error) error {
	switch {
	case clientcmd.IsEmptyConfig(err):
		return errors.New("no Kubernetes cluster configured: set --kubeconfig or KUBECONFIG, or run in a pod")
	case o.Kubeconfig != "" && errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("kubeconfig %s does not exist: check --kubeconfig", o.Kubeconfig)
	}
	return fmt.Errorf("loading kubeconfig: %w", err)
}

// NewTargetFromClients builds a Target from existing clients (tests, the ATC embedding us).
// Its Name is the namespace, and its Config is nil.
func NewTargetFromClients(namespace string, kube kubernetes.Interface, tekton versioned.Interface) *Target {
	return &Target{Name: namespace, Namespace: namespace, Kube: kube, Tekton: tekton}
}
