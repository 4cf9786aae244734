# Shared settings of the e2e cluster harness. Sourced by cluster.sh, never run on its own.
#
# Everything the harness builds or runs lives outside the repository, under $E2E_CACHE:
#   go/          private GOCACHE and GOMODCACHE (a shared default cache lost entries mid-build)
#   src/         generated build modules and copies of upstream modules
#   bin/<set>/   built binaries, one directory per pinned version so a bump rebuilds
#   images/      image tarballs built by e2e/cmd/e2eimages
#   state/       the running cluster: pki, config, logs, pids, runtime roots
# The kubeconfig of a running cluster is $E2E_STATE/kubeconfig.

K8S_VERSION=v1.36.3
K8S_STAGING_VERSION=v0.36.3
ETCD_VERSION=v3.6.8
TEKTON_VERSION=v1.15.1
CSI_PROVISIONER_VERSION=v5.3.0
LOCAL_PATH_VERSION=v0.0.30
REGISTRY_VERSION=v3.1.2
KWOK_VERSION=v0.8.0
CONTAINERD_VERSION=v2.3.7

E2E_CACHE=${E2E_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/concourse-tekton}
E2E_STATE=${E2E_STATE:-$E2E_CACHE/state}
E2E_KUBECONFIG_PATH=$E2E_STATE/kubeconfig

# K8S_BUILD_REV names a change to what build_k8s writes itself (the etcd command), so
# that a cache built before it is built again.
K8S_BUILD_REV=2
BIN_K8S=$E2E_CACHE/bin/k8s-$K8S_VERSION-etcd-$ETCD_VERSION-r$K8S_BUILD_REV
BIN_TEKTON=$E2E_CACHE/bin/tekton-$TEKTON_VERSION
BIN_ADDONS=$E2E_CACHE/bin/addons-csi-$CSI_PROVISIONER_VERSION-lp-$LOCAL_PATH_VERSION
BIN_REGISTRY=$E2E_CACHE/bin/registry-$REGISTRY_VERSION
BIN_KWOK=$E2E_CACHE/bin/kwok-$KWOK_VERSION
BIN_CONTAINERD=$E2E_CACHE/bin/containerd-$CONTAINERD_VERSION
TEKTON_SRC=$E2E_CACHE/src/tekton-$TEKTON_VERSION

# Network: the node IP lives on a bridge we create, pods on a second one, and the service
# CIDR is blackholed because there is no kube-proxy (it would follow the default route).
NODE_BRIDGE=labnode0
NODE_IP=10.87.0.1
POD_BRIDGE=labcni0
POD_CIDR=10.88.0.0/16
# The host's address on the pod bridge (the whole /16, so that replies to pods go back
# over the bridge): the image registry listens there, for containerd on the host to pull
# from and for pods to push to. CNI's IPAM keeps it as the range's gateway.
POD_BRIDGE_IP=10.88.0.1
REGISTRY_ADDR=$POD_BRIDGE_IP:5000
# The API server for pods (apiserver-bridge forwards it to loopback): there is no service
# proxy, so the kubernetes Service's address leads nowhere.
APISERVER_BRIDGE_ADDR=$POD_BRIDGE_IP:6443
# A second registry, which wants a username and password (htpasswd) for every request:
# the images of the tests' private-registry builds. The credentials are the tests'
# fixture, known to them (E2E_PRIVATE_REGISTRY_AUTH), and guard nothing else.
PRIVATE_REGISTRY_ADDR=$POD_BRIDGE_IP:5001
PRIVATE_REGISTRY_USER=e2e
PRIVATE_REGISTRY_PASSWORD=e2e-private-pass
# The bcrypt hash of PRIVATE_REGISTRY_PASSWORD, which distribution's htpasswd wants.
PRIVATE_REGISTRY_HTPASSWD='e2e:$2a$04$W5x6RkVWKVojV/Kk2VOxWe4zxxt0H4PTHA93Nbqx8tB/QfiNvn1ze'
SERVICE_CIDR=10.96.0.0/24
# The kubelet's cluster DNS address, in the blackholed service CIDR: no DNS server answers
# there, as none answers a pod at the host's resolver either (nothing is forwarded off the
# pod bridge), but a kubelet without one writes a MissingClusterDNS warning event at every
# sync of every pod, a fifth of the API server's event writes in the e2e suites.
CLUSTER_DNS=10.96.0.10
NODE_NAME=labnode
# The Go daemons' GOGC (the apiserver, etcd, the kubelet, containerd, Tekton, ...): on
# these 2-core machines the e2e suites wait on CPU, and at Go's default (100) a tenth or
# more of the apiserver's went to collecting garbage. At 400 each heap grows to five
# times its live data before a collection, not twice: the apiserver to about 2 GB. The
# soft memory limit makes a daemon collect sooner rather than grow past it.
DAEMON_GOGC=${E2E_DAEMON_GOGC:-400}
DAEMON_GOMEMLIMIT=3GiB

# Image references: non-latest tags so the pull policy is IfNotPresent and nothing asks a
# registry; the .invalid domain guarantees a pull could never resolve anyway.
IMG_PREFIX=e2e.invalid
IMG_PAUSE=$IMG_PREFIX/pause:3.10
IMG_BUSYBOX=$IMG_PREFIX/busybox:1.35

# The three host sysctls the kubelet rewrites; saved before it starts, restored on down.
KUBELET_SYSCTLS="vm.overcommit_memory kernel.panic kernel.panic_on_oops"

# The caller's KUBECONFIG reaches nothing the harness starts or runs: each is given this
# cluster's kubeconfig explicitly, and a component that reads KUBECONFIG prefers it to
# its --kubeconfig flag (csi-provisioner does, and with a KUBECONFIG of a cluster that is
# down, or another one, it exits or provisions there).
unset KUBECONFIG

# A dead proxy for everything that might pull or fetch (containerd, Tekton, add-ons): an
# accidental pull fails on this machine. Never for the apiserver: its webhook calls would
# be proxied and fail.
DEAD_PROXY_ENV=(HTTPS_PROXY=http://127.0.0.1:9 HTTP_PROXY=http://127.0.0.1:9 https_proxy=http://127.0.0.1:9 http_proxy=http://127.0.0.1:9 NO_PROXY=127.0.0.1,localhost no_proxy=127.0.0.1,localhost)
# containerd's: the same, but the registry on the pod bridge is reached directly.
CONTAINERD_PROXY_ENV=(HTTPS_PROXY=http://127.0.0.1:9 HTTP_PROXY=http://127.0.0.1:9 https_proxy=http://127.0.0.1:9 http_proxy=http://127.0.0.1:9 NO_PROXY=127.0.0.1,localhost,$POD_BRIDGE_IP no_proxy=127.0.0.1,localhost,$POD_BRIDGE_IP)

export GOTOOLCHAIN=local

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

log() { printf '%s e2e-cluster: %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

# goenv runs go with the harness's private caches.
goenv() {
	env GOCACHE="$E2E_CACHE/go/cache" GOMODCACHE="$E2E_CACHE/go/mod" GOFLAGS="-buildvcs=false -modcacherw" \
		CGO_ENABLED=0 GOWORK=off "$@"
}
