// Package e2eenv is what the atc module's end-to-end suites read of their environment:
// the cache the builds and the cluster keep theirs in, the cluster's kubeconfig, and the
// images the builds run.
package e2eenv

import (
	"os"
	"path/filepath"
)

// Or is the variable name's value, else def.
func Or(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// CacheDir is $XDG_CACHE_HOME, else ~/.cache: where build.sh and the cluster keep theirs.
func CacheDir() string {
	if c := os.Getenv("XDG_CACHE_HOME"); c != "" {
		return c
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache")
}

// Kubeconfig is E2E_KUBECONFIG, else the main module's e2e cluster's.
func Kubeconfig() string {
	return Or("E2E_KUBECONFIG", filepath.Join(CacheDir(), "concourse-tekton", "state", "kubeconfig"))
}

// ATCCache is where build.sh keeps the web node and fly ($CONCOURSE_TEKTON_ATC_CACHE).
func ATCCache() string {
	return Or("CONCOURSE_TEKTON_ATC_CACHE", filepath.Join(CacheDir(), "concourse-tekton", "atc"))
}

// Images the builds run; the main module's e2e cluster has them loaded.
var (
	BusyboxImage = Or("E2E_BUSYBOX_IMAGE", "e2e.invalid/busybox:1.35")
	RunnerImage  = Or("E2E_RUNNER_IMAGE", "ghcr.io/concourse-tekton/runner:dev")
	MockImage    = Or("E2E_MOCK_IMAGE", "e2e.invalid/mock-resource:v1")
	ProbeImage   = Or("E2E_PROBE_IMAGE", "e2e.invalid/probe:v1")
)
