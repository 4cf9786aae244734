package pvc

import (
	stdcmp "cmp"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"knative.dev/pkg/apis"
	duckv1 "knative.dev/pkg/apis/duck/v1"

	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/runspec"
	"github.com/concourse-tekton/concourse-tekton/translate"
)

// translated is the PipelineRun of build n of job unit of pipeline app (team main).
func translated(t *testing.T, job, build, storageClass string) *v1.PipelineRun {
	t.Helper()
	var plan concourse.Plan
	const raw = `{"id":"root","do":[{"id":"1","task":{"name":"unit","config":{"platform":"linux","rootfs_uri":"docker:///busybox","run":{"path":"true"}}}}]}`
	if err := json.Unmarshal([]byte(raw), &plan); err != nil {
		t.Fatal(err)
	}
	r, err := translate.Translate(plan, translate.Options{Pipeline: "app", Job: job, Build: build, StorageClass: storageClass, BuildVolumeSize: "2Gi"})
	if err != nil {
		t.Fatal(err)
	}
	r.PipelineRun.Namespace = "ci"
	return r.PipelineRun
}

func TestClaimName(t *testing.T) {
	long := strings.Repeat("a", 60) + "-7"
	tests := []struct{ run, want string }{
		{"app-unit-7", "app-unit-7-build"},
		{strings.Repeat("a", 57), strings.Repeat("a", 57) + "-build"},
		{long, strings.Repeat("a", 48) + "-472d305f-build"},
	}
	for _, tt := range tests {
		got := ClaimName(tt.run)
		if got != tt.want || len(got) > 63 {
			t.Errorf("ClaimName(%q) = %q (%d characters), want %q", tt.run, got, len(got), tt.want)
		}
	}
	if a, b := ClaimName(long), ClaimName(long[:61]+"8"); a == b {
		t.Errorf("two long runs share the claim %s", a)
	}
}

func TestRequest(t *testing.T) {
	size, class, err := Request(translated(t, "unit", "7", "fast"))
	if err != nil || size.String() != "2Gi" || class != "fast" {
		t.Errorf("Request = %s, %q, %v; want 2Gi, fast", size.String(), class, err)
	}
	bound := translated(t, "unit", "7", "")
	if err := BindBuildVolume(bound, "x"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Request(bound); err == nil {
		t.Error("Request of a run without a volumeClaimTemplate: no error")
	}
}

func TestBuildClaim(t *testing.T) {
	labels := map[string]string{
		runspec.LabelManagedBy: runspec.ManagedBy, LabelVolume: VolumeBuild,
		runspec.LabelTeam: "main", runspec.LabelPipeline: "app", runspec.LabelJob: "unit", runspec.LabelBuild: "7",
	}
	claim := func(class *string, annotations map[string]string, source *corev1.TypedLocalObjectReference) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
			ObjectMeta: metav1.ObjectMeta{Name: "app-unit-7-build", Namespace: "ci", Labels: labels, Annotations: annotations},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("3Gi")}},
				StorageClassName: class,
				DataSource:       source,
			},
		}
	}
	fast := "fast"
	names := map[string]string{runspec.LabelTeam: "main", runspec.LabelPipeline: "app", runspec.LabelJob: "unit", runspec.LabelBuild: "7"}
	cloned := map[string]string{AnnotationClonedFrom: "app-unit-6-build"}
	for k, v := range names {
		cloned[k] = v
	}
	tests := []struct {
		name, class, source string
		want                *corev1.PersistentVolumeClaim
	}{
		{"empty, default class", "", "", claim(nil, names, nil)},
		{"cloned", "fast", "app-unit-6-build", claim(&fast, cloned, &corev1.TypedLocalObjectReference{Kind: "PersistentVolumeClaim", Name: "app-unit-6-build"})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := BuildClaim(translated(t, "unit", "7", "ignored"), resource.MustParse("3Gi"), tt.class, tt.source)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("BuildClaim (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBindBuildVolume(t *testing.T) {
	run := translated(t, "unit", "7", "fast")
	if err := BindBuildVolume(run, "app-unit-7-build"); err != nil {
		t.Fatal(err)
	}
	want := []v1.WorkspaceBinding{{Name: "build", PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "app-unit-7-build"}}}
	if diff := cmp.Diff(want, run.Spec.Workspaces); diff != "" {
		t.Errorf("workspaces (-want +got):\n%s", diff)
	}
	ctx := context.Background()
	run.SetDefaults(ctx)
	if err := run.Validate(ctx); err != nil {
		t.Errorf("Tekton rejects the bound run: %v", err)
	}
	if err := BindBuildVolume(&v1.PipelineRun{}, "x"); err == nil {
		t.Error("BindBuildVolume of a run without a build workspace: no error")
	}
}

func TestOwnerReference(t *testing.T) {
	run := translated(t, "unit", "7", "")
	run.UID = "u-7"
	yes := true
	want := metav1.OwnerReference{APIVersion: "tekton.dev/v1", Kind: "PipelineRun", Name: "app-unit-7", UID: "u-7", Controller: &yes}
	if diff := cmp.Diff(want, OwnerReference(run)); diff != "" {
		t.Errorf("OwnerReference (-want +got):\n%s", diff)
	}
}

// t0 is when the fixtures' builds start.
var t0 = time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)

// build is a fixture: a build of a job with its volume, PipelineRun and verdict TaskRun.
type build struct {
	job, n string
	// class is the volume's storage class ("fast" when empty); phase its phase (Bound
	// when empty); from the claim it is cloned from.
	class, from string
	phase       corev1.PersistentVolumeClaimPhase
	// running: the run has not finished; noRun: there is no PipelineRun; cancelled:
	// the run was cancelled; aborted: it has AnnotationAborted.
	running, noRun, cancelled, aborted bool
	// oneOff makes it a one-off build (runspec.AnnotationOneOff).
	oneOff bool
	// outcome is the verdict's outcome result ("": no verdict TaskRun, "-": a verdict
	// without one); dirty gives it an error result.
	outcome string
	dirty   bool
	// fused makes the verdict TaskRun the build's last step's, which holds the verdict
	// (runspec.LabelVerdict); lastFailed adds, beside the verdict task's TaskRun, a last
	// step that holds the verdict and recorded none.
	fused, lastFailed bool
	// ended is when the verdict finished, in minutes after t0; age is the claim's
	// creation, in minutes after t0.
	ended, age int
}

func (b build) run() string { return "app-" + b.job + "-" + b.n }

func (b build) objects() (corev1.PersistentVolumeClaim, []v1.PipelineRun, []v1.TaskRun) {
	uid := types.UID("uid-" + b.run())
	labels := map[string]string{runspec.LabelManagedBy: runspec.ManagedBy, runspec.LabelTeam: "main", runspec.LabelPipeline: "app", runspec.LabelJob: b.job, runspec.LabelBuild: b.n}
	var annotations map[string]string
	if b.oneOff {
		annotations = map[string]string{runspec.AnnotationOneOff: "true"}
	}
	claim := BuildClaim(&v1.PipelineRun{ObjectMeta: metav1.ObjectMeta{Name: b.run(), Labels: labels, Annotations: annotations}}, resource.MustParse("1Gi"), stdcmp.Or(b.class, "fast"), b.from)
	claim.CreationTimestamp = metav1.NewTime(t0.Add(time.Duration(b.age) * time.Minute))
	claim.UID = "claim-" + uid
	claim.Status.Phase = stdcmp.Or(b.phase, corev1.ClaimBound)
	if b.noRun {
		return *claim, nil, nil
	}
	claim.OwnerReferences = []metav1.OwnerReference{{Kind: "PipelineRun", Name: b.run(), UID: uid}}
	run := v1.PipelineRun{ObjectMeta: metav1.ObjectMeta{Name: b.run(), UID: uid, Labels: labels, Annotations: annotations}}
	status := corev1.ConditionTrue
	if b.running {
		status = corev1.ConditionUnknown
	} else {
		ended := metav1.NewTime(t0.Add(time.Duration(b.ended) * time.Minute))
		run.Status.CompletionTime = &ended
	}
	run.Status.SetCondition(&apis.Condition{Type: apis.ConditionSucceeded, Status: status})
	if b.cancelled {
		run.Spec.Status = v1.PipelineRunSpecStatusCancelled
	}
	if b.aborted {
		run.Annotations = map[string]string{AnnotationAborted: "true"}
	}
	if b.outcome == "" {
		return *claim, []v1.PipelineRun{run}, nil
	}
	// Tekton gives a TaskRun its PipelineRun's labels, and its Task's.
	taskRun := func(task string, fused bool) v1.TaskRun {
		trLabels := map[string]string{"tekton.dev/pipelineRun": b.run(), "tekton.dev/pipelineTask": task}
		for k, v := range labels {
			trLabels[k] = v
		}
		if fused {
			trLabels[runspec.LabelVerdict] = runspec.VerdictFused
		}
		tr := v1.TaskRun{ObjectMeta: metav1.ObjectMeta{
			Name:            b.run() + "-" + task,
			Labels:          trLabels,
			OwnerReferences: []metav1.OwnerReference{{Kind: "PipelineRun", Name: b.run(), UID: uid}},
		}}
		ended := metav1.NewTime(t0.Add(time.Duration(b.ended) * time.Minute))
		tr.Status.CompletionTime = &ended
		tr.Status.Status = duckv1.Status{Conditions: duckv1.Conditions{{Type: apis.ConditionSucceeded, Status: corev1.ConditionFalse}}}
		return tr
	}
	outcome, failure, tr := "outcome", "error", taskRun("verdict", false)
	if b.fused {
		outcome, failure, tr = "verdict", "verdict-error", taskRun("task-last", true)
	}
	if b.outcome != "-" {
		tr.Status.Results = append(tr.Status.Results, v1.TaskRunResult{Name: outcome, Value: *v1.NewStructuredValues(b.outcome)})
	}
	if b.dirty {
		tr.Status.Results = append(tr.Status.Results, v1.TaskRunResult{Name: failure, Value: *v1.NewStructuredValues("the build volume was not cleaned")})
	}
	taskRuns := []v1.TaskRun{tr}
	if b.lastFailed {
		// Listed first: the verdict task's outcome wins wherever it is.
		taskRuns = []v1.TaskRun{taskRun("task-last", true), tr}
	}
	return *claim, []v1.PipelineRun{run}, taskRuns
}

func world(builds []build) ([]corev1.PersistentVolumeClaim, []v1.PipelineRun, []v1.TaskRun) {
	var claims []corev1.PersistentVolumeClaim
	var runs []v1.PipelineRun
	var taskRuns []v1.TaskRun
	for _, b := range builds {
		c, r, tr := b.objects()
		claims, runs, taskRuns = append(claims, c), append(runs, r...), append(taskRuns, tr...)
	}
	return claims, runs, taskRuns
}

func TestCacheSource(t *testing.T) {
	tests := []struct {
		name   string
		builds []build
		want   string
	}{
		{"no builds", nil, ""},
		{"the last build to finish, whatever its outcome", []build{
			{job: "unit", n: "1", outcome: "succeeded", ended: 10},
			{job: "unit", n: "2", outcome: "failed", ended: 30},
			{job: "unit", n: "3", outcome: "errored", ended: 20},
		}, "app-unit-2-build"},
		{"not another job's", []build{
			{job: "unit", n: "1", outcome: "succeeded", ended: 10},
			{job: "other", n: "2", outcome: "succeeded", ended: 30},
		}, "app-unit-1-build"},
		{"not a running build's", []build{
			{job: "unit", n: "1", outcome: "succeeded", ended: 10},
			{job: "unit", n: "2", running: true},
		}, "app-unit-1-build"},
		{"not a volume the verdict could not clean", []build{
			{job: "unit", n: "1", outcome: "succeeded", ended: 10},
			{job: "unit", n: "2", outcome: "succeeded", dirty: true, ended: 30},
		}, "app-unit-1-build"},
		{"not without an outcome, nor without a verdict", []build{
			{job: "unit", n: "1", outcome: "aborted", ended: 10},
			{job: "unit", n: "2", outcome: "-", ended: 30},
			{job: "unit", n: "3", outcome: "pending", ended: 30},
			{job: "unit", n: "4"},
		}, "app-unit-1-build"},
		{"not a cancelled build's, nor an aborted one's", []build{
			{job: "unit", n: "1", outcome: "succeeded", ended: 10},
			{job: "unit", n: "2", outcome: "aborted", cancelled: true, ended: 30},
			{job: "unit", n: "3", outcome: "succeeded", aborted: true, ended: 40},
		}, "app-unit-1-build"},
		{"not an unbound volume, nor another storage class's", []build{
			{job: "unit", n: "1", outcome: "succeeded", ended: 10},
			{job: "unit", n: "2", outcome: "succeeded", ended: 30, phase: corev1.ClaimLost},
			{job: "unit", n: "3", outcome: "succeeded", ended: 30, class: "slow"},
		}, "app-unit-1-build"},
		{"not a volume whose run is not there", []build{
			{job: "unit", n: "1", outcome: "succeeded", ended: 10, noRun: true},
		}, ""},
		{"a build whose last step holds the verdict", []build{
			{job: "unit", n: "1", outcome: "succeeded", ended: 10},
			{job: "unit", n: "2", outcome: "succeeded", ended: 30, fused: true},
		}, "app-unit-2-build"},
		{"not one whose last step could not clean the volume, nor one that did not record it", []build{
			{job: "unit", n: "1", outcome: "succeeded", ended: 10},
			{job: "unit", n: "2", outcome: "succeeded", ended: 30, fused: true, dirty: true},
			{job: "unit", n: "3", outcome: "-", ended: 40, fused: true},
		}, "app-unit-1-build"},
		{"the verdict task's when the last step that holds the verdict did not record it", []build{
			{job: "unit", n: "1", outcome: "succeeded", ended: 10},
			{job: "unit", n: "2", outcome: "failed", ended: 30, lastFailed: true},
		}, "app-unit-2-build"},
		{"not a one-off build's (it is kept whole)", []build{
			{job: "unit", n: "1", outcome: "succeeded", ended: 10},
			{job: "unit", n: "2", outcome: "succeeded", ended: 30, oneOff: true},
		}, "app-unit-1-build"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			claims, runs, taskRuns := world(tt.builds)
			next, _, _ := build{job: "unit", n: "9"}.objects()
			got, ok := CacheSource(claims, runs, taskRuns, &next)
			if got != tt.want || ok != (tt.want != "") {
				t.Errorf("CacheSource = %q, %t; want %q", got, ok, tt.want)
			}
		})
	}
}

func TestCacheSourceOfOneOff(t *testing.T) {
	claims, runs, taskRuns := world([]build{{job: "build", n: "1", outcome: "succeeded", ended: 10}})
	next, _, _ := build{job: "build", n: "2", oneOff: true}.objects()
	if got, ok := CacheSource(claims, runs, taskRuns, &next); ok {
		t.Errorf("a one-off build cloned %s", got)
	}
}

func TestCacheSourceComparesFullNames(t *testing.T) {
	claims, runs, taskRuns := world([]build{{job: "a_b", n: "1", outcome: "succeeded"}})
	next, _, _ := build{job: "a_b", n: "2"}.objects()
	// The translator labels jobs "a b" and "a_b" alike; the annotations tell them apart.
	next.Annotations = map[string]string{runspec.LabelTeam: "main", runspec.LabelPipeline: "app", runspec.LabelJob: "a b"}
	claims[0].Annotations = map[string]string{runspec.LabelTeam: "main", runspec.LabelPipeline: "app", runspec.LabelJob: "a_b"}
	if got, ok := CacheSource(claims, runs, taskRuns, &next); ok {
		t.Errorf("job %q cloned job %q's volume %s", "a b", "a_b", got)
	}
}

func TestCacheSourceKeepsInstancesApart(t *testing.T) {
	claims, runs, taskRuns := world([]build{{job: "unit", n: "1", outcome: "succeeded"}})
	claims[0].Annotations = map[string]string{runspec.AnnotationInstanceVars: `{"branch":"dev"}`}
	next, _, _ := build{job: "unit", n: "2"}.objects()
	next.Annotations = map[string]string{runspec.AnnotationInstanceVars: `{"branch":"main"}`}
	if got, ok := CacheSource(claims, runs, taskRuns, &next); ok {
		t.Errorf("instance branch:main cloned instance branch:dev's volume %s", got)
	}
	next.Annotations[runspec.AnnotationInstanceVars] = `{"branch":"dev"}`
	if got, ok := CacheSource(claims, runs, taskRuns, &next); !ok || got != claims[0].Name {
		t.Errorf("CacheSource = %q, %t; want the same instance's %s", got, ok, claims[0].Name)
	}
}

func TestGarbage(t *testing.T) {
	now := t0.Add(time.Hour)
	tests := []struct {
		name   string
		builds []build
		want   []string
	}{
		{"all but the newest source", []build{
			{job: "unit", n: "1", outcome: "succeeded", ended: 10},
			{job: "unit", n: "2", outcome: "failed", ended: 20},
			{job: "unit", n: "3", outcome: "succeeded", ended: 5},
		}, []string{"app-unit-1-build", "app-unit-3-build"}},
		{"per job", []build{
			{job: "unit", n: "1", outcome: "succeeded", ended: 10},
			{job: "other", n: "1", outcome: "succeeded", ended: 5},
		}, nil},
		{"dirty and cancelled builds, and volumes whose runs are gone", []build{
			{job: "unit", n: "1", outcome: "succeeded", ended: 10},
			{job: "unit", n: "2", outcome: "succeeded", ended: 20, dirty: true},
			{job: "unit", n: "3", outcome: "aborted", ended: 30, cancelled: true},
			{job: "unit", n: "4", noRun: true},
			{job: "unit", n: "5"},
		}, []string{"app-unit-2-build", "app-unit-3-build", "app-unit-4-build", "app-unit-5-build"}},
		{"not running builds", []build{
			{job: "unit", n: "1", outcome: "succeeded", ended: 10},
			{job: "unit", n: "2", running: true},
		}, nil},
		{"not sources that finished within the grace period", []build{
			{job: "unit", n: "1", outcome: "succeeded", ended: 52},
			{job: "unit", n: "2", outcome: "succeeded", ended: 55},
		}, nil},
		{"not a volume made within the grace period for a run not there yet", []build{
			{job: "unit", n: "1", noRun: true, age: 55},
		}, nil},
		{"one-off builds' volumes once their outputs had the grace period to be downloaded", []build{
			{job: "build", n: "1", outcome: "succeeded", ended: 10, oneOff: true},
			{job: "build", n: "2", outcome: "failed", ended: 55, oneOff: true},
			{job: "build", n: "3", running: true, oneOff: true},
		}, []string{"app-build-1-build"}},
		{"not the source of a clone not bound yet", []build{
			{job: "unit", n: "1", outcome: "succeeded", ended: 10},
			{job: "unit", n: "2", outcome: "succeeded", ended: 20},
			{job: "unit", n: "3", outcome: "succeeded", ended: 30, from: "app-unit-1-build"},
			{job: "unit", n: "4", from: "app-unit-2-build", phase: corev1.ClaimPending, running: true},
		}, []string{"app-unit-1-build"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			claims, runs, taskRuns := world(tt.builds)
			if diff := cmp.Diff(tt.want, Garbage(claims, runs, taskRuns, now)); diff != "" {
				t.Errorf("Garbage (-want +got):\n%s", diff)
			}
		})
	}
}

// TestVolumesReasons says why each volume is kept or deleted.
func TestVolumesReasons(t *testing.T) {
	claims, runs, taskRuns := world([]build{
		{job: "unit", n: "1", outcome: "succeeded", ended: 10},
		{job: "unit", n: "2", outcome: "succeeded", ended: 52},
		{job: "unit", n: "3", outcome: "succeeded", ended: 55},
		{job: "unit", n: "4", outcome: "succeeded", ended: 30, dirty: true},
		{job: "unit", n: "5", noRun: true},
		{job: "unit", n: "6", noRun: true, age: 58},
		{job: "unit", n: "7", running: true},
		{job: "build", n: "8", outcome: "succeeded", ended: 55, oneOff: true},
		{job: "unit", n: "9", noRun: true},
		{job: "unit", n: "10", noRun: true},
	})
	for i, released := range map[int]time.Duration{8: 55 * time.Minute, 9: 45 * time.Minute} {
		claims[i].Annotations[AnnotationReleased] = t0.Add(released).Format(time.RFC3339)
	}
	want := []Verdict{
		{Name: "app-build-8-build", Reason: ReasonDownload},
		{Name: "app-unit-1-build", Delete: true, Reason: ReasonSuperseded},
		{Name: "app-unit-10-build", Delete: true, Reason: ReasonNoRun},
		{Name: "app-unit-2-build", Reason: ReasonRecent},
		{Name: "app-unit-3-build", Reason: ReasonSource},
		{Name: "app-unit-4-build", Delete: true, Reason: ReasonNoSource},
		{Name: "app-unit-5-build", Delete: true, Reason: ReasonNoRun},
		{Name: "app-unit-6-build", Reason: ReasonNoRunYet},
		{Name: "app-unit-7-build", Reason: ReasonRunning},
		{Name: "app-unit-9-build", Reason: ReasonReleased},
	}
	if diff := cmp.Diff(want, Volumes(claims, runs, taskRuns, t0.Add(time.Hour))); diff != "" {
		t.Errorf("Volumes (-want +got):\n%s", diff)
	}
}

func TestGarbageLeavesOthersAlone(t *testing.T) {
	claims, runs, taskRuns := world([]build{{job: "unit", n: "1"}, {job: "unit", n: "2"}})
	claims[0].Labels = map[string]string{"app": "db"}
	deleting := metav1.NewTime(t0)
	claims[1].DeletionTimestamp = &deleting
	if got := Garbage(claims, runs, taskRuns, t0.Add(time.Hour)); len(got) > 0 {
		t.Errorf("Garbage = %v, want none: a claim not ours, and one being deleted", got)
	}
}

func TestDefaultClass(t *testing.T) {
	class := func(name string, minute int, annotations map[string]string) storagev1.StorageClass {
		return storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations, CreationTimestamp: metav1.NewTime(t0.Add(time.Duration(minute) * time.Minute))}}
	}
	def := map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}
	beta := map[string]string{"storageclass.beta.kubernetes.io/is-default-class": "true"}
	tests := []struct {
		name    string
		classes []storagev1.StorageClass
		want    string
	}{
		{"none", []storagev1.StorageClass{class("a", 0, nil)}, ""},
		{"the default", []storagev1.StorageClass{class("a", 0, nil), class("b", 0, def)}, "b"},
		{"the newest default", []storagev1.StorageClass{class("a", 5, beta), class("b", 0, def), class("c", 9, nil)}, "a"},
		{"by name among equals", []storagev1.StorageClass{class("b", 0, def), class("a", 0, def)}, "a"},
	}
	for _, tt := range tests {
		got := ""
		if sc := defaultClass(tt.classes); sc != nil {
			got = sc.Name
		}
		if got != tt.want {
			t.Errorf("%s: defaultClass = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestCanClone(t *testing.T) {
	tests := []struct {
		annotation string
		csi, want  bool
		why        string
	}{
		{"", true, true, ""},
		{"", false, false, "storage class sc (provisioner p) has no CSI driver, so its volumes cannot be cloned; if they can, annotate it concourse-ci.org/clone=true"},
		{"true", false, true, ""},
		{"false", true, false, "storage class sc is annotated concourse-ci.org/clone=false, so its volumes are not cloned"},
	}
	for _, tt := range tests {
		sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "sc"}, Provisioner: "p"}
		if tt.annotation != "" {
			sc.Annotations = map[string]string{AnnotationClone: tt.annotation}
		}
		if got, why := canClone(sc, tt.csi); got != tt.want || why != tt.why {
			t.Errorf("canClone(%q, csi %t) = %t, %q; want %t, %q", tt.annotation, tt.csi, got, why, tt.want, tt.why)
		}
	}
}

func TestAtLeast(t *testing.T) {
	source := func(request, capacity string) *corev1.PersistentVolumeClaim {
		c := &corev1.PersistentVolumeClaim{}
		c.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(request)}
		if capacity != "" {
			c.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(capacity)}
		}
		return c
	}
	tests := []struct {
		size   string
		source *corev1.PersistentVolumeClaim
		want   string
	}{
		{"2Gi", source("1Gi", "1Gi"), "2Gi"},
		{"1Gi", source("2Gi", ""), "2Gi"},
		{"100Mi", source("100Mi", "1Gi"), "1Gi"},
	}
	for _, tt := range tests {
		got := atLeast(resource.MustParse(tt.size), tt.source)
		if got.Cmp(resource.MustParse(tt.want)) != 0 {
			t.Errorf("atLeast(%s) = %s, want %s", tt.size, got.String(), tt.want)
		}
	}
}
