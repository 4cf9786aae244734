package pvc

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tektoncd/pipeline/pkg/apis/pipeline"
	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"knative.dev/pkg/apis"

	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// Labels and annotations of build volumes. Team, pipeline, job and build are those the
// translator puts on a PipelineRun: as labels made label-safe, as annotations in full.
const (
	prefix = runspec.LabelPrefix
	// LabelVolume says what a claim holds: VolumeBuild for a build volume.
	LabelVolume = prefix + "volume"
	VolumeBuild = "build"
	// AnnotationClonedFrom names the claim a build volume was cloned from.
	AnnotationClonedFrom = prefix + "cloned-from"
	// AnnotationClone on a StorageClass says whether its volumes can be cloned, "true"
	// or "false", when its provisioner does not tell (see Prepare).
	AnnotationClone = prefix + "clone"
	// AnnotationAborted on a PipelineRun, set before an abort marker is written on its
	// volume, keeps the volume from being cloned: a marker written while the verdict
	// cleans, or after it, would abort the next build at once.
	AnnotationAborted = prefix + "aborted"
	// AnnotationReleased on a build volume is when (RFC 3339) its build was deleted while
	// it was a cache source within its grace period: it lost its owner then, and stays
	// for Grace after, for a build that may have chosen it to clone it.
	AnnotationReleased = prefix + "released"
)

// Grace is how long a volume younger than it is kept whatever it looks like: a claim
// made for a PipelineRun not created yet, and a cache source that a build being
// prepared may have just chosen.
const Grace = 10 * time.Minute

const (
	kindPipelineRun = "PipelineRun"
	kindClaim       = "PersistentVolumeClaim"
)

// ClaimName is the name of a PipelineRun's build volume: <run>-build, shortened with a
// hash of the run's name to at most 63 characters.
func ClaimName(run string) string {
	const suffix = "-build"
	if len(run)+len(suffix) <= 63 {
		return run + suffix
	}
	sum := sha256.Sum256([]byte(run))
	return strings.TrimRight(run[:63-len(suffix)-9], "-") + "-" + hex.EncodeToString(sum[:4]) + suffix
}

// workspace is the run's binding of the build volume, or nil.
func workspace(run *v1.PipelineRun) *v1.WorkspaceBinding {
	for i := range run.Spec.Workspaces {
		if run.Spec.Workspaces[i].Name == runspec.Workspace {
			return &run.Spec.Workspaces[i]
		}
	}
	return nil
}

// Request is the size and storage class ("": the cluster's default) a translated
// PipelineRun asks of its build volume, in its volumeClaimTemplate.
func Request(run *v1.PipelineRun) (resource.Quantity, string, error) {
	ws := workspace(run)
	if ws == nil || ws.VolumeClaimTemplate == nil {
		return resource.Quantity{}, "", fmt.Errorf("PipelineRun %s has no volumeClaimTemplate for its %q workspace", run.Name, runspec.Workspace)
	}
	spec := ws.VolumeClaimTemplate.Spec
	size, ok := spec.Resources.Requests[corev1.ResourceStorage]
	if !ok {
		return resource.Quantity{}, "", fmt.Errorf("the %q workspace of PipelineRun %s requests no storage size", runspec.Workspace, run.Name)
	}
	return size, deref(spec.StorageClassName), nil
}

// BuildClaim is the build volume of a translated PipelineRun, cloned from the claim
// source unless it is empty. It has the run's volumeClaimTemplate's labels and access
// modes, the run's team, pipeline, job and build annotations, and no owner (Own, once
// the run exists).
func BuildClaim(run *v1.PipelineRun, size resource.Quantity, storageClass string, source string) *corev1.PersistentVolumeClaim {
	labels := map[string]string{}
	annotations := map[string]string{}
	var spec corev1.PersistentVolumeClaimSpec
	if ws := workspace(run); ws != nil && ws.VolumeClaimTemplate != nil {
		for k, v := range ws.VolumeClaimTemplate.Labels {
			labels[k] = v
		}
		spec.AccessModes = slices.Clone(ws.VolumeClaimTemplate.Spec.AccessModes)
		spec.VolumeMode = ws.VolumeClaimTemplate.Spec.VolumeMode
	} else {
		for k, v := range run.Labels {
			labels[k] = v
		}
	}
	labels[runspec.LabelManagedBy] = runspec.ManagedBy
	labels[LabelVolume] = VolumeBuild
	for _, k := range []string{runspec.LabelTeam, runspec.LabelPipeline, runspec.LabelJob, runspec.LabelBuild, runspec.AnnotationInstanceVars, runspec.AnnotationOneOff} {
		if v, ok := run.Annotations[k]; ok {
			annotations[k] = v
		}
	}
	if len(spec.AccessModes) == 0 {
		spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
	}
	spec.Resources = corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}}
	if storageClass != "" {
		spec.StorageClassName = &storageClass
	}
	if source != "" {
		annotations[AnnotationClonedFrom] = source
		spec.DataSource = &corev1.TypedLocalObjectReference{Kind: kindClaim, Name: source}
	}
	return &corev1.PersistentVolumeClaim{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: kindClaim},
		ObjectMeta: metav1.ObjectMeta{
			Name:        ClaimName(run.Name),
			Namespace:   run.Namespace,
			Labels:      labels,
			Annotations: annotations,
		},
		Spec: spec,
	}
}

// BindBuildVolume binds the run's build workspace to the claim, in place of its
// volumeClaimTemplate.
func BindBuildVolume(run *v1.PipelineRun, claim string) error {
	ws := workspace(run)
	if ws == nil {
		return fmt.Errorf("PipelineRun %s has no %q workspace", run.Name, runspec.Workspace)
	}
	*ws = v1.WorkspaceBinding{Name: runspec.Workspace, PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}
	return nil
}

// OwnerReference makes a build volume die with its PipelineRun (which must exist: it
// needs the run's UID).
func OwnerReference(run *v1.PipelineRun) metav1.OwnerReference {
	controller := true
	return metav1.OwnerReference{
		APIVersion: v1.SchemeGroupVersion.String(),
		Kind:       kindPipelineRun,
		Name:       run.Name,
		UID:        run.UID,
		Controller: &controller,
	}
}

// job identifies a Concourse job: the full names of its annotations, else its labels.
// job is a job's identity: its team's, pipeline's and own names, and the instance vars
// of an instanced pipeline (JSON).
type job struct{ team, pipeline, instance, name string }

func jobOf(m metav1.ObjectMeta) (job, bool) {
	value := func(k string) string {
		if v, ok := m.Annotations[k]; ok {
			return v
		}
		return m.Labels[k]
	}
	j := job{team: value(runspec.LabelTeam), pipeline: value(runspec.LabelPipeline), instance: m.Annotations[runspec.AnnotationInstanceVars], name: value(runspec.LabelJob)}
	return j, j.name != ""
}

// source is a build volume that may be cloned: its build finished cleanly at finished.
type source struct {
	claim    *corev1.PersistentVolumeClaim
	job      job
	finished time.Time
}

// builds maps the build volumes among claims to their PipelineRuns.
type builds struct {
	runs     map[string]*v1.PipelineRun
	verdicts map[string]*v1.TaskRun
}

func index(runs []v1.PipelineRun, taskRuns []v1.TaskRun) builds {
	b := builds{runs: map[string]*v1.PipelineRun{}, verdicts: VerdictsByRun(taskRuns)}
	for i := range runs {
		b.runs[ClaimName(runs[i].Name)] = &runs[i]
	}
	return b
}

// VerdictsByRun are the verdict TaskRuns among taskRuns, by their PipelineRun's name:
// the verdict task's, or the build's last step's when that holds the verdict
// (runspec.Verdict.Fused); the one that recorded the build's outcome (they never both
// do: the verdict task runs when the last step did not succeed).
func VerdictsByRun(taskRuns []v1.TaskRun) map[string]*v1.TaskRun {
	verdicts := map[string]*v1.TaskRun{}
	for i := range taskRuns {
		tr := &taskRuns[i]
		if _, fused := verdictResults(tr); !fused && tr.Labels[pipeline.PipelineTaskLabelKey] != runspec.VerdictTask {
			continue
		}
		run := tr.Labels[pipeline.PipelineRunLabelKey]
		if v, ok := verdicts[run]; ok && recorded(v) {
			continue
		}
		verdicts[run] = tr
	}
	return verdicts
}

// verdictResults is the result of a TaskRun that holds the build's outcome, and whether
// it is the build's last step, which holds the verdict (runspec.LabelVerdict).
func verdictResults(tr *v1.TaskRun) (string, bool) {
	if tr.Labels[runspec.LabelVerdict] == runspec.VerdictFused {
		return runspec.ResultVerdict, true
	}
	return runspec.ResultOutcome, false
}

// recorded says whether a verdict's TaskRun holds the build's outcome.
func recorded(tr *v1.TaskRun) bool {
	_, ok := VerdictOutcome(tr)
	return ok
}

// VerdictOutcome is the build's outcome that a verdict TaskRun (the verdict task, or the
// build's last step when it holds the verdict) recorded, if it did.
func VerdictOutcome(tr *v1.TaskRun) (runspec.Outcome, bool) {
	name, _ := verdictResults(tr)
	for _, r := range tr.Status.Results {
		if r.Name == name {
			return runspec.ParseOutcome(r.Value.StringVal)
		}
	}
	return "", false
}

// run is the PipelineRun of a build volume, if it is there.
func (b builds) run(c *corev1.PersistentVolumeClaim) (*v1.PipelineRun, bool) {
	run, ok := b.runs[c.Name]
	if !ok || !ownedBy(c.OwnerReferences, run) {
		return nil, false
	}
	return run, true
}

// ownedBy says whether refs name no PipelineRun but run.
func ownedBy(refs []metav1.OwnerReference, run *v1.PipelineRun) bool {
	for _, o := range refs {
		if o.Kind == kindPipelineRun && o.UID != run.UID {
			return false
		}
	}
	return true
}

// isBuildVolume says whether c is a build volume this package made, and whose.
func isBuildVolume(c *corev1.PersistentVolumeClaim) (job, bool) {
	if c.Labels[LabelVolume] != VolumeBuild || c.Labels[runspec.LabelManagedBy] != runspec.ManagedBy || c.DeletionTimestamp != nil {
		return job{}, false
	}
	return jobOf(c.ObjectMeta)
}

// sources are the build volumes that may be cloned, newest first: bound volumes of
// builds that were not cancelled nor aborted and whose verdict recorded an outcome and no error (the
// runner's verdict leaves only caches/ on the volume, and says when it could not).
func (b builds) sources(claims []corev1.PersistentVolumeClaim) []source {
	var out []source
	for i := range claims {
		c := &claims[i]
		j, ok := isBuildVolume(c)
		if !ok || c.Status.Phase != corev1.ClaimBound || oneOff(c.ObjectMeta) {
			continue
		}
		run, ok := b.run(c)
		if !ok || run.Spec.Status != "" || run.Annotations[AnnotationAborted] != "" {
			continue
		}
		verdict, ok := b.verdicts[run.Name]
		if !ok || !ownedBy(verdict.OwnerReferences, run) {
			continue
		}
		if finished, ok := clean(verdict); ok {
			out = append(out, source{claim: c, job: j, finished: finished})
		}
	}
	slices.SortFunc(out, func(a, b source) int {
		return cmp.Or(b.finished.Compare(a.finished),
			b.claim.CreationTimestamp.Compare(a.claim.CreationTimestamp.Time),
			strings.Compare(a.claim.Name, b.claim.Name))
	})
	return out
}

// clean says whether a verdict finished with an outcome and no error, and when.
func clean(verdict *v1.TaskRun) (time.Time, bool) {
	cond := verdict.Status.GetCondition(apis.ConditionSucceeded)
	if cond == nil || cond.IsUnknown() {
		return time.Time{}, false
	}
	outcomeResult, fused := verdictResults(verdict)
	errorResult := runspec.ResultError
	if fused {
		errorResult = runspec.ResultVerdictError
	}
	var outcome bool
	for _, r := range verdict.Status.Results {
		switch r.Name {
		case outcomeResult:
			_, outcome = runspec.ParseOutcome(r.Value.StringVal)
		case errorResult:
			return time.Time{}, false
		}
	}
	if !outcome {
		return time.Time{}, false
	}
	if t := verdict.Status.CompletionTime; t != nil {
		return t.Time, true
	}
	return cond.LastTransitionTime.Inner.Time, true
}

// CacheSource is the claim the build volume next should be cloned from: the volume of
// the job's build that finished cleanly last (any outcome: Concourse keeps a task's
// cache whatever its exit status), of next's storage class and volume mode. claims,
// runs and taskRuns are the namespace's, or at least the job's.
func CacheSource(claims []corev1.PersistentVolumeClaim, runs []v1.PipelineRun, taskRuns []v1.TaskRun, next *corev1.PersistentVolumeClaim) (string, bool) {
	want, ok := jobOf(next.ObjectMeta)
	if !ok || oneOff(next.ObjectMeta) {
		return "", false
	}
	for _, s := range index(runs, taskRuns).sources(claims) {
		if s.job == want && compatible(s.claim, next) {
			return s.claim.Name, true
		}
	}
	return "", false
}

// compatible says whether b can be cloned from a: CSI clones stay within a storage
// class and a volume mode. (A smaller size is made up for by Prepare.)
func compatible(a, b *corev1.PersistentVolumeClaim) bool {
	mode := func(c *corev1.PersistentVolumeClaim) corev1.PersistentVolumeMode {
		if c.Spec.VolumeMode == nil {
			return corev1.PersistentVolumeFilesystem
		}
		return *c.Spec.VolumeMode
	}
	return deref(a.Spec.StorageClassName) == deref(b.Spec.StorageClassName) && mode(a) == mode(b)
}

// Garbage are the build volumes among claims that may be deleted, sorted: those whose
// Volumes verdict is Delete.
func Garbage(claims []corev1.PersistentVolumeClaim, runs []v1.PipelineRun, taskRuns []v1.TaskRun, now time.Time) []string {
	var out []string
	for _, v := range Volumes(claims, runs, taskRuns, now) {
		if v.Delete {
			out = append(out, v.Name)
		}
	}
	return out
}

// Verdict is what becomes of one build volume, and why.
type Verdict struct {
	Name   string
	Delete bool
	Reason string
}

// The reasons a build volume is kept or deleted.
const (
	ReasonSource     = "the job's newest cache source: its next build clones it"
	ReasonRecent     = "a cache source that finished within the grace period"
	ReasonUnbound    = "the source of a clone not yet bound"
	ReasonNoRunYet   = "its build's run is not there (yet), and it is younger than the grace period"
	ReasonReleased   = "its build is gone, but it was a cache source within the grace period, which a build may be cloning"
	ReasonRunning    = "its build is running"
	ReasonDownload   = "a one-off build's, whose outputs may still be downloaded"
	ReasonSuperseded = "its job has a newer cache source"
	ReasonNoSource   = "not a cache source (its build ended without a clean verdict, or was aborted)"
	ReasonNoRun      = "its build's run is gone"
)

// Volumes decides, for each build volume among claims in name order, whether it may be
// deleted. Kept: per job, the newest cache source and those that finished within Grace
// of now; the volumes of builds still running; volumes younger than Grace whose run is
// not there (yet); a one-off build's within Grace of its end; and the sources of clones
// not yet bound.
func Volumes(claims []corev1.PersistentVolumeClaim, runs []v1.PipelineRun, taskRuns []v1.TaskRun, now time.Time) []Verdict {
	b := index(runs, taskRuns)
	keep := map[string]string{}
	superseded := map[string]bool{}
	newest := map[job]bool{}
	for _, s := range b.sources(claims) {
		switch {
		case !newest[s.job]:
			keep[s.claim.Name] = ReasonSource
		case now.Sub(s.finished) < Grace:
			keep[s.claim.Name] = ReasonRecent
		default:
			superseded[s.claim.Name] = true
		}
		newest[s.job] = true
	}
	for i := range claims {
		c := &claims[i]
		if _, ok := isBuildVolume(c); !ok {
			continue
		}
		run, ok := b.run(c)
		switch {
		case !ok && released(c, now):
			keep[c.Name] = ReasonReleased
		case !ok && now.Sub(c.CreationTimestamp.Time) < Grace:
			keep[c.Name] = ReasonNoRunYet
		case ok && !finished(run):
			keep[c.Name] = ReasonRunning
		case ok && oneOff(c.ObjectMeta) && now.Sub(endOf(run)) < Grace:
			keep[c.Name] = ReasonDownload
		}
		if ds := c.Spec.DataSource; ds != nil && ds.Kind == kindClaim && c.Status.Phase != corev1.ClaimBound {
			keep[ds.Name] = ReasonUnbound
		}
	}
	var out []Verdict
	for i := range claims {
		c := &claims[i]
		if _, ok := isBuildVolume(c); !ok {
			continue
		}
		v := Verdict{Name: c.Name, Reason: keep[c.Name]}
		if v.Reason == "" {
			v.Delete = true
			_, hasRun := b.run(c)
			switch {
			case superseded[c.Name]:
				v.Reason = ReasonSuperseded
			case !hasRun:
				v.Reason = ReasonNoRun
			default:
				v.Reason = ReasonNoSource
			}
		}
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b Verdict) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// released says whether c lost its build within Grace of now (AnnotationReleased).
func released(c *corev1.PersistentVolumeClaim, now time.Time) bool {
	t, err := time.Parse(time.RFC3339, c.Annotations[AnnotationReleased])
	return err == nil && now.Sub(t) < Grace
}

// oneOff says whether a run or volume is a one-off build's (runspec.AnnotationOneOff).
func oneOff(m metav1.ObjectMeta) bool {
	return m.Annotations[runspec.AnnotationOneOff] == "true"
}

// endOf is when a finished run ended.
func endOf(run *v1.PipelineRun) time.Time {
	if t := run.Status.CompletionTime; t != nil {
		return t.Time
	}
	return run.Status.GetCondition(apis.ConditionSucceeded).LastTransitionTime.Inner.Time
}

func finished(run *v1.PipelineRun) bool {
	cond := run.Status.GetCondition(apis.ConditionSucceeded)
	return cond != nil && !cond.IsUnknown()
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
