# Tearing the e2e cluster down, leaving the machine as it was. Sourced by cluster.sh;
# cluster_down is the entry point. Every step tolerates a half-started cluster, so the
# same function serves a normal teardown and the cleanup after a failed up.

# ours PID: true if PID is a live daemon of this harness: a binary we built (containerd
# and its shims among them), or a Debian containerd on our socket (a cluster that earlier
# harnesses started). Guards against PID reuse and never matches a shell that merely
# mentions our paths.
ours() {
	local exe cmd
	exe=$(readlink "/proc/$1/exe" 2>/dev/null) || return 1
	case $exe in "$E2E_CACHE"/bin/*) return 0 ;; esac
	case $exe in
	/usr/bin/containerd*)
		cmd=$(tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null) || return 1
		case $cmd in *"$E2E_STATE"*) return 0 ;; esac
		;;
	esac
	return 1
}

# stop NAME...: SIGTERM the daemons by their recorded PIDs, all at once, and SIGKILL
# those still running after STOP_GRACE seconds (default 10).
stop() {
	local n pid pids=() i
	for n in "$@"; do
		[ -f "$E2E_STATE/pids/$n.pid" ] || continue
		pid=$(cat "$E2E_STATE/pids/$n.pid")
		rm -f "$E2E_STATE/pids/$n.pid"
		ours "$pid" || continue
		kill -TERM "$pid" 2>/dev/null || true
		pids+=("$pid:$n")
	done
	for i in $(seq 1 $((${STOP_GRACE:-10} * 4))); do
		local alive=0 p
		for p in "${pids[@]}"; do ours "${p%%:*}" && alive=1; done
		[ $alive = 0 ] && return 0
		sleep 0.25
	done
	for p in "${pids[@]}"; do
		if ours "${p%%:*}"; then
			log "${p#*:} (pid ${p%%:*}) still running ${STOP_GRACE:-10}s after SIGTERM; killing it"
			kill -KILL "${p%%:*}" 2>/dev/null || true
		fi
	done
	sleep 0.2
}

# drain deletes the workloads through the API, so that the kubelet stops the pods'
# sandboxes itself: that tears down their network namespaces and volume mounts cleanly.
drain() {
	[ -x "$BIN_K8S/kubectl" ] && [ -f "$E2E_STATE/pki/admin.kubeconfig" ] || return 0
	[ -f "$E2E_STATE/pids/kubelet.pid" ] && ours "$(cat "$E2E_STATE/pids/kubelet.pid")" || return 0
	KUBECTL get --raw /readyz >/dev/null 2>&1 || return 0
	log "deleting pods so the kubelet tears them down"
	# First the controllers, so that nothing recreates the pods we delete (Tekton's
	# affinity assistants are StatefulSets; local-path runs helper pods).
	# Tekton's webhook drains connections for longer than we care to wait; it keeps no state.
	STOP_GRACE=2 stop tekton-webhook
	stop tekton-controller local-path-provisioner csi-provisioner kube-controller-manager kube-scheduler
	KUBECTL delete pods --all -A --grace-period=1 --wait=false >/dev/null 2>&1 || true
	local deadline=$((SECONDS + 90))
	while [ -n "$(KUBECTL get pods -A -o name 2>/dev/null)" ]; do
		if [ $SECONDS -ge $deadline ]; then
			log "pods still present after 90s; cleaning up by force"
			break
		fi
		sleep 1
	done
}

# kill_containers ends whatever still runs in the pods' cgroups, and our shims.
kill_containers() {
	local f pid p
	for f in $(find /sys/fs/cgroup -path '*/kubepods*' -name cgroup.procs 2>/dev/null); do
		for pid in $(cat "$f" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null || true; done
	done
	for p in /proc/[0-9]*; do
		pid=${p#/proc/}
		grep -qa "$E2E_STATE/run/containerd" "$p/cmdline" 2>/dev/null && kill -KILL "$pid" 2>/dev/null || true
	done
	sleep 0.3
}

unmount_all() {
	local m i
	for i in 1 2 3; do
		# Deepest first; mountinfo escapes spaces as \040.
		local mounts
		mounts=$(awk -v s="$E2E_STATE/" 'index($5, s) == 1 {print $5}' /proc/self/mountinfo | sort -r)
		[ -n "$mounts" ] || return 0
		for m in $mounts; do umount "$(printf '%b' "$m")" 2>/dev/null || umount -l "$(printf '%b' "$m")" 2>/dev/null || true; done
	done
}

remove_cgroups() {
	local d
	for d in /sys/fs/cgroup/*/kubepods /sys/fs/cgroup/kubepods /sys/fs/cgroup/*/k8s.io /sys/fs/cgroup/k8s.io; do
		[ -d "$d" ] || continue
		grep -qx "cgroup $d" "$E2E_CACHE/baseline.txt" 2>/dev/null && continue
		find "$d" -depth -type d -exec rmdir {} \; 2>/dev/null || true
	done
}

remove_netns() {
	local ns
	for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep '^cni-' || true); do
		grep -qx "netns $ns" "$E2E_CACHE/baseline.txt" 2>/dev/null && continue
		ip netns delete "$ns" 2>/dev/null || true
	done
}

restore_sysctls() {
	local f=$E2E_STATE/sysctl.orig line
	[ -f "$f" ] || return 0
	while read -r line; do sysctl -q -w "$line" >/dev/null || log "could not restore $line"; done <"$f"
	rm -f "$f"
}

# remove_host_leftovers removes what the kubelet and CNI leave outside the state
# directory: container log links, and directories that did not exist before up.
remove_host_leftovers() {
	local l d
	for l in /var/log/containers/*; do
		[ -L "$l" ] && case $(readlink "$l") in "$E2E_STATE"/*) rm -f "$l" ;; esac
	done
	# containerd puts its shims' sockets in /run/containerd/s whatever its config says; a
	# shim killed with its containers (a run that left many pods) leaves its socket there.
	for d in /var/log/containers /var/lib/cni /run/containerd /usr/libexec/kubernetes; do
		grep -qx "path $d" "$E2E_CACHE/baseline.txt" 2>/dev/null && continue
		if [ "$d" = /run/containerd ] && [ -d "$d/s" ]; then find "$d/s" -type s -delete 2>/dev/null || true; fi
		[ -d "$d" ] && find "$d" -depth -type d -empty -delete 2>/dev/null || true
	done
}

cluster_down() {
	[ -d "$E2E_STATE" ] || { log "no cluster state at $E2E_STATE: nothing to tear down"; return 0; }
	log "tearing the cluster down"
	drain
	stop local-path-provisioner csi-provisioner tekton-controller tekton-webhook kubelet labcsi
	kill_containers
	stop containerd
	kill_containers
	stop kube-scheduler kube-controller-manager kube-apiserver
	stop etcd registry private-registry
	# Anything of ours not recorded (a crash between start and the PID file).
	local p pid
	for p in /proc/[0-9]*; do
		pid=${p#/proc/}
		ours "$pid" && kill -KILL "$pid" 2>/dev/null || true
	done
	unmount_all
	remove_netns
	remove_cgroups
	ip link delete "$POD_BRIDGE" 2>/dev/null || true
	ip link delete "$NODE_BRIDGE" 2>/dev/null || true
	ip route del blackhole "$SERVICE_CIDR" 2>/dev/null || true
	restore_sysctls
	remove_host_leftovers
	# Keep the logs of the last cluster for a post-mortem; drop everything else.
	rm -rf "$E2E_CACHE/last-logs" && { [ -d "$E2E_STATE/logs" ] && mv "$E2E_STATE/logs" "$E2E_CACHE/last-logs" || true; }
	rm -rf --one-file-system "$E2E_STATE"
	log "down (logs of this cluster: $E2E_CACHE/last-logs)"
}
