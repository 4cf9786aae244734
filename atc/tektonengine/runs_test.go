package tektonengine

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/concourse/concourse/atc"
	"github.com/concourse/concourse/atc/db"
	"github.com/concourse/concourse/atc/db/dbfakes"
	tektonfake "github.com/tektoncd/pipeline/pkg/client/clientset/versioned/fake"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/concourse-tekton/concourse-tekton/tektonrun"
	"github.com/concourse-tekton/concourse-tekton/translate"
)

// newRuns is the Runs of a real backend on fake clientsets.
func newRuns(t *testing.T) (Runs, *tektonfake.Clientset) {
	runs, tekton, _ := newRunsWithKube(t)
	return runs, tekton
}

// newRunsWithKube is newRuns, with its Kubernetes clientset.
func newRunsWithKube(t *testing.T) (Runs, *tektonfake.Clientset, *fake.Clientset) {
	t.Helper()
	tekton := tektonfake.NewSimpleClientset()
	// The fake apiserver gives objects no UID; owner references need one.
	tekton.PrependReactor("create", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if o, ok := a.(k8stesting.CreateAction).GetObject().(metav1.Object); ok && o.GetUID() == "" {
			o.SetUID(types.UID("uid-" + o.GetName()))
		}
		return false, nil, nil
	})
	kube := fake.NewClientset()
	b := tektonrun.NewBackend(tektonrun.NewTargetFromClients("ci", kube, tekton), translate.Options{})
	t.Cleanup(b.Close)
	return NewRuns(b, nil), tekton, kube
}

// knownBuilds is the ATC's builds, by ID: those it has.
type knownBuilds map[int]bool

func (k knownBuilds) Build(id int) (db.Build, bool, error) {
	if !k[id] {
		return nil, false, nil
	}
	return new(dbfakes.FakeBuild), true, nil
}

// A run named after a build, of a build the ATC no longer has (its pipeline destroyed and
// set again, so that its builds are numbered from 1 again), gives way: it is deleted and
// the new build gets a run of its own. One of a build the ATC has is refused.
func TestStartReplacesTheRunOfABuildThatIsGone(t *testing.T) {
	_, tekton, kube := newRunsWithKube(t)
	b := tektonrun.NewBackend(tektonrun.NewTargetFromClients("ci", kube, tekton), translate.Options{})
	t.Cleanup(b.Close)
	builds := knownBuilds{7: true, 9: true}
	runs := NewRuns(b, builds)
	ctx := context.Background()
	plan, err := json.Marshal(taskPlan)
	if err != nil {
		t.Fatal(err)
	}
	meta := tektonrun.BuildMeta{Team: "main", Pipeline: "app", Job: "unit", Build: "1"}
	if _, err := runs.Start(ctx, plan, BuildRef{Meta: meta, ID: 7}); err != nil {
		t.Fatal(err)
	}
	if _, err := runs.Start(ctx, plan, BuildRef{Meta: meta, ID: 9}); err == nil || !strings.Contains(err.Error(), "runs build 7 of the ATC, not this build (9)") {
		t.Errorf("the run of build 7, which the ATC has, taken by build 9: %v; want it refused", err)
	}

	// Build 7's volume, marked to be told from the new run's.
	claims := kube.CoreV1().PersistentVolumeClaims("ci")
	mark := []byte(`{"metadata":{"annotations":{"test.example.com/of":"build-7"}}}`)
	if _, err := claims.Patch(ctx, "app-unit-1-build", types.MergePatchType, mark, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}

	delete(builds, 7)
	run, err := runs.Start(ctx, plan, BuildRef{Meta: meta, ID: 9})
	if err != nil {
		t.Fatalf("the run of build 7, which the ATC no longer has: %v; want it replaced", err)
	}
	if run.Attached() {
		t.Error("build 9 attached to build 7's run")
	}
	pr, err := tekton.TektonV1().PipelineRuns("ci").Get(ctx, "app-unit-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := pr.Annotations[AnnotationBuildID]; got != "9" {
		t.Errorf("the run is build %s's, want 9's", got)
	}
	// The new run has a volume of its own: build 7's went with its run, not left to be
	// taken for build 9's.
	c, err := claims.Get(ctx, "app-unit-1-build", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Annotations["test.example.com/of"] != "" {
		t.Error("build 9's run took build 7's volume")
	}
}

func TestStartClaimsTheRun(t *testing.T) {
	runs, tekton := newRuns(t)
	ctx := context.Background()
	// The plan as the ATC encodes it: the run is compiled from its JSON.
	plan, err := json.Marshal(taskPlan)
	if err != nil {
		t.Fatal(err)
	}
	meta := tektonrun.BuildMeta{Team: "main", Pipeline: "app", Job: "unit", Build: "3"}
	ref := BuildRef{Meta: meta, ID: 7}

	run, err := runs.Start(ctx, plan, ref)
	if err != nil {
		t.Fatal(err)
	}
	if run.Name() != "ci/app-unit-3" || run.Attached() {
		t.Errorf("run %s, attached %t; want ci/app-unit-3, started", run.Name(), run.Attached())
	}
	pr, err := tekton.TektonV1().PipelineRuns("ci").Get(ctx, "app-unit-3", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := pr.Annotations[AnnotationBuildID]; got != "7" {
		t.Errorf("annotation %s = %q, want 7", AnnotationBuildID, got)
	}

	// A web node that restarts starts the build again: the same run.
	again, err := runs.Start(ctx, plan, ref)
	if err != nil {
		t.Fatalf("starting the build again: %v", err)
	}
	if !again.Attached() {
		t.Error("starting the build again did not attach to its run")
	}

	// Another build of the same names (its pipeline destroyed and set again, say): not
	// its run.
	_, err = runs.Start(ctx, plan, BuildRef{Meta: meta, ID: 9})
	if err == nil || !strings.Contains(err.Error(), "runs build 7 of the ATC, not this build (9)") || !strings.Contains(err.Error(), "kubectl -n ci delete pipelinerun app-unit-3") {
		t.Errorf("another build of the same names: %v; want it refused, saying how to fix it", err)
	}
}

func TestStartRefusesAnOlderUnclaimedRun(t *testing.T) {
	runs, tekton := newRuns(t)
	ctx := context.Background()
	plan, _ := json.Marshal(atc.Plan{ID: "1", Task: taskPlan.Task})
	meta := tektonrun.BuildMeta{Team: "main", Pipeline: "app", Job: "unit", Build: "1"}
	if _, err := runs.Start(ctx, plan, BuildRef{Meta: meta, ID: 1}); err != nil {
		t.Fatal(err)
	}
	// A run of the same names that no ATC build claimed (`concourse-tekton run` made it,
	// or its web node stopped before claiming it), created a day before the build.
	prs := tekton.TektonV1().PipelineRuns("ci")
	pr, err := prs.Get(ctx, "app-unit-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	delete(pr.Annotations, AnnotationBuildID)
	pr.CreationTimestamp = metav1.NewTime(time.Unix(1_000_000, 0))
	if _, err := prs.Update(ctx, pr, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	_, err = runs.Start(ctx, plan, BuildRef{Meta: meta, ID: 2, Started: time.Unix(1_000_000+86400, 0)})
	if err == nil || !strings.Contains(err.Error(), "before the build started") {
		t.Errorf("an unclaimed run older than the build: %v; want it refused", err)
	}
	// Created about when the build started: the build's own, which a web node started
	// and stopped before claiming.
	if _, err := runs.Start(ctx, plan, BuildRef{Meta: meta, ID: 2, Started: time.Unix(1_000_000+30, 0)}); err != nil {
		t.Errorf("an unclaimed run created as the build started: %v", err)
	}
}
