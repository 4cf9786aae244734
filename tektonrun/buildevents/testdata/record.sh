#!/usr/bin/env bash
# Records a finished build's objects from a cluster into testdata/<case>/ for the mapper's
# tests: the PipelineRun, its TaskRuns and pods, and each step container's log with the
# API's timestamps. Then `go test ./tektonrun/buildevents -run TestRecorded -update` writes
# the expected events.
#
#   tektonrun/buildevents/testdata/record.sh NAMESPACE PIPELINERUN CASE
set -euo pipefail
ns=$1 run=$2 case=$3
dir=$(cd "$(dirname "$0")" && pwd)/$case
rm -rf "$dir" && mkdir -p "$dir/logs"
strip='del(.items[].metadata.managedFields)'
kubectl get pipelinerun -n "$ns" "$run" -o yaml >"$dir/pipelinerun.yaml"
kubectl get taskruns -n "$ns" -l "tekton.dev/pipelineRun=$run" -o yaml >"$dir/taskruns.yaml"
kubectl get pods -n "$ns" -l "tekton.dev/pipelineRun=$run" -o yaml >"$dir/pods.yaml"
for pod in $(kubectl get pods -n "$ns" -l "tekton.dev/pipelineRun=$run" -o name); do
	task=$(kubectl get -n "$ns" "$pod" -o jsonpath='{.metadata.labels.tekton\.dev/pipelineTask}')
	kubectl logs -n "$ns" "$pod" -c step-run --timestamps >"$dir/logs/$task.log" 2>/dev/null || true
done
# managedFields and the like are noise: drop them.
sed -i '/^    managedFields:/,/^    [a-z]/{/^    managedFields:/d;/^    - /d;/^      /d}' "$dir"/*.yaml
echo "recorded $run into $dir"
