# What the machine looks like to the harness, to prove teardown leaves nothing behind.
# Sourced by cluster.sh.

# snapshot prints, one fact per line, everything up/down may change on the host.
snapshot() {
	ip -o link show | awk -F': ' '{sub(/@.*/, "", $2); print "link " $2}'
	ip route show table all | sed 's/^/route /'
	awk '{print "mount " $5}' /proc/self/mountinfo
	ip netns list 2>/dev/null | awk '{print "netns " $1}'
	local s
	for s in $KUBELET_SYSCTLS; do echo "sysctl $s=$(sysctl -n "$s")"; done
	local d
	for d in /sys/fs/cgroup/*/kubepods /sys/fs/cgroup/kubepods /sys/fs/cgroup/*/k8s.io /sys/fs/cgroup/k8s.io; do
		[ -d "$d" ] && echo "cgroup $d"
	done
	for d in /var/log/containers /var/lib/cni /run/containerd /usr/libexec/kubernetes; do
		[ -e "$d" ] && echo "path $d"
	done
	local p
	for p in /proc/[0-9]*; do
		ours "${p#/proc/}" 2>/dev/null && echo "process ${p#/proc/} $(tr '\0' ' ' <"$p/cmdline" | cut -c1-120)"
	done
	true
}

save_baseline() {
	mkdir -p "$E2E_CACHE"
	snapshot | sort >"$E2E_CACHE/baseline.txt.tmp" && mv "$E2E_CACHE/baseline.txt.tmp" "$E2E_CACHE/baseline.txt"
}

# check_clean fails, saying what differs, unless the machine is as the last up found it.
check_clean() {
	[ -f "$E2E_CACHE/baseline.txt" ] || die "no baseline: run up (and down) first"
	if [ -d "$E2E_STATE" ]; then die "cluster state still at $E2E_STATE: run down first"; fi
	local diff
	diff=$(diff <(grep -v '^process ' "$E2E_CACHE/baseline.txt") <(snapshot | grep -v '^process ' | sort)) || true
	local procs
	procs=$(snapshot | grep '^process ' || true)
	if [ -n "$diff" ] || [ -n "$procs" ]; then
		printf '%s\n' "$diff" "$procs" >&2
		die "the machine differs from before up (< before, > now)"
	fi
	log "clean: links, routes, mounts, netns, sysctls, cgroups and processes are as before up"
}
