#!/usr/bin/env bash
# helm.sh prints the path of helm, built once from the Go module proxy into the cache
# (helm.sh/helm/v4 at the version below: a couple of minutes the first time). HELM=path
# names another helm, which is used as it is.
set -euo pipefail

HELM_VERSION=v4.3.2

if [ -n "${HELM:-}" ]; then
	echo "$HELM"
	exit 0
fi
cache=${CONCOURSE_TEKTON_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/concourse-tekton}/tools/helm-$HELM_VERSION
if [ ! -x "$cache/helm" ]; then
	mkdir -p "$(dirname "$cache")"
	tmp=$(mktemp -d "$cache.XXXXXX")
	trap 'rm -rf "$tmp"' EXIT
	echo "building helm $HELM_VERSION into $cache" >&2
	(cd "$tmp" && GOWORK=off GOFLAGS= CGO_ENABLED=0 GOBIN="$tmp/bin" \
		"${GO:-go}" install -trimpath -ldflags "-s -w -X helm.sh/helm/v4/internal/version.version=$HELM_VERSION" \
		"helm.sh/helm/v4/cmd/helm@$HELM_VERSION") >&2
	mkdir -p "$cache"
	mv "$tmp/bin/helm" "$cache/helm.new" && mv "$cache/helm.new" "$cache/helm"
fi
echo "$cache/helm"
