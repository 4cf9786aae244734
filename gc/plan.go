package gc

import (
	"cmp"
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tektoncd/pipeline/pkg/apis/pipeline"
	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"knative.dev/pkg/apis"

	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/pvc"
	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// Objects are what Plan decides on: the objects of builds in one namespace, as listed.
type Objects struct {
	// Runs are the builds' PipelineRuns.
	Runs []v1.PipelineRun
	// Verdicts are their verdict TaskRuns (runspec.VerdictTask), whose outcome is the
	// build's, and the TaskRuns of their last steps that hold the verdict
	// (runspec.LabelVerdict).
	Verdicts []v1.TaskRun
	// TaskRuns maps the name of each TaskRun of a build to its PipelineRun's: the tags
	// of the images a build pushed. Only Images needs it.
	TaskRuns map[string]string
	// Claims are the namespace's PersistentVolumeClaims, or at least its build volumes.
	Claims []corev1.PersistentVolumeClaim
	// Pods are the builds' pods: their steps', and the intercept and transfer pods.
	Pods []corev1.Pod
	// Secrets are the builds' Secrets of credentials their starter supplied, their
	// metadata alone (Plan reads no value).
	Secrets []corev1.Secret
	// Images are the tags of the namespace's repository in the image registry
	// (runspec.ImageTool) and their digests, listed before the TaskRuns; nil when the
	// target has no registry.
	Images map[string]string
	// Repository is that repository, HOST[:PORT][/PATH]/NAMESPACE, for the report.
	Repository string
	// CacheTags are the tags of the namespace's store of shared resource caches
	// (runspec.ResourceCacheRepository), listed before CacheIndexes; nil when the target
	// has no registry. CacheRepository is the store, for the report.
	CacheTags       map[string]CacheTag
	CacheRepository string
	// CacheIndexes are the teams' indexes of the store (runspec.LabelResourceCacheIndex).
	CacheIndexes []corev1.ConfigMap
}

// Rules are how long what a build leaves behind stays, beside its retention.
type Rules struct {
	Defaults Defaults
	// FailedGrace is how long the pods (and volume) of a job's latest ended build, when
	// it did not succeed, stay after it ended to be intercepted: Concourse's
	// --gc-failed-grace-period. Zero: until the job has a newer ended build.
	FailedGrace time.Duration
	// OneOffGrace is how long a one-off build's pods stay after it ended: Concourse's
	// --gc-one-off-grace-period.
	OneOffGrace time.Duration
	// OneOffsEnd deletes a one-off build once it has ended for OneOffGrace (at least
	// pvc.Grace, while its outputs may be downloaded): for a starter that keeps its
	// events elsewhere (the ATC's database). Otherwise one-off builds are kept, as
	// Concourse keeps their logs.
	OneOffsEnd bool
	// KeepPodsOf is an annotation (none: empty) that marks the runs whose pods their
	// starter keeps as long as it wants them, and deletes: the ATC's check runs, which
	// are their checks' containers while it wants them.
	KeepPodsOf string
	// ResourceCacheTTL is how long a shared resource cache stays once no build used it
	// (zero: as long as its team's index has it).
	ResourceCacheTTL time.Duration
}

// DefaultRules are Concourse's defaults: no retention unless a job sets one, pods of a
// job's latest failed build kept 120h, a one-off build's 5m; and shared resource caches
// kept 72h after their last use.
var DefaultRules = Rules{FailedGrace: 120 * time.Hour, OneOffGrace: 5 * time.Minute, ResourceCacheTTL: DefaultResourceCacheTTL}

// DefaultResourceCacheTTL is how long a shared resource cache stays unused, by default.
const DefaultResourceCacheTTL = 72 * time.Hour

// The kinds of what Plan decides on.
const (
	KindPipelineRun = "PipelineRun"
	KindPod         = "Pod"
	KindVolume      = "PersistentVolumeClaim"
	KindImage       = "Image"
	KindSecret      = "Secret"
)

// The reasons beside Retain's and the volumes' (pvc.Verdict).
const (
	ReasonOneOff       = "a one-off build: no job's build_log_retention covers it"
	ReasonEnded        = "its build ended (its events are archived first)"
	ReasonIntercept    = "its job's latest build, which did not succeed: kept to be intercepted until the failed grace period ends"
	ReasonOneOffGrace  = "a one-off build that ended within the one-off grace period"
	ReasonOneOffEnded  = "a one-off build that ended, whose events its starter keeps"
	ReasonSessionEnded = "its session ended"
	ReasonStarterKeeps = "its run's starter keeps its pods while it wants them (KeepPodsOf)"
	ReasonBuildGone    = "its build is gone"
	ReasonImageInUse   = "a build's TaskRun pushed it"
	ReasonImageShared  = "a kept tag has the same digest"
	ReasonRemade       = "made again under its name since it was listed"
	ReasonSecretOrphan = "credentials of a build whose run was never made (its starter stopped first)"
	ReasonReleased     = "released from its deleted build: " + pvc.ReasonRecent
)

// Item is one object decided on, and why.
type Item struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
	// Run is the PipelineRun of the build the object is of, if any.
	Run string `json:"run,omitempty"`
	// Build is that build as Concourse names it: team/pipeline/job #name.
	Build  string `json:"build,omitempty"`
	Reason string `json:"reason"`
	// UID is the object's, deleted under a precondition on it; Digest is an image's.
	UID    types.UID `json:"-"`
	Digest string    `json:"-"`
}

// Decisions are what Plan decided.
type Decisions struct {
	// Delete: builds beyond their retention (their TaskRuns, pods, volumes, Secrets and
	// archives go with them, by owner references), then pods, volumes and images.
	Delete []Item
	// Keep: every build, and the pods and volumes of ended builds that stay, with why.
	Keep []Item
	// Archive are the runs whose events are archived before their pods in Delete go.
	Archive []string
	// Release are the volumes of builds in Delete that are kept for their grace period
	// (pvc.ReasonRecent): they are released from their build first (no owner, and
	// pvc.AnnotationReleased), so that they do not go with it.
	Release []Item
}

// build is one PipelineRun as Plan sees it.
type build struct {
	run       *v1.PipelineRun
	key       jobKey
	oneOff    bool
	running   bool
	succeeded bool
	ended     time.Time
}

// jobKey identifies a job: team, pipeline, instance vars (JSON) and name.
type jobKey struct{ team, pipeline, instance, name string }

// Plan decides what of a namespace's builds may go at now, and why; it does no I/O. A
// job's builds (newest first: by creation, then by name) are kept as Retain says under
// the newest one's build_log_retention and the defaults, but for the build whose volume
// the job's next build clones its caches from. The pods of a kept build that ended go as
// Concourse's containers do (Rules); intercept and transfer pods go once their session
// ends; volumes as pvc.Volumes says; images whose TaskRun is gone; shared resource
// caches unused for Rules.ResourceCacheTTL (resourceCaches).
func Plan(objs Objects, rules Rules, now time.Time) Decisions {
	var d Decisions
	verdicts := pvc.VerdictsByRun(objs.Verdicts)
	builds := map[string]*build{}
	deleted := map[string]bool{}
	jobs := map[jobKey][]*build{}
	var order []jobKey
	for i := range objs.Runs {
		b := newBuild(&objs.Runs[i], verdicts[objs.Runs[i].Name])
		builds[b.run.Name] = b
		if b.oneOff {
			// Its volume, which its outputs are downloaded from, stays pvc.Grace.
			if rules.OneOffsEnd && !b.running && now.Sub(b.ended) >= max(rules.OneOffGrace, pvc.Grace) {
				deleted[b.run.Name] = true
				d.Delete = append(d.Delete, runItem(b, ReasonOneOffEnded))
			} else {
				d.Keep = append(d.Keep, runItem(b, ReasonOneOff))
			}
			continue
		}
		if _, ok := jobs[b.key]; !ok {
			order = append(order, b.key)
		}
		jobs[b.key] = append(jobs[b.key], b)
	}

	volumes := pvc.Volumes(objs.Claims, objs.Runs, objs.Verdicts, now)
	// The volumes a next build clones, or is cloning: their builds stay. (An older
	// source within its grace period goes with its build: a build that chose it a moment
	// ago starts with empty caches, and says so.)
	source := map[string]bool{}
	for _, v := range volumes {
		if !v.Delete && (v.Reason == pvc.ReasonSource || v.Reason == pvc.ReasonUnbound) {
			source[v.Name] = true
		}
	}

	latestEnded := map[string]bool{} // per job, its newest build that ended
	for _, key := range order {
		list := jobs[key]
		slices.SortFunc(list, newestFirst)
		in := make([]Build, len(list))
		for i, b := range list {
			in[i] = Build{Name: b.run.Name, Running: b.running, Succeeded: b.succeeded, Ended: b.ended}
		}
		for _, b := range list {
			if !b.running {
				latestEnded[b.run.Name] = true
				break
			}
		}
		for i, v := range Retain(in, rules.Defaults.Policy(retention(list[0].run)), now) {
			b := list[i]
			if v.Delete && source[pvc.ClaimName(b.run.Name)] {
				v.Delete, v.Reason = false, ReasonCacheSource
			}
			if v.Delete {
				deleted[b.run.Name] = true
				d.Delete = append(d.Delete, runItem(b, v.Reason))
			} else {
				d.Keep = append(d.Keep, runItem(b, v.Reason))
			}
		}
	}

	intercepted := map[string]bool{} // runs whose pods stay to be intercepted
	archive := map[string]bool{}
	for i := range objs.Pods {
		p := &objs.Pods[i]
		if p.DeletionTimestamp != nil {
			continue
		}
		if p.Labels[runspec.LabelIntercept] != "" || p.Labels[runspec.LabelTransfer] != "" || p.Labels[runspec.LabelCheckSession] != "" {
			if sessionEnded(p, now) {
				d.Delete = append(d.Delete, Item{Kind: KindPod, Name: p.Name, Reason: ReasonSessionEnded, UID: p.UID})
			}
			continue
		}
		b, ok := builds[p.Labels[pipeline.PipelineRunLabelKey]]
		if !ok || deleted[b.run.Name] || b.running || p.Labels[pipeline.PipelineRunUIDLabelKey] != string(b.run.UID) {
			continue
		}
		item := Item{Kind: KindPod, Name: p.Name, Run: b.run.Name, Build: b.name(), UID: p.UID}
		switch {
		case rules.KeepPodsOf != "" && b.run.Annotations[rules.KeepPodsOf] == "true":
			item.Reason = ReasonStarterKeeps
		case b.oneOff && now.Sub(b.ended) < rules.OneOffGrace:
			item.Reason = ReasonOneOffGrace
		case !b.oneOff && latestEnded[b.run.Name] && !b.succeeded && (rules.FailedGrace == 0 || now.Sub(b.ended) < rules.FailedGrace):
			item.Reason = ReasonIntercept
			intercepted[b.run.Name] = true
		default:
			item.Reason = ReasonEnded
			archive[b.run.Name] = true
			d.Delete = append(d.Delete, item)
			continue
		}
		d.Keep = append(d.Keep, item)
	}
	d.Archive = slices.Sorted(maps.Keys(archive))

	owner := map[string]*build{}
	for _, b := range builds {
		owner[pvc.ClaimName(b.run.Name)] = b
	}
	uids := map[string]types.UID{}
	for _, c := range objs.Claims {
		uids[c.Name] = c.UID
	}
	for _, v := range volumes {
		item := Item{Kind: KindVolume, Name: v.Name, Reason: v.Reason, UID: uids[v.Name]}
		if b, ok := owner[v.Name]; ok {
			if deleted[b.run.Name] {
				if !v.Delete && v.Reason == pvc.ReasonRecent {
					item.Run, item.Build, item.Reason = b.run.Name, b.name(), ReasonReleased
					d.Release = append(d.Release, item)
				}
				continue // it goes with its build
			}
			item.Run, item.Build = b.run.Name, b.name()
			if v.Delete && intercepted[b.run.Name] {
				v.Delete, item.Reason = false, ReasonIntercept
			}
		}
		if v.Delete {
			d.Delete = append(d.Delete, item)
		} else {
			d.Keep = append(d.Keep, item)
		}
	}

	// A build's Secrets (of credentials, named after its run, and of image pull
	// credentials) are made just before its run, then owned by it: one that has no run
	// after the grace period outlived a starter that stopped in between.
	for _, sec := range objs.Secrets {
		if _, ok := builds[strings.TrimSuffix(sec.Name, runspec.ImagePullSecretSuffix)]; ok || len(sec.OwnerReferences) > 0 || sec.DeletionTimestamp != nil || now.Sub(sec.CreationTimestamp.Time) < pvc.Grace {
			continue
		}
		d.Delete = append(d.Delete, Item{Kind: KindSecret, Name: sec.Name, Reason: ReasonSecretOrphan, UID: sec.UID})
	}

	gone, kept := images(objs, deleted)
	d.Delete, d.Keep = append(d.Delete, gone...), append(d.Keep, kept...)
	gone, kept = resourceCaches(objs, rules, now)
	d.Delete, d.Keep = append(d.Delete, gone...), append(d.Keep, kept...)
	sortItems(d.Delete)
	sortItems(d.Keep)
	sortItems(d.Release)
	return d
}

// images decides on the tags of the namespace's repository: a tag whose TaskRun is gone,
// or goes with its build, is deleted, unless a kept tag has its digest (a registry
// deletes a manifest with all its tags).
func images(objs Objects, deleted map[string]bool) (gone, kept []Item) {
	keptDigests := map[string]bool{}
	for _, tag := range slices.Sorted(maps.Keys(objs.Images)) {
		digest := objs.Images[tag]
		item := Item{Kind: KindImage, Name: objs.Repository + ":" + tag, Run: objs.TaskRuns[tag], Reason: ReasonBuildGone, Digest: digest}
		if run, ok := objs.TaskRuns[tag]; ok && !deleted[run] {
			keptDigests[digest] = true
			item.Reason = ReasonImageInUse
			kept = append(kept, item)
			continue
		}
		gone = append(gone, item)
	}
	gone = slices.DeleteFunc(gone, func(item Item) bool {
		if keptDigests[item.Digest] {
			item.Reason = ReasonImageShared
			kept = append(kept, item)
			return true
		}
		return false
	})
	return gone, kept
}

// newBuild is what Plan knows of run, whose verdict TaskRun (if any) is verdict.
func newBuild(run *v1.PipelineRun, verdict *v1.TaskRun) *build {
	value := func(k string) string {
		if v, ok := run.Annotations[k]; ok {
			return v
		}
		return run.Labels[k]
	}
	b := &build{
		run:    run,
		key:    jobKey{team: value(runspec.LabelTeam), pipeline: value(runspec.LabelPipeline), instance: run.Annotations[runspec.AnnotationInstanceVars], name: value(runspec.LabelJob)},
		oneOff: run.Annotations[runspec.AnnotationOneOff] == "true" || value(runspec.LabelJob) == "",
	}
	cond := run.Status.GetCondition(apis.ConditionSucceeded)
	if cond == nil || cond.IsUnknown() {
		b.running = true
		return b
	}
	b.ended = cond.LastTransitionTime.Inner.Time
	if t := run.Status.CompletionTime; t != nil {
		b.ended = t.Time
	}
	aborted := run.Spec.Status != "" || run.Annotations[pvc.AnnotationAborted] != ""
	b.succeeded = cond.IsTrue() && !aborted
	if verdict != nil && verdict.OwnerReferences != nil && ownedBy(verdict, run) {
		if o, ok := pvc.VerdictOutcome(verdict); ok {
			b.succeeded = o == runspec.Succeeded && !aborted
		}
	}
	return b
}

func ownedBy(tr *v1.TaskRun, run *v1.PipelineRun) bool {
	for _, o := range tr.OwnerReferences {
		if o.UID == run.UID {
			return true
		}
	}
	return false
}

// name is the build as Concourse names it.
func (b *build) name() string {
	n := b.run.Annotations[runspec.LabelBuild]
	if n == "" {
		n = b.run.Labels[runspec.LabelBuild]
	}
	if b.oneOff {
		return "one-off #" + n
	}
	return b.key.team + "/" + b.key.pipeline + "/" + b.key.name + " #" + n
}

func runItem(b *build, reason string) Item {
	return Item{Kind: KindPipelineRun, Name: b.run.Name, Run: b.run.Name, Build: b.name(), Reason: reason, UID: b.run.UID}
}

// retention is the job's build_log_retention its run carries (nil: none, or unreadable).
func retention(run *v1.PipelineRun) *concourse.BuildLogRetention {
	s, ok := run.Annotations[runspec.AnnotationBuildLogRetention]
	if !ok {
		return nil
	}
	var r concourse.BuildLogRetention
	if err := json.Unmarshal([]byte(s), &r); err != nil {
		return nil
	}
	return &r
}

// newestFirst orders a job's builds: the newest created first, then by build name
// (12.1, a rerun of 12, after 12, 13 after both).
func newestFirst(a, b *build) int {
	return cmp.Or(b.run.CreationTimestamp.Compare(a.run.CreationTimestamp.Time),
		compareBuildNames(b.run.Labels[runspec.LabelBuild], a.run.Labels[runspec.LabelBuild]),
		strings.Compare(a.run.Name, b.run.Name))
}

// compareBuildNames compares Concourse build names: numbers with optional rerun
// suffixes (N.M) compare by number; others as text, after them.
func compareBuildNames(a, b string) int {
	pa, oka := buildNumber(a)
	pb, okb := buildNumber(b)
	switch {
	case oka && okb:
		return slices.Compare(pa, pb)
	case oka != okb:
		if oka {
			return -1
		}
		return 1
	}
	return strings.Compare(a, b)
}

func buildNumber(s string) ([]int, bool) {
	var out []int
	for part := range strings.SplitSeq(s, ".") {
		n, err := strconv.Atoi(part)
		if err != nil || n < 0 {
			return nil, false
		}
		out = append(out, n)
	}
	return out, len(out) > 0
}

// sessionEnded says whether an intercept or transfer pod is done: ended, or past its
// deadline (which the kubelet of a lost node never enforces).
func sessionEnded(p *corev1.Pod, now time.Time) bool {
	if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return true
	}
	start := p.CreationTimestamp.Time
	if p.Status.StartTime != nil {
		start = p.Status.StartTime.Time
	}
	d := p.Spec.ActiveDeadlineSeconds
	return d != nil && now.Sub(start) > time.Duration(*d)*time.Second+time.Minute
}

// sortItems orders items by kind (runs, pods, volumes, images), then name.
func sortItems(items []Item) {
	rank := map[string]int{KindPipelineRun: 0, KindPod: 1, KindVolume: 2, KindSecret: 3, KindImage: 4, KindCacheEntry: 5, KindCacheImage: 6}
	slices.SortFunc(items, func(a, b Item) int {
		return cmp.Or(cmp.Compare(rank[a.Kind], rank[b.Kind]), strings.Compare(a.Name, b.Name))
	})
}
