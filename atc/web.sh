#!/usr/bin/env bash
# web.sh up|down|status|deps: a Concourse web node (concourse-tekton-web) and its Postgres, as
# local processes on 127.0.0.1 with their state in the cache; never a system service.
#
#   up      builds (build.sh), starts Postgres and the web node, waits for the API,
#           logs fly in and waits (a minute at most) for a running worker: fly -t local
#           ... is then ready to use
#   down    stops what up started (web node, then Postgres); the state stays for next time
#   status  says what runs; exits 0 when both run, 1 otherwise
#   deps    installs Postgres 15's binaries when they are missing (root; Debian's
#           postgresql-15), with no database cluster or service of the package left running,
#           and the browser test's headless Chromium (Debian's chromium)
#
# Settings (environment):
#   CONCOURSE_TEKTON_WEB_PORT   the web node's port (8090); its debug server uses the next one
#   CONCOURSE_TEKTON_PG_PORT    Postgres's port (15432: below Linux's ephemeral ports, 32768 and
#                               up, one of which a client connection may hold as its own)
#   CONCOURSE_TEKTON_PG_BIN     Postgres 15's binaries (/usr/lib/postgresql/15/bin)
#   CONCOURSE_TEKTON_FLY_TARGET the fly target up logs in (local)
#   CONCOURSE_TEKTON_WEB_STATE  the directory of the database, logs and key (<cache>/web)
#   CONCOURSE_*                 any other flag of `concourse web`, read by the web node itself
#
# Builds run on Kubernetes when the web node is told where, by its --tekton-* flags or
# their variables, which it reads itself (without them, builds need Concourse workers):
#   CONCOURSE_TEKTON_KUBECONFIG      the cluster's kubeconfig
#   CONCOURSE_TEKTON_NAMESPACE       the namespace builds run in
#   CONCOURSE_TEKTON_RUNNER_IMAGE    the step runner's image
#   CONCOURSE_TEKTON_RESOURCE_IMAGE  base resource types' images: TYPE=IMAGE,TYPE=IMAGE
#   CONCOURSE_TEKTON_VOLUMES_DIR     where the web node keeps its copies of fly execute's
#                                    artifacts, which the database holds (<state>/volumes)
# (and CONCOURSE_TEKTON_CONTEXT, _IN_CLUSTER, _SERVICE_ACCOUNT, _STORAGE_CLASS,
# _BUILD_VOLUME_SIZE, _USER_NAMESPACES, _WORKER_NAME, _HEARTBEAT_INTERVAL).
# Arguments after `up --` are passed to the web node as flags.
set -euo pipefail

atc_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${CONCOURSE_TEKTON_ATC_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/concourse-tekton/atc}
state=${CONCOURSE_TEKTON_WEB_STATE:-$cache/web}
pgdata=$state/pgdata
web_port=${CONCOURSE_TEKTON_WEB_PORT:-8090}
debug_port=$((web_port + 1))
pg_port=${CONCOURSE_TEKTON_PG_PORT:-15432}
pg_bin=${CONCOURSE_TEKTON_PG_BIN:-/usr/lib/postgresql/15/bin}
target=${CONCOURSE_TEKTON_FLY_TARGET:-local}
url=http://127.0.0.1:$web_port
user=test

say() { printf '%s\n' "$*" >&2; }
fail() { say "error: $*"; exit 1; }

# as_pg runs a Postgres program. Postgres refuses to run as root: then it runs in a user
# namespace where this user is an unprivileged one, so the files it creates are still
# this user's, in a cache only this user can reach.
as_pg() {
	if [ "$(id -u)" = 0 ]; then
		unshare --user --map-user=1 --map-group=1 "$@"
	else
		"$@"
	fi
}

# alive: whether process $1 runs (a zombie, ended but not yet reaped, does not).
alive() {
	[ -n "${1:-}" ] && kill -0 "$1" 2>/dev/null || return 1
	local stat
	stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
	stat=${stat##*) }
	[ "${stat%% *}" != Z ]
}
web_pid() { cat "$state/web.pid" 2>/dev/null || true; }
pg_pid() { head -n1 "$pgdata/postmaster.pid" 2>/dev/null || true; }
port_taken() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
api_info() { curl -fsS --max-time 2 "$url/api/v1/info" 2>/dev/null; }

# wait_gone waits up to $2 seconds for process $1 to end; false if it does not.
wait_gone() {
	local i
	for ((i = 0; i < $2 * 10; i++)); do
		alive "$1" || return 0
		sleep 0.1
	done
	return 1
}

start_postgres() {
	if alive "$(pg_pid)"; then
		say "✓ Postgres already running (pid $(pg_pid), port $pg_port)"
		return
	fi
	[ -x "$pg_bin/postgres" ] ||
		fail "no Postgres 15 in $pg_bin: install Debian's postgresql-15 package (apt-get install postgresql-15), or set CONCOURSE_TEKTON_PG_BIN"
	port_taken "$pg_port" && fail "port $pg_port is taken by another program: set CONCOURSE_TEKTON_PG_PORT"
	mkdir -p "$state"
	if [ ! -e "$pgdata/PG_VERSION" ]; then
		say "• initdb $pgdata"
		rm -rf "$pgdata"
		as_pg "$pg_bin/initdb" -D "$pgdata" -U concourse --auth=trust -E UTF8 --no-instructions >"$state/initdb.log" 2>&1 ||
			fail "initdb failed: see $state/initdb.log"
	fi
	say "• starting Postgres on 127.0.0.1:$pg_port"
	as_pg "$pg_bin/pg_ctl" -D "$pgdata" -l "$state/postgres.log" -w -t 60 \
		-o "-c listen_addresses=127.0.0.1 -p $pg_port -c unix_socket_directories=''" start >/dev/null ||
		fail "Postgres did not start: see $state/postgres.log"
	local exists
	exists=$("$pg_bin/psql" -h 127.0.0.1 -p "$pg_port" -U concourse -d postgres -tAc \
		"SELECT 1 FROM pg_database WHERE datname = 'atc'")
	if [ "$exists" != 1 ]; then
		"$pg_bin/createdb" -h 127.0.0.1 -p "$pg_port" -U concourse atc
	fi
	say "✓ Postgres (pid $(pg_pid), port $pg_port)"
}

start_web() {
	local bin=$1
	shift
	if alive "$(web_pid)"; then
		say "✓ web node already running (pid $(web_pid), $url)"
		return
	fi
	port_taken "$web_port" && fail "port $web_port is taken by another program: set CONCOURSE_TEKTON_WEB_PORT"
	port_taken "$debug_port" && fail "port $debug_port (the debug server's) is taken by another program: set CONCOURSE_TEKTON_WEB_PORT"
	if [ ! -e "$state/session_signing_key" ]; then
		"$bin/concourse-tekton-web" generate-key -t rsa -f "$state/session_signing_key" >/dev/null
	fi
	say "• starting the web node on $url"
	setsid "$bin/concourse-tekton-web" web \
		--bind-ip 127.0.0.1 --bind-port "$web_port" --external-url "$url" \
		--debug-bind-ip 127.0.0.1 --debug-bind-port "$debug_port" \
		--postgres-host 127.0.0.1 --postgres-port "$pg_port" --postgres-sslmode disable \
		--postgres-user concourse --postgres-database atc \
		--session-signing-key "$state/session_signing_key" \
		--add-local-user "$user:$user" --main-team-local-user "$user" \
		--tekton-volumes-dir "${CONCOURSE_TEKTON_VOLUMES_DIR:-$state/volumes}" \
		"$@" </dev/null >>"$state/web.log" 2>&1 &
	echo $! >"$state/web.pid"

	local i
	for ((i = 0; i < 1200; i++)); do
		if ! alive "$(web_pid)"; then
			tail -n 20 "$state/web.log" >&2
			fail "the web node exited: see $state/web.log"
		fi
		api_info >/dev/null && break
		sleep 0.1
	done
	api_info >/dev/null || fail "the web node does not answer $url/api/v1/info after 120s: see $state/web.log"
	say "✓ web node (pid $(web_pid), $url): $(api_info)"
}

up() {
	if [ "${1:-}" = -- ]; then shift; fi
	local bin
	bin=$("$atc_dir/build.sh")
	start_postgres
	start_web "$bin" "$@"
	"$bin/fly" -t "$target" login -c "$url" -u "$user" -p "$user" >/dev/null ||
		fail "fly -t $target login failed"
	say "✓ fly -t $target is logged in as $user (fly is $bin/fly)"
	wait_for_a_worker "$bin/fly"
}

# wait_for_a_worker waits (a minute at most) until fly workers lists a running worker:
# the web node answers before it has saved its targets' workers, and until then a
# resource's check finds no base resource type to run on.
wait_for_a_worker() {
	local fly=$1 i
	for ((i = 0; i < 60; i++)); do
		if "$fly" -t "$target" workers --json 2>/dev/null | grep -q '"state": "running"'; then
			say "✓ a worker is running (fly -t $target workers)"
			return
		fi
		sleep 1
	done
	say "! no worker is running yet: see fly -t $target workers, and $state/web.log"
}

down() {
	local pid
	pid=$(web_pid)
	if alive "$pid"; then
		say "• stopping the web node (pid $pid)"
		kill -TERM "$pid"
		if ! wait_gone "$pid" 30; then
			say "• the web node ignored SIGTERM for 30s: killing it"
			kill -KILL "$pid" 2>/dev/null || true
			wait_gone "$pid" 5 || fail "pid $pid does not end"
		fi
	fi
	rm -f "$state/web.pid"

	pid=$(pg_pid)
	if alive "$pid"; then
		say "• stopping Postgres (pid $pid)"
		as_pg "$pg_bin/pg_ctl" -D "$pgdata" -m fast -w -t 60 stop >/dev/null ||
			fail "Postgres did not stop: see $state/postgres.log"
		wait_gone "$pid" 10 || fail "Postgres (pid $pid) does not end"
	fi
	say "✓ down (state kept in $state)"
}

status() {
	local ok=0 pid
	pid=$(pg_pid)
	if alive "$pid"; then
		say "✓ Postgres: pid $pid, 127.0.0.1:$pg_port"
	else
		say "✗ Postgres: not running"
		ok=1
	fi
	pid=$(web_pid)
	if alive "$pid"; then
		say "✓ web node: pid $pid, $url: $(api_info || echo 'not answering')"
	else
		say "✗ web node: not running"
		ok=1
	fi
	return $ok
}

# deps installs Debian's postgresql-15 for its binaries. The package makes a "main"
# cluster and starts it as a service: that one is stopped and dropped at once, since
# web.sh runs a Postgres of its own.
# apt_install PACKAGE: installs one Debian package (root).
apt_install() {
	[ "$(id -u)" = 0 ] || fail "install Debian's $1 (as root: $0 deps)"
	say "installing Debian's $1"
	if [ -z "${apt_updated:-}" ]; then
		apt-get update -q >/dev/null || fail "apt-get update failed"
		apt_updated=1
	fi
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$1" >/dev/null ||
		fail "apt-get install $1 failed"
}

deps() {
	if [ -x "$pg_bin/postgres" ]; then
		say "✓ Postgres 15 in $pg_bin"
	else
		apt_install postgresql-15
		if command -v pg_lsclusters >/dev/null && pg_lsclusters -h 2>/dev/null | grep -q '^15 main '; then
			pg_dropcluster --stop 15 main || fail "could not drop the package's own cluster (pg_dropcluster --stop 15 main)"
		fi
		[ -x "$pg_bin/postgres" ] || fail "postgresql-15 installed, but $pg_bin/postgres is missing"
	fi
	# The browser test's headless browser (e2e/browser_test.go).
	if command -v chromium >/dev/null; then
		say "✓ $(chromium --version 2>/dev/null || echo chromium)"
	else
		apt_install chromium
	fi
}

case "${1:-}" in
deps) deps ;;
up)
	shift
	up "$@"
	;;
down) down ;;
status) status ;;
*)
	say "usage: $0 up [-- web flags...] | down | status | deps"
	exit 2
	;;
esac
