# Starting the e2e cluster. Sourced by cluster.sh; cluster_up is the entry point.
#
# Every daemon runs in its own session (setsid), logs to $E2E_STATE/logs/NAME.log and
# has its PID in $E2E_STATE/pids/NAME.pid; down stops them by those PIDs only.

KUBECTL() { "$BIN_K8S/kubectl" --kubeconfig "$E2E_STATE/pki/admin.kubeconfig" "$@"; }

# start NAME [VAR=value...] -- COMMAND ARGS...
start() {
	local name=$1
	shift
	local envs=()
	while [ "$1" != "--" ]; do envs+=("$1") && shift; done
	shift
	mkdir -p "$E2E_STATE/logs" "$E2E_STATE/pids"
	# setsid: the daemon outlives the shell that started it (make, CI) and its signals.
	# 9>&-: the daemon must not inherit (and so hold) cluster.sh's lock.
	# GOGC: the Go daemons collect garbage less often than by default (DAEMON_GOGC).
	setsid env GOGC="$DAEMON_GOGC" GOMEMLIMIT="$DAEMON_GOMEMLIMIT" "${envs[@]}" "$@" >"$E2E_STATE/logs/$name.log" 2>&1 </dev/null 9>&- &
	echo $! >"$E2E_STATE/pids/$name.pid"
	# Not a job of this shell: down kills it by PID, and bash need not report that.
	disown $!
}

# wait_for WHAT SECONDS COMMAND...: retries COMMAND until it succeeds.
wait_for() {
	local what=$1 secs=$2
	shift 2
	local deadline=$((SECONDS + secs))
	until "$@" >/dev/null 2>&1; do
		[ $SECONDS -lt $deadline ] || die "timed out after ${secs}s waiting for $what (logs: $E2E_STATE/logs)"
		sleep 0.5
	done
}

install_packages() {
	local missing=()
	for p in runc containernetworking-plugins busybox-static openssl iproute2 git; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	log "installing Debian packages: ${missing[*]}"
	apt-get update -q >/dev/null || die "apt-get update failed"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >/dev/null || die "apt-get install failed"
	# The package starts a system containerd; the harness runs its own, on its own socket.
	if [ -d /run/systemd/system ]; then systemctl disable --now containerd >/dev/null 2>&1 || true; fi
}

build_tools() {
	local out=$E2E_CACHE/bin/tools
	mkdir -p "$out"
	log "building the harness's own tools"
	(cd "$REPO_ROOT" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$out/" \
		./e2e/cmd/pause ./e2e/cmd/labcsi ./e2e/cmd/mock-resource ./e2e/cmd/git-resource ./e2e/cmd/e2eimages \
		./e2e/cmd/apiserver-bridge ./e2e/cmd/probe) ||
		die "building the tools failed"
}

build_images() {
	log "building images"
	"$E2E_CACHE/bin/tools/e2eimages" -out "$E2E_CACHE/images" -prefix "$IMG_PREFIX" -busybox /bin/busybox \
		-pause "$E2E_CACHE/bin/tools/pause" -tekton "$BIN_TEKTON" -tekton-tag "$TEKTON_VERSION" \
		-mock "$E2E_CACHE/bin/tools/mock-resource" -git-resource "$E2E_CACHE/bin/tools/git-resource" \
		-probe "$E2E_CACHE/bin/tools/probe" \
		>"$E2E_CACHE/images/index.txt" || die "building images failed"
}

write_configs() {
	local conf=$E2E_STATE/conf run=$E2E_STATE/run
	mkdir -p "$conf/cni" "$run"
	cat >"$conf/containerd.toml" <<TOML
version = 4
# Nothing from the host's /etc/containerd/conf.d, which containerd imports by default.
imports = []
root = "$run/containerd/root"
state = "$run/containerd/state"
disabled_plugins = ["io.containerd.snapshotter.v1.erofs", "io.containerd.internal.v1.tracing", "io.containerd.tracing.processor.v1.otlp"]
# Its sockets are ours alone (without these it would serve /run/containerd's); no debug or
# metrics server is configured, so none runs.
[plugins."io.containerd.server.v1.grpc"]
  address = "$run/containerd/containerd.sock"
[plugins."io.containerd.server.v1.ttrpc"]
  address = "$run/containerd/containerd.sock.ttrpc"
[plugins."io.containerd.grpc.v1.cri"]
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
[plugins."io.containerd.cri.v1.images"]
  snapshotter = "overlayfs"
  [plugins."io.containerd.cri.v1.images".pinned_images]
    sandbox = "$IMG_PAUSE"
  [plugins."io.containerd.cri.v1.images".registry]
    config_path = "$conf/certs.d"
[plugins."io.containerd.cri.v1.runtime"]
  enable_selinux = false
  disable_apparmor = true
  # The VM lacks CAP_SYS_RESOURCE: an oom_score_adj below containerd's own would fail.
  restrict_oom_score_adj = true
  [plugins."io.containerd.cri.v1.runtime".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
        SystemdCgroup = false
        BinaryName = "/usr/sbin/runc"
        Root = "$run/runc"
  [plugins."io.containerd.cri.v1.runtime".cni]
    bin_dirs = ["/usr/lib/cni"]
    conf_dir = "$conf/cni"
    max_conf_num = 1
TOML
	# The harness's registries speak plain HTTP, on the pod bridge only.
	local addr
	for addr in "$REGISTRY_ADDR" "$PRIVATE_REGISTRY_ADDR"; do
		mkdir -p "$conf/certs.d/$addr"
		cat >"$conf/certs.d/$addr/hosts.toml" <<TOML
server = "http://$addr"

[host."http://$addr"]
  capabilities = ["pull", "resolve"]
TOML
	done
	cat >"$conf/registry.yml" <<YAML
version: 0.1
log: {level: warn, accesslog: {disabled: true}}
storage:
  filesystem: {rootdirectory: $run/registry}
  delete: {enabled: true}
http:
  addr: $REGISTRY_ADDR
YAML
	printf '%s\n' "$PRIVATE_REGISTRY_HTPASSWD" >"$conf/private-registry.htpasswd"
	cat >"$conf/private-registry.yml" <<YAML
version: 0.1
log: {level: warn, accesslog: {disabled: true}}
storage:
  filesystem: {rootdirectory: $run/private-registry}
  delete: {enabled: true}
auth:
  htpasswd: {realm: e2e-private, path: $conf/private-registry.htpasswd}
http:
  addr: $PRIVATE_REGISTRY_ADDR
YAML
	# Pods only reach this host: no gateway, no masquerading, no iptables, no forwarding.
	cat >"$conf/cni/10-e2enet.conflist" <<JSON
{
  "cniVersion": "0.4.0",
  "name": "e2enet",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$POD_BRIDGE",
      "isGateway": false,
      "ipMasq": false,
      "hairpinMode": false,
      "ipam": {"type": "host-local", "ranges": [[{"subnet": "$POD_CIDR", "gateway": "$POD_BRIDGE_IP"}]], "dataDir": "$run/cni-ipam"}
    }
  ]
}
JSON
	cat >"$conf/kubelet.yaml" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
containerRuntimeEndpoint: unix://$run/containerd/containerd.sock
address: $NODE_IP
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: $E2E_STATE/pki/ca.crt}
authorization: {mode: AlwaysAllow}
makeIPTablesUtilChains: false
protectKernelDefaults: false
failSwapOn: false
cgroupsPerQOS: true
enforceNodeAllocatable: ["pods"]
evictionHard: {memory.available: "100Mi", nodefs.available: "1%", imagefs.available: "1%", nodefs.inodesFree: "1%"}
imageGCHighThresholdPercent: 99
imageGCLowThresholdPercent: 98
clusterDomain: cluster.local
clusterDNS: ["$CLUSTER_DNS"]
resolvConf: /etc/resolv.conf
serializeImagePulls: false
fileCheckFrequency: 20s
nodeStatusUpdateFrequency: 10s
maxPods: 300
podPidsLimit: -1
containerLogMaxSize: 10Mi
podLogsDir: $run/pod-logs
volumePluginDir: $run/kubelet-volume-plugins
logging: {verbosity: 1}
YAML
}

setup_network() {
	ip link show "$NODE_BRIDGE" >/dev/null 2>&1 || ip link add "$NODE_BRIDGE" type bridge
	ip addr replace "$NODE_IP/32" dev "$NODE_BRIDGE"
	ip link set "$NODE_BRIDGE" up
	# No kube-proxy: a ClusterIP would otherwise follow the default route off the machine.
	ip route replace blackhole "$SERVICE_CIDR"
	# The host on the pod bridge, for the registry; the CNI plugin finds the bridge made.
	ip link show "$POD_BRIDGE" >/dev/null 2>&1 || ip link add "$POD_BRIDGE" type bridge
	ip addr replace "$POD_BRIDGE_IP/${POD_CIDR#*/}" dev "$POD_BRIDGE"
	ip link set "$POD_BRIDGE" up
}

# start_registry runs the image registry on the pod bridge: containerd pulls from it
# (hosts.toml) and pods push to it; it listens nowhere else. Beside it, the private
# registry, which wants the tests' credentials.
start_registry() {
	start_build_registry
	log "starting the private image registry on $PRIVATE_REGISTRY_ADDR"
	mkdir -p "$E2E_STATE/run/private-registry"
	start private-registry "${DEAD_PROXY_ENV[@]}" OTEL_TRACES_EXPORTER=none -- "$BIN_REGISTRY/registry" serve "$E2E_STATE/conf/private-registry.yml"
	wait_for "the private registry" 30 curl -fsS --noproxy '*' -u "$PRIVATE_REGISTRY_USER:$PRIVATE_REGISTRY_PASSWORD" "http://$PRIVATE_REGISTRY_ADDR/v2/"
}

# start_build_registry starts the registry of the builds' images and resource caches (what
# it holds is kept across a stop: cluster.sh stop-registry, start-registry).
start_build_registry() {
	log "starting the image registry on $REGISTRY_ADDR"
	mkdir -p "$E2E_STATE/run/registry"
	start registry "${DEAD_PROXY_ENV[@]}" OTEL_TRACES_EXPORTER=none -- "$BIN_REGISTRY/registry" serve "$E2E_STATE/conf/registry.yml"
	wait_for "the registry" 30 curl -fsS --noproxy '*' "http://$REGISTRY_ADDR/v2/"
}

# compact_etcd compacts etcd's history at its current revision: a watch that resumes from
# an earlier resource version is then refused (410 Gone) once the API server's watch cache
# does not hold it (cluster.sh restart-apiserver empties that cache).
compact_etcd() {
	local rev
	# etcd's gRPC gateway: a range of one key that does not exist answers its header.
	rev=$(curl -fsS --noproxy '*' -X POST http://127.0.0.1:2379/v3/kv/range -d '{"key":"AA=="}' |
		sed -n 's/.*"revision":"\([0-9]*\)".*/\1/p')
	[ -n "$rev" ] || die "reading etcd's revision"
	curl -fsS --noproxy '*' -X POST http://127.0.0.1:2379/v3/kv/compaction -d "{\"revision\":\"$rev\",\"physical\":true}" >/dev/null ||
		die "compacting etcd at revision $rev"
	log "etcd compacted at revision $rev"
}

save_sysctls() {
	[ -f "$E2E_STATE/sysctl.orig" ] && return 0
	local s
	for s in $KUBELET_SYSCTLS; do echo "$s=$(sysctl -n "$s")"; done >"$E2E_STATE/sysctl.orig.tmp"
	mv "$E2E_STATE/sysctl.orig.tmp" "$E2E_STATE/sysctl.orig"
}

# start_apiserver starts the kube-apiserver and waits until it is ready.
start_apiserver() {
	local pki=$E2E_STATE/pki
	# No dead proxy here: the apiserver's webhook calls must go straight to the webhook.
	start kube-apiserver -- "$BIN_K8S/kube-apiserver" --etcd-servers=http://127.0.0.1:2379 \
		--bind-address=127.0.0.1 --secure-port=6443 --advertise-address="$NODE_IP" \
		--endpoint-reconciler-type=none --service-cluster-ip-range="$SERVICE_CIDR" --allow-privileged=true \
		--authorization-mode=Node,RBAC --client-ca-file="$pki/ca.crt" \
		--tls-cert-file="$pki/apiserver.crt" --tls-private-key-file="$pki/apiserver.key" \
		--kubelet-client-certificate="$pki/apiserver-kubelet-client.crt" --kubelet-client-key="$pki/apiserver-kubelet-client.key" \
		--kubelet-preferred-address-types=InternalIP \
		--service-account-issuer=https://kubernetes.default.svc.cluster.local \
		--service-account-key-file="$pki/sa.pub" --service-account-signing-key-file="$pki/sa.key" \
		--enable-aggregator-routing=true --profiling=false
	wait_for "the apiserver" 90 KUBECTL get --raw /readyz
}

# start_apiserver_bridge lets pods reach the API server at $APISERVER_BRIDGE_ADDR on the
# pod bridge, as they would through the kubernetes Service where a service proxy runs.
start_apiserver_bridge() {
	start apiserver-bridge -- "$E2E_CACHE/bin/tools/apiserver-bridge" -listen "$APISERVER_BRIDGE_ADDR" -to 127.0.0.1:6443
	wait_for "the apiserver on the pod bridge" 30 curl -fsS --noproxy '*' --cacert "$E2E_STATE/pki/ca.crt" \
		"https://$APISERVER_BRIDGE_ADDR/readyz"
}

# restart_apiserver stops the kube-apiserver and starts it again: every watch and log
# stream through it breaks, as in an upgrade or a crash.
restart_apiserver() {
	stop kube-apiserver
	start_apiserver
}

start_control_plane() {
	local pki=$E2E_STATE/pki
	log "starting etcd and the control plane"
	start etcd -- "$BIN_K8S/etcd" -data-dir "$E2E_STATE/run/etcd" -listen 127.0.0.1:2379 -peer 127.0.0.1:2380
	wait_for etcd 30 curl -fsS http://127.0.0.1:2379/health
	start_apiserver
	start_apiserver_bridge
	start kube-controller-manager -- "$BIN_K8S/kube-controller-manager" --kubeconfig="$pki/kcm.kubeconfig" \
		--authentication-kubeconfig="$pki/kcm.kubeconfig" --authorization-kubeconfig="$pki/kcm.kubeconfig" \
		--bind-address=127.0.0.1 --leader-elect=false --service-account-private-key-file="$pki/sa.key" \
		--root-ca-file="$pki/ca.crt" --use-service-account-credentials=true \
		--cluster-signing-cert-file="$pki/ca.crt" --cluster-signing-key-file="$pki/ca.key" --profiling=false \
		--flex-volume-plugin-dir="$E2E_STATE/run/kcm-volume-plugins"
	start kube-scheduler -- "$BIN_K8S/kube-scheduler" --kubeconfig="$pki/scheduler.kubeconfig" \
		--authentication-kubeconfig="$pki/scheduler.kubeconfig" --authorization-kubeconfig="$pki/scheduler.kubeconfig" \
		--bind-address=127.0.0.1 --leader-elect=false --profiling=false
}

CTR() { "$BIN_CONTAINERD/ctr" --address "$E2E_STATE/run/containerd/containerd.sock" -n k8s.io "$@"; }

# import_image TAR imports an image tarball into the node's containerd. ctr repeats
# containerd's deprecation warnings (cgroup v1) on stderr: they are in containerd's log,
# and shown here only when the import fails.
import_image() {
	local out
	out=$(CTR images import --no-unpack=false "$1" 2>&1) || die "importing $1: $out"
}

start_containerd() {
	# Its runc shim is found on PATH, before any other containerd's.
	start containerd "${CONTAINERD_PROXY_ENV[@]}" PATH="$BIN_CONTAINERD:$PATH" -- "$BIN_CONTAINERD/containerd" \
		--config "$E2E_STATE/conf/containerd.toml"
	wait_for containerd 30 CTR version
}

start_kubelet() {
	start kubelet -- "$BIN_K8S/kubelet" --config="$E2E_STATE/conf/kubelet.yaml" \
		--kubeconfig="$E2E_STATE/pki/kubelet.kubeconfig" --hostname-override="$NODE_NAME" --node-ip="$NODE_IP" \
		--root-dir="$E2E_STATE/run/kubelet" --cert-dir="$E2E_STATE/run/kubelet/pki" \
		--volume-plugin-dir="$E2E_STATE/run/kubelet-volume-plugins"
	wait_for "the node" 120 KUBECTL wait --for=condition=Ready "node/$NODE_NAME" --timeout=2s
}

start_node() {
	log "starting containerd and importing images"
	start_containerd
	local tar
	for tar in "$E2E_CACHE"/images/*.tar "$REPO_ROOT"/bin/images/*.tar; do
		[ -f "$tar" ] || continue
		import_image "$tar"
	done
	save_sysctls
	log "starting the kubelet"
	start_kubelet
}

# restart_kubelet stops the kubelet and starts it again; the pods' containers run on.
restart_kubelet() {
	stop kubelet
	start_kubelet
}

# restart_containerd stops containerd and starts it again; the containers run on in
# their shims, and the kubelet reconnects.
restart_containerd() {
	stop containerd
	start_containerd
	wait_for "the node" 120 KUBECTL wait --for=condition=Ready "node/$NODE_NAME" --timeout=2s
}

TEKTON_ENV=(SYSTEM_NAMESPACE=tekton-pipelines KUBERNETES_MIN_VERSION=v1.28.0 CONFIG_DEFAULTS_NAME=config-defaults
	CONFIG_LOGGING_NAME=config-logging CONFIG_OBSERVABILITY_NAME=config-observability CONFIG_FEATURE_FLAGS_NAME=feature-flags
	CONFIG_SPIRE=config-spire METRICS_DOMAIN=tekton.dev/pipeline)

start_tekton() {
	log "installing Tekton $TEKTON_VERSION with its webhook"
	local cfg=$TEKTON_SRC/config f
	KUBECTL apply -f "$cfg/100-namespace/100-namespace.yaml" >/dev/null
	# Everything but the Deployments, Services and HPA, which this harness replaces by
	# local processes and a selector-less Service.
	for f in "$cfg"/*.yaml; do
		case $(basename "$f") in controller.yaml | webhook.yaml | webhook-hpa.yaml | events.yaml | 500-webhooks.yaml) continue ;; esac
		KUBECTL apply --server-side -f "$f" >/dev/null || die "applying $f"
	done
	KUBECTL apply --server-side -f "$cfg/300-crds" >/dev/null || die "applying Tekton's CRDs"
	# Tekton's init containers with security contexts that Pod Security "restricted"
	# admits, so that a namespace enforcing it can run tasks of a non-root run.user.
	# No sidecar is injected into this cluster's pods, and our Tasks have none: a step
	# starts at once, not after the controller marks its pod ready and the kubelet writes
	# that mark into the pod (Tekton's advice for such clusters; seconds a pod here).
	# One node: no affinity assistant is needed to keep a build's pods on one, and none
	# runs (a quarter of the pods of the e2e suites were assistants).
	KUBECTL patch configmap feature-flags -n tekton-pipelines --type merge \
		-p '{"data":{"set-security-context":"true","running-in-environment-with-injected-sidecars":"false","coschedule":"disabled"}}' >/dev/null ||
		die "setting Tekton's feature flags"
	# The webhook logs each admission and conversion request it serves at info, a dump of
	# the whole HTTP request: tens of thousands in a run of the e2e suites, on the same
	# two processors as the builds, and none a failure needs (the apiserver hands the
	# webhook's refusals to its client).
	KUBECTL patch configmap config-logging -n tekton-pipelines --type merge \
		-p '{"data":{"loglevel.tekton-pipelines-webhook":"warn"}}' >/dev/null || die "setting the Tekton webhook's log level"
	KUBECTL apply -f - >/dev/null <<YAML || die "creating the webhook's Service"
apiVersion: v1
kind: Service
metadata: {name: tekton-pipelines-webhook, namespace: tekton-pipelines}
spec:
  ports: [{name: https-webhook, port: 443, targetPort: 8443}]
---
apiVersion: v1
kind: Endpoints
metadata: {name: tekton-pipelines-webhook, namespace: tekton-pipelines}
subsets:
- addresses: [{ip: $NODE_IP}]
  ports: [{name: https-webhook, port: 8443}]
YAML
	# Only now the webhook configurations: from here on the apiserver calls the webhook
	# for Tekton's objects and ConfigMaps, which must all exist already.
	KUBECTL apply -f "$cfg/500-webhooks.yaml" >/dev/null || die "applying Tekton's webhook configurations"
	start tekton-webhook "${DEAD_PROXY_ENV[@]}" "${TEKTON_ENV[@]}" WEBHOOK_PORT=8443 \
		WEBHOOK_SERVICE_NAME=tekton-pipelines-webhook WEBHOOK_SECRET_NAME=webhook-certs \
		WEBHOOK_ADMISSION_CONTROLLER_NAME=webhook.pipeline.tekton.dev \
		CONFIG_LEADERELECTION_NAME=config-leader-election-webhook PROBES_PORT=18081 PROFILING_PORT=18009 -- \
		"$BIN_TEKTON/webhook" -kubeconfig="$E2E_STATE/pki/admin.kubeconfig" -disable-ha
	# The webhook mints its certificate and injects its CA into the webhook
	# configurations and the CRDs; wait until the apiserver can call it.
	wait_for "the Tekton webhook" 120 tekton_webhook_ready
	# The controller's client allows twice what it is given (50/100 -> 100/s, bursts of
	# 200): at Tekton's default, 20/s, it is what makes a cluster with a few hundred
	# builds at once slow, which Tekton's own scaling advice says to raise.
	start tekton-controller "${DEAD_PROXY_ENV[@]}" "${TEKTON_ENV[@]}" \
		CONFIG_LEADERELECTION_NAME=config-leader-election-controller PROBES_PORT=18080 PROFILING_PORT=18008 -- \
		"$BIN_TEKTON/controller" -kubeconfig="$E2E_STATE/pki/admin.kubeconfig" -disable-ha \
		-kube-api-qps=50 -kube-api-burst=100 \
		-entrypoint-image="$IMG_PREFIX/tekton/entrypoint:$TEKTON_VERSION" \
		-nop-image="$IMG_PREFIX/tekton/nop:$TEKTON_VERSION" \
		-workingdirinit-image="$IMG_PREFIX/tekton/workingdirinit:$TEKTON_VERSION" \
		-sidecarlogresults-image="$IMG_PREFIX/tekton/sidecarlogresults-not-built:$TEKTON_VERSION" \
		-shell-image="$IMG_PREFIX/tekton/shell:1.35" -shell-image-win=unused.invalid/pwsh:1
	wait_for "the Tekton controller" 60 curl -fsS http://127.0.0.1:18080/readiness
}

# tekton_webhook_ready succeeds once the apiserver validates a Task through the webhook.
tekton_webhook_ready() {
	KUBECTL create --dry-run=server -f - <<YAML
apiVersion: tekton.dev/v1
kind: Task
metadata: {name: probe, namespace: default}
spec:
  steps: [{name: probe, image: $IMG_BUSYBOX, script: "true"}]
YAML
}

CSI_DRIVER=labcsi.e2e.invalid

start_storage() {
	log "starting storage: labcsi + csi-provisioner (default class), local-path-provisioner"
	local run=$E2E_STATE/run
	start labcsi "${DEAD_PROXY_ENV[@]}" -- "$E2E_CACHE/bin/tools/labcsi" -name "$CSI_DRIVER" -node-id "$NODE_NAME" \
		-root "$run/labcsi/volumes" -csi-socket "$run/labcsi/csi.sock" -plugins-registry "$run/kubelet/plugins_registry"
	wait_for "labcsi" 30 test -S "$run/labcsi/csi.sock"
	start csi-provisioner "${DEAD_PROXY_ENV[@]}" -- "$BIN_ADDONS/csi-provisioner" --csi-address="$run/labcsi/csi.sock" \
		--kubeconfig="$E2E_STATE/pki/admin.kubeconfig" --leader-election=false --timeout=60s
	KUBECTL apply -f - >/dev/null <<YAML || die "creating the CSI driver and storage classes"
apiVersion: storage.k8s.io/v1
kind: CSIDriver
metadata: {name: $CSI_DRIVER}
spec:
  attachRequired: false
  podInfoOnMount: false
  fsGroupPolicy: File
  volumeLifecycleModes: [Persistent]
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: labcsi
  annotations: {storageclass.kubernetes.io/is-default-class: "true"}
provisioner: $CSI_DRIVER
reclaimPolicy: Delete
volumeBindingMode: Immediate
---
# A volume of this class is a file system of its claim's size (in memory), which a step
# fills as it would a disk: the fault matrix's full build volume.
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: labcsi-sized}
provisioner: $CSI_DRIVER
parameters: {enforceCapacity: "true"}
reclaimPolicy: Delete
volumeBindingMode: Immediate
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: local-path}
provisioner: rancher.io/local-path
reclaimPolicy: Delete
volumeBindingMode: WaitForFirstConsumer
---
apiVersion: v1
kind: Namespace
metadata: {name: local-path-storage}
YAML
	start_local_path
	wait_for "the CSI driver on the node" 60 sh -c "'$BIN_K8S/kubectl' --kubeconfig '$E2E_STATE/pki/admin.kubeconfig' get csinode '$NODE_NAME' -o jsonpath='{.spec.drivers[*].name}' | grep -q '$CSI_DRIVER'"
}

# start_local_path runs rancher's local-path-provisioner as a local process; its helper
# pods (which make and remove the volume directories) run the busybox image.
start_local_path() {
	local dir=$E2E_STATE/run/local-path
	mkdir -p "$dir"
	KUBECTL apply -f - >/dev/null <<YAML || die "configuring local-path-provisioner"
apiVersion: v1
kind: ServiceAccount
metadata: {name: local-path-provisioner-service-account, namespace: local-path-storage}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: local-path-config, namespace: local-path-storage}
data:
  config.json: |-
    {"nodePathMap": [{"node": "DEFAULT_PATH_FOR_NON_LISTED_NODES", "paths": ["$dir"]}]}
  setup: |-
    #!/bin/sh
    set -eu
    mkdir -m 0777 -p "\$VOL_DIR"
  teardown: |-
    #!/bin/sh
    set -eu
    rm -rf "\$VOL_DIR"
  helperPod.yaml: |-
    apiVersion: v1
    kind: Pod
    metadata:
      name: helper-pod
    spec:
      priorityClassName: system-node-critical
      containers:
      - name: helper-pod
        image: $IMG_BUSYBOX
        imagePullPolicy: IfNotPresent
YAML
	start local-path-provisioner "${DEAD_PROXY_ENV[@]}" -- "$BIN_ADDONS/local-path-provisioner" --debug start \
		--kubeconfig "$E2E_STATE/pki/admin.kubeconfig" --namespace local-path-storage \
		--helper-image "$IMG_BUSYBOX" --configmap-name local-path-config \
		--service-account-name local-path-provisioner-service-account
}
