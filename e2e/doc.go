// Package e2e holds the end-to-end tests: they run against a real Kubernetes cluster
// with Tekton installed (the one e2e/cluster starts, or E2E_KUBECONFIG's) and are built
// only with the e2e build tag, so that plain `go test ./...` stays hermetic.
package e2e
