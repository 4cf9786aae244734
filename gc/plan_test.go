package gc

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/tektoncd/pipeline/pkg/apis/pipeline"
	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"knative.dev/pkg/apis"

	"github.com/concourse-tekton/concourse-tekton/pvc"
	"github.com/concourse-tekton/concourse-tekton/runspec"
)

var t0 = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

// fixture is one build of a test namespace.
type fixture struct {
	job string // "" : a one-off build
	n   int
	// outcome of its verdict ("": running); clean: the verdict recorded it without error.
	outcome   runspec.Outcome
	noVerdict bool
	// fused: the build's last step recorded the verdict (runspec.LabelVerdict), and its
	// verdict task was skipped.
	fused bool
	// ended is when it ended, in hours after t0; it was created an hour before.
	ended     int
	retention string // its annotation
	pods      int
	volume    bool
}

func (f fixture) run() string {
	if f.job == "" {
		return fmt.Sprintf("one-off-%d", f.n)
	}
	return fmt.Sprintf("app-%s-%d", f.job, f.n)
}

// namespace makes the objects of builds.
func namespace(builds []fixture) Objects {
	var objs Objects
	for _, f := range builds {
		name, uid := f.run(), types.UID("uid-"+f.run())
		labels := map[string]string{runspec.LabelManagedBy: runspec.ManagedBy, runspec.LabelTeam: "main", runspec.LabelPipeline: "app", runspec.LabelJob: f.job, runspec.LabelBuild: fmt.Sprint(f.n)}
		annotations := map[string]string{}
		if f.job == "" {
			labels[runspec.LabelPipeline], labels[runspec.LabelJob] = "one-off", "build"
			annotations[runspec.AnnotationOneOff] = "true"
		}
		if f.retention != "" {
			annotations[runspec.AnnotationBuildLogRetention] = f.retention
		}
		run := v1.PipelineRun{ObjectMeta: metav1.ObjectMeta{Name: name, UID: uid, Labels: labels, Annotations: annotations,
			CreationTimestamp: metav1.NewTime(t0.Add(time.Duration(f.ended-1) * time.Hour))}}
		ended := metav1.NewTime(t0.Add(time.Duration(f.ended) * time.Hour))
		status := corev1.ConditionTrue
		if f.outcome == "" {
			status = corev1.ConditionUnknown
		} else {
			run.Status.CompletionTime = &ended
			if f.outcome != runspec.Succeeded {
				status = corev1.ConditionFalse
			}
		}
		run.Status.SetCondition(&apis.Condition{Type: apis.ConditionSucceeded, Status: status})
		objs.Runs = append(objs.Runs, run)
		owner := []metav1.OwnerReference{{Kind: "PipelineRun", Name: name, UID: uid}}
		if f.outcome != "" && !f.noVerdict {
			verdict := v1.TaskRun{ObjectMeta: metav1.ObjectMeta{Name: name + "-verdict", OwnerReferences: owner,
				Labels: map[string]string{pipeline.PipelineRunLabelKey: name, pipeline.PipelineTaskLabelKey: runspec.VerdictTask}}}
			verdict.Status.CompletionTime = &ended
			verdict.Status.SetCondition(&apis.Condition{Type: apis.ConditionSucceeded, Status: corev1.ConditionTrue})
			verdict.Status.Results = []v1.TaskRunResult{{Name: runspec.ResultOutcome, Type: v1.ResultsTypeString, Value: *v1.NewStructuredValues(string(f.outcome))}}
			if f.fused {
				verdict.Name, verdict.Labels[pipeline.PipelineTaskLabelKey] = name+"-task-last", "task-last"
				verdict.Labels[runspec.LabelVerdict] = runspec.VerdictFused
				verdict.Status.Results[0].Name = runspec.ResultVerdict
			}
			objs.Verdicts = append(objs.Verdicts, verdict)
		}
		for i := range f.pods {
			objs.Pods = append(objs.Pods, corev1.Pod{ObjectMeta: metav1.ObjectMeta{
				Name: fmt.Sprintf("%s-task-%d-pod", name, i), UID: types.UID(fmt.Sprintf("pod-%s-%d", name, i)),
				Labels: map[string]string{runspec.LabelBuild: fmt.Sprint(f.n), pipeline.PipelineRunLabelKey: name, pipeline.PipelineRunUIDLabelKey: string(uid)},
			}})
		}
		if f.volume {
			claim := pvc.BuildClaim(&run, resource.MustParse("1Gi"), "fast", "")
			claim.UID = "claim-" + uid
			claim.OwnerReferences = owner
			claim.CreationTimestamp = run.CreationTimestamp
			claim.Status.Phase = corev1.ClaimBound
			objs.Claims = append(objs.Claims, *claim)
		}
	}
	return objs
}

// names are the kinds and names of items, as "Kind/name: reason".
func names(items []Item) []string {
	var out []string
	for _, i := range items {
		out = append(out, i.Kind+"/"+i.Name+": "+i.Reason)
	}
	return out
}

func TestPlanRetention(t *testing.T) {
	var builds []fixture
	for n := 1; n <= 8; n++ {
		builds = append(builds, fixture{job: "unit", n: n, outcome: runspec.Succeeded, ended: n})
	}
	builds = append(builds, fixture{job: "unit", n: 9, ended: 10, retention: `{"builds":3}`})
	// Another job keeps everything: it sets no retention and there is no default.
	builds = append(builds, fixture{job: "lint", n: 1, outcome: runspec.Failed, ended: 1}, fixture{job: "lint", n: 2, outcome: runspec.Failed, ended: 2})
	d := Plan(namespace(builds), Rules{}, t0.Add(100*time.Hour))
	want := []string{
		"PipelineRun/app-unit-1: " + ReasonBeyond,
		"PipelineRun/app-unit-2: " + ReasonBeyond,
		"PipelineRun/app-unit-3: " + ReasonBeyond,
		"PipelineRun/app-unit-4: " + ReasonBeyond,
		"PipelineRun/app-unit-5: " + ReasonBeyond,
	}
	if diff := cmp.Diff(want, names(d.Delete)); diff != "" {
		t.Errorf("Delete (-want +got):\n%s", diff)
	}
	wantKeep := []string{
		"PipelineRun/app-lint-1: " + ReasonNoRetention,
		"PipelineRun/app-lint-2: " + ReasonNoRetention,
		"PipelineRun/app-unit-6: " + ReasonNewest,
		"PipelineRun/app-unit-7: " + ReasonNewest,
		"PipelineRun/app-unit-8: " + ReasonNewest,
		"PipelineRun/app-unit-9: " + ReasonRunning,
	}
	if diff := cmp.Diff(wantKeep, names(d.Keep)); diff != "" {
		t.Errorf("Keep (-want +got):\n%s", diff)
	}

	// The target's default applies to a job that sets none; its cap to one that does.
	d = Plan(namespace(builds), Rules{Defaults: Defaults{DefaultBuilds: 1, MaxBuilds: 2}}, t0.Add(100*time.Hour))
	if got := len(d.Delete); got != 7 {
		t.Errorf("with a default of 1 and a cap of 2: %d deleted, want 6 of unit and 1 of lint:\n%v", got, names(d.Delete))
	}
}

// TestPlanKeepsCacheSource keeps the build whose volume the job's next build clones,
// whatever its retention says, and lets the volumes of deleted builds go with them.
func TestPlanKeepsCacheSource(t *testing.T) {
	builds := []fixture{
		{job: "unit", n: 1, outcome: runspec.Succeeded, ended: 1, volume: true},
		{job: "unit", n: 2, outcome: runspec.Succeeded, ended: 2, volume: true},
		{job: "unit", n: 3, outcome: runspec.Errored, ended: 3, volume: true, noVerdict: true},
		{job: "unit", n: 4, outcome: runspec.Errored, ended: 4, volume: true, noVerdict: true, retention: `{"builds":2}`},
	}
	d := Plan(namespace(builds), Rules{}, t0.Add(100*time.Hour))
	want := []string{"PipelineRun/app-unit-1: " + ReasonBeyond}
	if diff := cmp.Diff(want, names(d.Delete)[:1]); diff != "" {
		t.Errorf("Delete (-want +got):\n%s", diff)
	}
	wantAll := []string{
		"PipelineRun/app-unit-1: " + ReasonBeyond,
		"PersistentVolumeClaim/app-unit-3-build: " + pvc.ReasonNoSource,
		"PersistentVolumeClaim/app-unit-4-build: " + pvc.ReasonNoSource,
	}
	if diff := cmp.Diff(wantAll, names(d.Delete)); diff != "" {
		t.Errorf("Delete (-want +got):\n%s", diff)
	}
	if !slices.Contains(names(d.Keep), "PipelineRun/app-unit-2: "+ReasonCacheSource) {
		t.Errorf("the cache source's build is not kept as one: %v", names(d.Keep))
	}
}

// TestPlanKeepsCacheSourceOfFusedVerdict: a build whose last step recorded the verdict
// is a cache source as one whose verdict task did.
func TestPlanKeepsCacheSourceOfFusedVerdict(t *testing.T) {
	builds := []fixture{
		{job: "unit", n: 1, outcome: runspec.Succeeded, ended: 1, volume: true},
		{job: "unit", n: 2, outcome: runspec.Succeeded, ended: 2, volume: true, fused: true},
		{job: "unit", n: 3, outcome: runspec.Errored, ended: 3, volume: true, noVerdict: true},
	}
	d := Plan(namespace(builds), Rules{}, t0.Add(100*time.Hour))
	if !slices.Contains(names(d.Keep), "PersistentVolumeClaim/app-unit-2-build: "+pvc.ReasonSource) {
		t.Errorf("the cache source is not kept as one: %v", names(d.Keep))
	}
	if !slices.Contains(names(d.Delete), "PersistentVolumeClaim/app-unit-1-build: "+pvc.ReasonSuperseded) {
		t.Errorf("the older volume is not deleted as such: %v", names(d.Delete))
	}
}

// TestPlanPods deletes the pods of ended builds as Concourse deletes their containers,
// archiving their events first, and keeps those of the job's latest failed build for
// the failed grace period.
func TestPlanPods(t *testing.T) {
	builds := []fixture{
		{job: "unit", n: 1, outcome: runspec.Failed, ended: 1, pods: 1},
		{job: "unit", n: 2, outcome: runspec.Succeeded, ended: 2, pods: 2},
		{job: "unit", n: 3, outcome: runspec.Failed, ended: 90, pods: 1, volume: true, noVerdict: true},
		{job: "unit", n: 4, ended: 99, pods: 1},
		{job: "lint", n: 1, outcome: runspec.Succeeded, ended: 95, pods: 1},
		{n: 1, outcome: runspec.Succeeded, ended: 80, pods: 1},
	}
	objs := namespace(builds)
	hold := int64(600)
	for _, p := range []struct {
		name, label string
		phase       corev1.PodPhase
		started     time.Duration
	}{
		{"intercept-ended", runspec.LabelIntercept, corev1.PodSucceeded, 0},
		{"intercept-live", runspec.LabelIntercept, corev1.PodRunning, 0},
		{"transfer-stuck", runspec.LabelTransfer, corev1.PodRunning, time.Hour},
		{"check-session-live", runspec.LabelCheckSession, corev1.PodRunning, 0},
		{"check-session-ended", runspec.LabelCheckSession, corev1.PodFailed, time.Hour},
		{"check-session-orphaned", runspec.LabelCheckSession, corev1.PodRunning, time.Hour},
	} {
		start := metav1.NewTime(t0.Add(100*time.Hour - p.started))
		objs.Pods = append(objs.Pods, corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: p.name, UID: types.UID(p.name), Labels: map[string]string{p.label: "true"}, CreationTimestamp: start},
			Spec:       corev1.PodSpec{ActiveDeadlineSeconds: &hold},
			Status:     corev1.PodStatus{Phase: p.phase, StartTime: &start},
		})
	}
	rules := Rules{FailedGrace: 24 * time.Hour, OneOffGrace: 5 * time.Minute}
	d := Plan(objs, rules, t0.Add(100*time.Hour))
	want := []string{
		"Pod/app-lint-1-task-0-pod: " + ReasonEnded,
		"Pod/app-unit-1-task-0-pod: " + ReasonEnded,
		"Pod/app-unit-2-task-0-pod: " + ReasonEnded,
		"Pod/app-unit-2-task-1-pod: " + ReasonEnded,
		"Pod/check-session-ended: " + ReasonSessionEnded,
		"Pod/check-session-orphaned: " + ReasonSessionEnded,
		"Pod/intercept-ended: " + ReasonSessionEnded,
		"Pod/one-off-1-task-0-pod: " + ReasonEnded,
		"Pod/transfer-stuck: " + ReasonSessionEnded,
	}
	if diff := cmp.Diff(want, names(d.Delete)); diff != "" {
		t.Errorf("Delete (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"app-lint-1", "app-unit-1", "app-unit-2", "one-off-1"}, d.Archive); diff != "" {
		t.Errorf("Archive (-want +got):\n%s", diff)
	}
	// The job's latest ended build failed: its pods and volume stay to be intercepted.
	// The running build's pods, and a live session's, are not decided on.
	wantKeep := []string{
		"PipelineRun/app-lint-1: " + ReasonNoRetention,
		"PipelineRun/app-unit-1: " + ReasonNoRetention,
		"PipelineRun/app-unit-2: " + ReasonNoRetention,
		"PipelineRun/app-unit-3: " + ReasonNoRetention,
		"PipelineRun/app-unit-4: " + ReasonRunning,
		"PipelineRun/one-off-1: " + ReasonOneOff,
		"Pod/app-unit-3-task-0-pod: " + ReasonIntercept,
		"PersistentVolumeClaim/app-unit-3-build: " + ReasonIntercept,
	}
	if diff := cmp.Diff(wantKeep, names(d.Keep)); diff != "" {
		t.Errorf("Keep (-want +got):\n%s", diff)
	}

	// Past the failed grace period, the latest failed build's pods go too.
	d = Plan(objs, rules, t0.Add(115*time.Hour))
	if !slices.Contains(names(d.Delete), "Pod/app-unit-3-task-0-pod: "+ReasonEnded) || !slices.Contains(d.Archive, "app-unit-3") {
		t.Errorf("past the failed grace period: delete %v, archive %v", names(d.Delete), d.Archive)
	}
	// Within the one-off grace period, a one-off build's pods stay.
	d = Plan(objs, rules, t0.Add(80*time.Hour+time.Minute))
	if !slices.Contains(names(d.Keep), "Pod/one-off-1-task-0-pod: "+ReasonOneOffGrace) {
		t.Errorf("within the one-off grace period: keep %v", names(d.Keep))
	}
	// The pods of a run whose starter keeps them (the ATC's check runs) stay, whatever
	// else the rules say of them.
	for i := range objs.Runs {
		if objs.Runs[i].Name == "app-lint-1" {
			objs.Runs[i].Annotations = map[string]string{"concourse-ci.org/atc-check": "true"}
		}
	}
	rules.KeepPodsOf = "concourse-ci.org/atc-check"
	d = Plan(objs, rules, t0.Add(100*time.Hour))
	if !slices.Contains(names(d.Keep), "Pod/app-lint-1-task-0-pod: "+ReasonStarterKeeps) || slices.Contains(d.Archive, "app-lint-1") {
		t.Errorf("a check run's pods: keep %v, archive %v; want them kept", names(d.Keep), d.Archive)
	}
}

func TestPlanImages(t *testing.T) {
	builds := []fixture{
		{job: "unit", n: 1, outcome: runspec.Succeeded, ended: 1},
		{job: "unit", n: 2, outcome: runspec.Succeeded, ended: 2, retention: `{"builds":1}`},
	}
	objs := namespace(builds)
	objs.Repository = "registry:5000/ci"
	objs.TaskRuns = map[string]string{"app-unit-1-build-image": "app-unit-1", "app-unit-2-build-image": "app-unit-2"}
	objs.Images = map[string]string{
		"app-unit-1-build-image": "sha256:aaa",
		"app-unit-2-build-image": "sha256:bbb",
		"app-unit-0-build-image": "sha256:bbb", // its build went long ago; its image is the kept one's
		"gone-build-image":       "sha256:ccc",
	}
	d := Plan(objs, Rules{}, t0.Add(100*time.Hour))
	want := []string{
		"PipelineRun/app-unit-1: " + ReasonBeyond,
		"Image/registry:5000/ci:app-unit-1-build-image: " + ReasonBuildGone,
		"Image/registry:5000/ci:gone-build-image: " + ReasonBuildGone,
	}
	if diff := cmp.Diff(want, names(d.Delete)); diff != "" {
		t.Errorf("Delete (-want +got):\n%s", diff)
	}
	for _, k := range []string{"Image/registry:5000/ci:app-unit-0-build-image: " + ReasonImageShared, "Image/registry:5000/ci:app-unit-2-build-image: " + ReasonImageInUse} {
		if !slices.Contains(names(d.Keep), k) {
			t.Errorf("not kept: %s\nkept: %v", k, names(d.Keep))
		}
	}
}

// TestPlanDeterministic gives the same decisions whatever the order of the listing.
func TestPlanDeterministic(t *testing.T) {
	var builds []fixture
	for n := 1; n <= 20; n++ {
		builds = append(builds, fixture{job: fmt.Sprint("job", n%3), n: n, outcome: runspec.Failed, ended: n, pods: 2, volume: true, retention: `{"builds":2}`})
	}
	objs := namespace(builds)
	want := Plan(objs, DefaultRules, t0.Add(50*time.Hour))
	r := rand.New(rand.NewPCG(1, 2))
	for range 10 {
		r.Shuffle(len(objs.Runs), func(i, j int) { objs.Runs[i], objs.Runs[j] = objs.Runs[j], objs.Runs[i] })
		r.Shuffle(len(objs.Pods), func(i, j int) { objs.Pods[i], objs.Pods[j] = objs.Pods[j], objs.Pods[i] })
		r.Shuffle(len(objs.Claims), func(i, j int) { objs.Claims[i], objs.Claims[j] = objs.Claims[j], objs.Claims[i] })
		if diff := cmp.Diff(want, Plan(objs, DefaultRules, t0.Add(50*time.Hour))); diff != "" {
			t.Fatalf("another order, other decisions (-first +now):\n%s", diff)
		}
	}
}

// TestPlanReleases a recent cache source from its deleted build: a build being prepared
// may have chosen it a moment ago.
func TestPlanReleases(t *testing.T) {
	builds := []fixture{
		{job: "unit", n: 1, outcome: runspec.Succeeded, ended: 3, volume: true},
		{job: "unit", n: 2, outcome: runspec.Succeeded, ended: 3, volume: true},
		{job: "unit", n: 3, outcome: runspec.Errored, ended: 3, volume: true, noVerdict: true, retention: `{"builds":1}`},
	}
	d := Plan(namespace(builds), Rules{}, t0.Add(3*time.Hour+5*time.Minute))
	want := []string{"PipelineRun/app-unit-2: " + ReasonBeyond, "PersistentVolumeClaim/app-unit-3-build: " + pvc.ReasonNoSource}
	if diff := cmp.Diff(want, names(d.Delete)); diff != "" {
		t.Errorf("Delete (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"PersistentVolumeClaim/app-unit-2-build: " + ReasonReleased}, names(d.Release)); diff != "" {
		t.Errorf("Release (-want +got):\n%s", diff)
	}
	if !slices.Contains(names(d.Keep), "PipelineRun/app-unit-1: "+ReasonCacheSource) {
		t.Errorf("the cache source's build is not kept: %v", names(d.Keep))
	}
}

// TestPlanOneOffsEnd deletes one-off builds that ended past the grace period when their
// starter keeps their events, and keeps them otherwise.
func TestPlanOneOffsEnd(t *testing.T) {
	objs := namespace([]fixture{
		{n: 1, outcome: runspec.Succeeded, ended: 1, pods: 1},
		{n: 2, outcome: runspec.Failed, ended: 10},
		{n: 3, ended: 11},
	})
	now := t0.Add(10*time.Hour + time.Minute)
	rules := Rules{OneOffGrace: 5 * time.Minute, OneOffsEnd: true}
	d := Plan(objs, rules, now)
	if diff := cmp.Diff([]string{"PipelineRun/one-off-1: " + ReasonOneOffEnded}, names(d.Delete)); diff != "" {
		t.Errorf("Delete (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"PipelineRun/one-off-2: " + ReasonOneOff, "PipelineRun/one-off-3: " + ReasonOneOff}, names(d.Keep)); diff != "" {
		t.Errorf("Keep (-want +got):\n%s", diff)
	}
	rules.OneOffsEnd = false
	if d := Plan(objs, rules, now); slices.ContainsFunc(d.Delete, func(i Item) bool { return i.Kind == KindPipelineRun }) {
		t.Errorf("without OneOffsEnd, a one-off build deleted: %v", names(d.Delete))
	}
}

// TestPlanSecrets deletes a build's Secrets of credentials and of image pull credentials
// whose run was never made, once the grace period is over, and leaves those of builds
// alone.
func TestPlanSecrets(t *testing.T) {
	objs := namespace([]fixture{{job: "unit", n: 1, outcome: runspec.Succeeded, ended: 1}})
	secret := func(name string, age time.Duration, owned bool) corev1.Secret {
		s := corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("secret-" + name), CreationTimestamp: metav1.NewTime(t0.Add(10*time.Hour - age))}}
		if owned {
			s.OwnerReferences = []metav1.OwnerReference{{Kind: "PipelineRun", Name: name, UID: types.UID("uid-" + name)}}
		}
		return s
	}
	objs.Secrets = []corev1.Secret{
		secret("app-unit-1", time.Hour, true),    // its build's
		secret("app-unit-2", time.Hour, false),   // its starter stopped before the run
		secret("app-unit-3", time.Minute, false), // its run is being made
		// Of image pull credentials: of a build whose starter stopped after making its
		// run, and of one that stopped before.
		secret("app-unit-1-image-pull", time.Hour, false),
		secret("app-unit-2-image-pull", time.Hour, false),
	}
	d := Plan(objs, Rules{}, t0.Add(10*time.Hour))
	if diff := cmp.Diff([]string{"Secret/app-unit-2: " + ReasonSecretOrphan, "Secret/app-unit-2-image-pull: " + ReasonSecretOrphan}, names(d.Delete)); diff != "" {
		t.Errorf("Delete (-want +got):\n%s", diff)
	}
}
