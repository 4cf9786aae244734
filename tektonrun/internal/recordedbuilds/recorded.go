// Package recordedbuilds loads the builds recorded from a real cluster by
// tektonrun/buildevents/testdata/record.sh: a PipelineRun, its TaskRuns and pods, and its
// steps' logs as the API serves them. The mapper's tests map them; the follower's tests
// serve them from a cluster in memory.
package recordedbuilds

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/tektoncd/pipeline/pkg/apis/pipeline"
	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// Build is one recorded build.
type Build struct {
	Run *v1.PipelineRun
	// Steps are its PipelineTasks, by name.
	Steps map[string]*Step
}

// Step is one PipelineTask of a recorded build.
type Step struct {
	TaskRun *v1.TaskRun
	// Pod is the TaskRun's pod, nil when none was recorded.
	Pod *corev1.Pod
	// Log is the step container's log as the API serves it (kubectl logs --timestamps),
	// nil when none was recorded.
	Log []byte
}

// Load reads the build recorded in dir.
func Load(tb testing.TB, dir string) *Build {
	tb.Helper()
	var run v1.PipelineRun
	readYAML(tb, filepath.Join(dir, "pipelinerun.yaml"), &run)
	var trs struct{ Items []v1.TaskRun }
	readYAML(tb, filepath.Join(dir, "taskruns.yaml"), &trs)
	var pods struct{ Items []corev1.Pod }
	readYAML(tb, filepath.Join(dir, "pods.yaml"), &pods)
	b := &Build{Run: &run, Steps: map[string]*Step{}}
	for i := range trs.Items {
		tr := &trs.Items[i]
		name := tr.Labels[pipeline.PipelineTaskLabelKey]
		s := &Step{TaskRun: tr}
		for j := range pods.Items {
			if pods.Items[j].Name == tr.Status.PodName {
				s.Pod = &pods.Items[j]
			}
		}
		data, err := os.ReadFile(filepath.Join(dir, "logs", name+".log"))
		switch {
		case err == nil:
			s.Log = data
		case !errors.Is(err, fs.ErrNotExist):
			tb.Fatal(err)
		}
		b.Steps[name] = s
	}
	return b
}

// Cases are the directories of the builds recorded in testdata.
func Cases(tb testing.TB, testdata string) []string {
	tb.Helper()
	dirs, err := filepath.Glob(filepath.Join(testdata, "*", "pipelinerun.yaml"))
	if err != nil || len(dirs) == 0 {
		tb.Fatalf("no recorded builds in %s: %v", testdata, err)
	}
	for i, d := range dirs {
		dirs[i] = filepath.Dir(d)
	}
	return dirs
}

func readYAML(tb testing.TB, path string, v any) {
	tb.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	if err := yaml.Unmarshal(data, v); err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
}
