package tektonengine

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/concourse/concourse/atc"
	"github.com/google/go-cmp/cmp"
	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	tektonfake "github.com/tektoncd/pipeline/pkg/client/clientset/versioned/fake"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/concourse-tekton/concourse-tekton/concourse/event"
	"github.com/concourse-tekton/concourse-tekton/internal/transient"
	"github.com/concourse-tekton/concourse-tekton/runspec"
	"github.com/concourse-tekton/concourse-tekton/tektonrun"
	"github.com/concourse-tekton/concourse-tekton/tektonrun/buildevents"
)

// poolWorker is a worker of a Pool on fake clients: running builds (PipelineRuns that
// have not ended), landing when landing, and the Runs that record its starts.
func poolWorker(name string, tags []string, running int, landing bool, objects ...runtime.Object) Worker {
	var kube []runtime.Object
	if landing {
		kube = append(kube, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: tektonrun.StateConfigMap, Namespace: name},
			Data: map[string]string{"state": string(tektonrun.StateLanding), "since": "2026-11-25T10:00:00Z"}})
	}
	for i := range running {
		objects = append(objects, &v1.PipelineRun{ObjectMeta: metav1.ObjectMeta{
			Name: name + "-busy-" + string(rune('a'+i)), Namespace: name,
			Labels: map[string]string{runspec.LabelManagedBy: runspec.ManagedBy},
		}})
	}
	target := tektonrun.NewTargetFromClients(name, fake.NewSimpleClientset(kube...), tektonfake.NewSimpleClientset(objects...))
	return Worker{Name: name, Tags: tags, Target: target, Runs: &fakeRuns{run: newRun("succeeded")}}
}

// started is the worker a build started on ("" none).
func started(p *Pool) string {
	for _, w := range p.Workers {
		if len(w.Runs.(*fakeRuns).refs) > 0 {
			return w.Name
		}
	}
	return ""
}

func TestPool(t *testing.T) {
	task := func(id atc.PlanID, tags ...string) atc.Plan {
		return atc.Plan{ID: id, Task: &atc.TaskPlan{Name: "t", Tags: tags, Config: &atc.TaskConfig{Platform: "linux", Run: atc.TaskRunConfig{Path: "true"}}}}
	}
	get := func(id atc.PlanID, tags ...string) atc.Plan {
		return atc.Plan{ID: id, Get: &atc.GetPlan{Name: "repo", Type: "git", Tags: tags, TypeImage: atc.TypeImage{BaseType: "git"}}}
	}
	do := func(steps ...atc.Plan) atc.Plan { return atc.Plan{ID: "0", Do: (*atc.DoPlan)(&steps)} }
	imageTask := task("1", "gpu")
	imageTask.Task.Config.ImageResource = &atc.ImageResource{Type: "registry-image", Source: atc.Source{"repository": "busybox"}}
	ref := BuildRef{Meta: tektonrun.BuildMeta{Pipeline: "app", Job: "unit", Build: "3"}, ID: 30, Started: time.Unix(1000, 0)}
	ours := &v1.PipelineRun{ObjectMeta: metav1.ObjectMeta{Name: "app-unit-3", Namespace: "c",
		Annotations: map[string]string{AnnotationBuildID: "30"}, CreationTimestamp: metav1.NewTime(time.Unix(1001, 0))}}
	another := ours.DeepCopy()
	another.Annotations[AnnotationBuildID] = "29"

	tests := []struct {
		name    string
		workers []Worker
		plan    atc.Plan
		want    string // the worker it starts on
		wantErr string
		errPlan atc.PlanID
	}{
		{
			name:    "untagged steps: a worker without tags",
			workers: []Worker{poolWorker("gpu", []string{"gpu"}, 0, false), poolWorker("a", nil, 0, false)},
			plan:    do(get("1"), task("2")),
			want:    "a",
		},
		{
			name:    "a tagged step: a worker with its tags",
			workers: []Worker{poolWorker("a", nil, 0, false), poolWorker("gpu", []string{"gpu", "big"}, 0, false)},
			plan:    do(task("1", "gpu")),
			want:    "gpu",
		},
		{
			name:    "tagged and untagged steps: the whole build where the tags are",
			workers: []Worker{poolWorker("a", nil, 0, false), poolWorker("gpu", []string{"gpu"}, 0, false)},
			plan:    do(get("1"), task("2", "gpu")),
			want:    "gpu",
		},
		{
			name:    "the fewest running builds",
			workers: []Worker{poolWorker("a", nil, 2, false), poolWorker("b", nil, 1, false), poolWorker("c", nil, 1, false)},
			plan:    do(task("1")),
			want:    "b",
		},
		{
			name:    "a landing worker takes none",
			workers: []Worker{poolWorker("a", nil, 0, true), poolWorker("b", nil, 3, false)},
			plan:    do(task("1")),
			want:    "b",
		},
		{
			name:    "the worker the build's run is on, after a restart",
			workers: []Worker{poolWorker("a", nil, 0, false), poolWorker("c", nil, 5, false, ours)},
			plan:    do(task("1")),
			want:    "c",
		},
		{
			name:    "a run of another build of that name is not the build's",
			workers: []Worker{poolWorker("c", nil, 5, false, another), poolWorker("a", nil, 0, false)},
			plan:    do(task("1")),
			want:    "a",
		},
		{
			name:    "no worker has the tag: Concourse's error at the step",
			workers: []Worker{poolWorker("a", nil, 0, false), poolWorker("gpu", []string{"gpu"}, 0, false)},
			plan:    do(get("1"), task("2", "arm")),
			wantErr: "no workers satisfying: platform 'linux', tag 'arm', version: '2.5'",
			errPlan: "2",
		},
		{
			name:    "the only worker is landing: the first step's error",
			workers: []Worker{poolWorker("a", nil, 0, true)},
			plan:    do(get("1"), task("2")),
			wantErr: "no workers satisfying: resource type 'git', version: '2.5'",
			errPlan: "1",
		},
		{
			name:    "a worker for each tag, none with both",
			workers: []Worker{poolWorker("x", []string{"x"}, 0, false), poolWorker("y", []string{"y"}, 0, false)},
			plan:    do(task("2", "y"), task("3", "x")),
			wantErr: "no workers satisfying: platform 'linux', tag 'x', tag 'y', version: '2.5'",
			errPlan: "2",
		},
		{
			name:    "a task's image_resource is checked first",
			workers: []Worker{poolWorker("a", nil, 0, false)},
			plan:    do(imageTask),
			wantErr: "no workers satisfying: resource type 'registry-image', tag 'gpu', version: '2.5'",
			errPlan: "1",
		},
		{
			name:    "a task of another platform",
			workers: []Worker{poolWorker("a", nil, 0, false)},
			plan: func() atc.Plan {
				p := task("1")
				p.Task.Config.Platform = "windows"
				return do(p)
			}(),
			wantErr: "no workers satisfying: platform 'windows', version: '2.5'",
			errPlan: "1",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pool := &Pool{Workers: tt.workers}
			plan, err := json.Marshal(tt.plan)
			if err != nil {
				t.Fatal(err)
			}
			_, err = pool.Start(context.Background(), plan, ref)
			var noWorkers *NoWorkersError
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("Start: %v", err)
			case tt.wantErr != "" && (!errors.As(err, &noWorkers) || err.Error() != tt.wantErr || noWorkers.PlanID != tt.errPlan):
				t.Fatalf("Start: %v (%+v), want %q at plan %s", err, noWorkers, tt.wantErr, tt.errPlan)
			}
			if got := started(pool); got != tt.want {
				t.Errorf("started on %q, want %q", got, tt.want)
			}
			if tt.want != "" {
				for _, w := range pool.Workers {
					if w.Name == tt.want {
						if diff := cmp.Diff([]BuildRef{ref}, w.Runs.(*fakeRuns).refs); diff != "" {
							t.Errorf("started (-want +got):\n%s", diff)
						}
					}
				}
			}
		})
	}
}

// TestPoolLandedSince: a worker that lands between its state being read and the start
// (the start says ErrNotRunning) gives the build to the next.
func TestPoolLandedSince(t *testing.T) {
	a, b := poolWorker("a", nil, 0, false), poolWorker("b", nil, 1, false)
	a.Runs = &fakeRuns{err: tektonrun.ErrNotRunning}
	pool := &Pool{Workers: []Worker{a, b}}
	plan, _ := json.Marshal(atc.Plan{ID: "1", Task: &atc.TaskPlan{Name: "t", Config: &atc.TaskConfig{Platform: "linux"}}})
	if _, err := pool.Start(context.Background(), plan, BuildRef{Meta: tektonrun.BuildMeta{Pipeline: "p", Job: "j", Build: "1"}, ID: 1}); err != nil {
		t.Fatal(err)
	}
	if len(b.Runs.(*fakeRuns).refs) != 1 {
		t.Errorf("b started %d builds, want 1", len(b.Runs.(*fakeRuns).refs))
	}
}

// TestPoolSelectedWorker: a build's steps show the worker they ran on, not its node.
func TestPoolSelectedWorker(t *testing.T) {
	w := poolWorker("tekton-gpu", []string{"gpu"}, 0, false)
	w.Runs = &fakeRuns{run: newRun(event.BuildStatusSucceeded,
		event.SelectedWorker{Time: 101, Origin: event.Origin{ID: "1"}, WorkerName: "labnode"},
		event.Log{Time: 102, Origin: event.Origin{ID: "1", Source: event.OriginSourceStdout}, Payload: "hi\n"})}
	pool := &Pool{Workers: []Worker{w}}
	plan, _ := json.Marshal(atc.Plan{ID: "1", Task: &atc.TaskPlan{Name: "t", Tags: atc.Tags{"gpu"}, Config: &atc.TaskConfig{Platform: "linux"}}})
	run, err := pool.Start(context.Background(), plan, BuildRef{Meta: tektonrun.BuildMeta{Pipeline: "p", Job: "j", Build: "1"}, ID: 1})
	if err != nil {
		t.Fatal(err)
	}
	var got []event.Event
	if _, err := run.Events(context.Background(), func(e buildevents.Event) error {
		got = append(got, e.Event)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	want := []event.Event{
		event.Status{Status: event.BuildStatusStarted, Time: 100},
		event.SelectedWorker{Time: 101, Origin: event.Origin{ID: "1"}, WorkerName: "tekton-gpu"},
		event.Log{Time: 102, Origin: event.Origin{ID: "1", Source: event.OriginSourceStdout}, Payload: "hi\n"},
		event.Status{Status: event.BuildStatusSucceeded, Time: 200},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// TestPoolOneCandidate: with one running worker to choose, its builds are not counted (no
// list of its PipelineRuns per build started); with two, they are.
func TestPoolOneCandidate(t *testing.T) {
	lists := func(w Worker) int {
		n := 0
		for _, a := range w.Target.Tekton.(*tektonfake.Clientset).Actions() {
			if a.GetVerb() == "list" {
				n++
			}
		}
		return n
	}
	plan, _ := json.Marshal(atc.Plan{ID: "1", Task: &atc.TaskPlan{Name: "t", Config: &atc.TaskConfig{Platform: "linux"}}})
	ref := BuildRef{Meta: tektonrun.BuildMeta{Pipeline: "p", Job: "j", Build: "1"}, ID: 1}
	one := poolWorker("a", nil, 0, false)
	if _, err := (&Pool{Workers: []Worker{one, poolWorker("gpu", []string{"gpu"}, 0, false)}}).Start(context.Background(), plan, ref); err != nil {
		t.Fatal(err)
	}
	if n := lists(one); n != 0 {
		t.Errorf("the one candidate: %d lists, want none", n)
	}
	a, b := poolWorker("a", nil, 0, false), poolWorker("b", nil, 0, false)
	if _, err := (&Pool{Workers: []Worker{a, b}}).Start(context.Background(), plan, ref); err != nil {
		t.Fatal(err)
	}
	if lists(a) != 1 || lists(b) != 1 {
		t.Errorf("two candidates: %d and %d lists, want one each", lists(a), lists(b))
	}
}

// TestPoolUnreadableTarget: a target whose state cannot be read is left out when another
// takes the build; alone, its error is the build's (the build is started again later),
// not Concourse's no workers.
func TestPoolUnreadableTarget(t *testing.T) {
	down := func(name string) Worker {
		w := poolWorker(name, nil, 0, false)
		w.Target.Kube.(*fake.Clientset).PrependReactor("get", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewServiceUnavailable("the apiserver restarts")
		})
		return w
	}
	plan, _ := json.Marshal(atc.Plan{ID: "1", Task: &atc.TaskPlan{Name: "t", Config: &atc.TaskConfig{Platform: "linux"}}})
	ref := BuildRef{Meta: tektonrun.BuildMeta{Pipeline: "p", Job: "j", Build: "1"}, ID: 1}
	pool := &Pool{Workers: []Worker{down("a"), poolWorker("b", nil, 3, false)}}
	if _, err := pool.Start(context.Background(), plan, ref); err != nil {
		t.Fatal(err)
	}
	if got := started(pool); got != "b" {
		t.Errorf("started on %q, want b", got)
	}
	_, err := (&Pool{Workers: []Worker{down("a")}}).Start(context.Background(), plan, ref)
	var noWorkers *NoWorkersError
	if err == nil || errors.As(err, &noWorkers) || !transient.Is(err) {
		t.Errorf("the only target unreadable: %v; want its error, transient", err)
	}
}

// TestPoolCheckedVersions: a check run on a worker of a Pool gives every version it found,
// not the latest alone.
func TestPoolCheckedVersions(t *testing.T) {
	w := poolWorker("a", nil, 0, false)
	found := []map[string]string{{"ref": "1"}, {"ref": "2"}, {"ref": "3"}}
	w.Runs = versionsRuns{fakeRuns: &fakeRuns{run: newRun(event.BuildStatusSucceeded)}, versions: found}
	plan, _ := json.Marshal(atc.Plan{ID: "1", Check: &atc.CheckPlan{Name: "repo", Type: "git", TypeImage: atc.TypeImage{BaseType: "git"}}})
	run, err := (&Pool{Workers: []Worker{w}}).Start(context.Background(), plan, BuildRef{Meta: tektonrun.BuildMeta{Pipeline: "p", Job: "check-repo", Build: "1"}, ID: 1})
	if err != nil {
		t.Fatal(err)
	}
	got, err := checkedVersions(context.Background(), run)
	if err != nil {
		t.Fatal(err)
	}
	if want := []atc.Version{{"ref": "1"}, {"ref": "2"}, {"ref": "3"}}; !cmp.Equal(want, got) {
		t.Errorf("versions %v, want %v", got, want)
	}
}

// teamWorker is a poolWorker that is a team's.
func teamWorker(name, team string, tags []string, running int, landing bool) Worker {
	w := poolWorker(name, tags, running, landing)
	w.Team = team
	return w
}

// TestPoolTeams: a team's workers take its builds alone, and its builds go there while
// one of them is running and fits, even busier than a worker of every team's; without
// one, to the workers of every team; never to another team's (atc/worker/pool.go's
// allCompatibleAndRunningWorkers).
func TestPoolTeams(t *testing.T) {
	plan := func(tags ...string) []byte {
		b, err := json.Marshal(atc.Plan{ID: "1", Task: &atc.TaskPlan{Name: "t", Tags: tags, Config: &atc.TaskConfig{Platform: "linux", Run: atc.TaskRunConfig{Path: "true"}}}})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	ref := func(team string) BuildRef {
		return BuildRef{Meta: tektonrun.BuildMeta{Team: team, Pipeline: "app", Job: "unit", Build: "1"}, ID: 1}
	}
	for _, tc := range []struct {
		name    string
		workers []Worker
		team    string
		tags    []string
		want    string
		wantErr string
	}{
		{"the team's own, though busier", []Worker{poolWorker("shared", nil, 0, false), teamWorker("a-ns", "a", nil, 4, false)}, "a", nil, "a-ns", ""},
		{"another team's is never used", []Worker{teamWorker("a-ns", "a", nil, 0, false), poolWorker("shared", nil, 3, false)}, "b", nil, "shared", ""},
		{"the team's own landing: every team's", []Worker{teamWorker("a-ns", "a", nil, 0, true), poolWorker("shared", nil, 3, false)}, "a", nil, "shared", ""},
		{"the team's own without the tag: every team's with it", []Worker{teamWorker("a-ns", "a", nil, 0, false), poolWorker("gpu", []string{"gpu"}, 0, false)}, "a", []string{"gpu"}, "gpu", ""},
		{"only another team's fits: no worker", []Worker{teamWorker("a-ns", "a", nil, 0, false)}, "b", nil, "",
			"no workers satisfying: platform 'linux', version: '2.5'"},
		{"a one-off build names no team: main's", []Worker{poolWorker("shared", nil, 0, false), teamWorker("main-ns", "main", nil, 2, false)}, "", nil, "main-ns", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pool := &Pool{Workers: tc.workers}
			_, err := pool.Start(context.Background(), plan(tc.tags...), ref(tc.team))
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error %v; want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := started(pool); got != tc.want {
				t.Errorf("started on %q; want %q", got, tc.want)
			}
		})
	}
}

// TestPoolPrivileged: a build with a privileged step runs only where the namespace's Pod
// Security admits privileged pods (as the target's latest check found it), even on a
// busier worker; where no worker that matches otherwise admits them, the build is refused
// before anything of it is made, at the privileged step, saying which namespaces refuse
// and why.
func TestPoolPrivileged(t *testing.T) {
	strict := func(name string, tags []string, running int) Worker {
		w := poolWorker(name, tags, running, false)
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"pod-security.kubernetes.io/enforce": "baseline"}}}
		w.Target = tektonrun.NewTargetFromClients(name, fake.NewSimpleClientset(ns), tektonfake.NewSimpleClientset())
		return w
	}
	check := func(ws []Worker) {
		for _, w := range ws {
			w.Target.CheckWith(context.Background(), tektonrun.CheckOptions{AssumeGranted: true})
		}
	}
	plan := func(privileged bool, tags ...string) []byte {
		b, err := json.Marshal(atc.Plan{ID: "7", Task: &atc.TaskPlan{Name: "docker", Privileged: privileged, Tags: tags,
			Config: &atc.TaskConfig{Platform: "linux", Run: atc.TaskRunConfig{Path: "true"}}}})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	ref := BuildRef{Meta: tektonrun.BuildMeta{Pipeline: "app", Job: "unit", Build: "1"}, ID: 1}

	workers := []Worker{strict("strict", nil, 0), poolWorker("open", nil, 2, false)}
	check(workers)
	pool := &Pool{Workers: workers}
	if _, err := pool.Start(context.Background(), plan(true), ref); err != nil || started(pool) != "open" {
		t.Errorf("privileged: started on %q (%v); want open, the namespace that admits it", started(pool), err)
	}

	workers = []Worker{strict("strict-gpu", []string{"gpu"}, 0), poolWorker("open", nil, 0, false)}
	check(workers)
	pool = &Pool{Workers: workers}
	_, err := pool.Start(context.Background(), plan(true, "gpu"), ref)
	var nw *NoWorkersError
	if !errors.As(err, &nw) || nw.PlanID != "7" || !strings.HasPrefix(err.Error(), "no workers satisfying: platform 'linux', tag 'gpu', version: '2.5' (privileged: worker strict-gpu's namespace enforces Pod Security baseline: privileged (") {
		t.Errorf("privileged, tagged gpu: %v; want refused at plan 7, saying worker strict-gpu's namespace refuses it", err)
	}
	if started(pool) != "" {
		t.Errorf("started on %s; want nowhere", started(pool))
	}
	if _, err := pool.Start(context.Background(), plan(false, "gpu"), ref); err != nil || started(pool) != "strict-gpu" {
		t.Errorf("unprivileged, tagged gpu: on %q (%v); want strict-gpu", started(pool), err)
	}
}
