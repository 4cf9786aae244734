// Package e2e drives the web node the way a user does: the real fly 8.2.5 (and headless Chromium, for the web UI) against
// concourse-tekton-web (both built by build.sh, started by web.sh with a database of
// its own), whose builds run as PipelineRuns on a real Kubernetes cluster with Tekton (the
// main module's e2e cluster, or E2E_KUBECONFIG's), each test run in a namespace of its
// own. The tests are built only with the e2e build tag: make -C atc e2e.
//
// Most tests run in parallel (four at a time: make's E2E_PARALLEL), each with pipelines
// of its own; go test runs first, one at a time, those that change what the others
// rely on: the web node restarted (TestRestartLosesNoEvent), the untagged target landed
// (TestLandWorker), the helpers pointed at another web node (TestCheckSavesEveryVersion).
package e2e
