package cli

import (
	"github.com/spf13/cobra"

	"github.com/concourse-tekton/concourse-tekton/tektonrun"
)

// newTarget opens a target; tests replace it with fake clients.
var newTarget = tektonrun.NewTarget

// dialTarget opens the target o names, with our user agent, for every command that talks
// to a cluster: TLS trusts the fallback roots from then on.
func dialTarget(o tektonrun.TargetOptions) (*tektonrun.Target, error) {
	trustFallbackRoots()
	if o.UserAgent == "" {
		o.UserAgent = "concourse-tekton/" + version
	}
	return newTarget(o)
}

// addTargetFlags registers kubectl's flags that pick the cluster and the namespace, for
// every command that talks to a target.
func addTargetFlags(cmd *cobra.Command, o *tektonrun.TargetOptions) {
	fl := cmd.Flags()
	fl.StringVar(&o.Kubeconfig, "kubeconfig", "", "the kubeconfig file (default: KUBECONFIG, then ~/.kube/config, then the pod's service account)")
	fl.StringVar(&o.Context, "context", "", "the kubeconfig context to use (default: its current context)")
	fl.StringVarP(&o.Namespace, "namespace", "n", "", "the namespace builds run in (default: the context's, else the pod's, else default)")
	fl.BoolVar(&o.InCluster, "in-cluster", false, "use the pod's service account, whatever kubeconfig there is")
	fl.Float32Var(&o.QPS, "qps", 50, "the most requests per second to the API server")
	fl.IntVar(&o.Burst, "burst", 100, "the most requests in a burst above --qps")
}
