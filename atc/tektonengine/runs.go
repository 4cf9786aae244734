package tektonengine

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"

	"code.cloudfoundry.org/lager/v3/lagerctx"
	"github.com/concourse/concourse/atc/db"
	"github.com/concourse/concourse/vars"
	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	"github.com/tektoncd/pipeline/pkg/client/clientset/versioned"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/concourse-tekton/concourse-tekton/concourse/event"
	ctvars "github.com/concourse-tekton/concourse-tekton/concourse/vars"
	"github.com/concourse-tekton/concourse-tekton/pvc"
	"github.com/concourse-tekton/concourse-tekton/tektonrun"
	"github.com/concourse-tekton/concourse-tekton/tektonrun/buildevents"
	"github.com/concourse-tekton/concourse-tekton/tektonrun/podexec"
)

// Runs starts builds on the cluster. The stepper's one effect on it, behind an interface
// so that the stepper is tested without a cluster.
type Runs interface {
	// Start runs a build's plan (atc.Plan JSON), or attaches to the build's run when it
	// exists: starting a build twice gives one run.
	Start(ctx context.Context, plan []byte, build BuildRef) (Run, error)
}

// Run is one build's run on the cluster.
type Run interface {
	// Name names the run in messages: namespace/name of its PipelineRun.
	Name() string
	// Attached says the run existed before Start: some of its events may be the
	// build's already.
	Attached() bool
	// Warnings say, a sentence each, what the build will lack (none when attached).
	Warnings() []string
	// Events delivers the run's events in order, from its first, until it has ended, and
	// returns its final status. An error of emit stops it and is returned. It returns
	// an error wrapping ErrRunGone when the run was deleted.
	Events(ctx context.Context, emit func(buildevents.Event) error) (event.BuildStatus, error)
	// Abort aborts the run as Concourse aborts a build: running steps are interrupted,
	// their on_abort and ensure hooks run, then the run ends aborted. Aborting a run that
	// ended does nothing.
	Abort(ctx context.Context) error
	// CheckedVersion is the latest version a check of the run found (nil: none), once
	// the run has ended.
	CheckedVersion(ctx context.Context) (map[string]string, error)
	// Delete deletes the run from the cluster, with its TaskRuns and pods.
	Delete(ctx context.Context) error
	// Worker is the worker the run is on ("": not known).
	Worker() string
	// TaskCaches lists, by step name, the paths of the task caches the run's tasks used,
	// once it has ended, when it was started with records of them (BuildRef.TaskCaches).
	TaskCaches(ctx context.Context) (map[string][]string, error)
	// Outputs hands save, one after the other, each of the outputs names of a one-off
	// build that has ended, as a tar stream of its contents; one the build never made
	// is left out. An error of save stops it and is returned.
	Outputs(ctx context.Context, names []string, save func(name string, tar io.Reader) error) error
}

// ErrRunGone says a build's run was deleted from the cluster while the build ran.
var ErrRunGone = errors.New("the build's PipelineRun was deleted")

// BuildRef is the build a run is started for.
type BuildRef struct {
	// Meta names the build: team, pipeline, job, and its name (a job build's) or ID (a
	// one-off build's). The run's name is made of them.
	Meta tektonrun.BuildMeta
	// ID is the build's ID in the ATC's database. It is recorded on the run, so that a
	// run of another build with the same names (of an earlier pipeline of the same name,
	// of another team, of another ATC using the namespace) is never taken for this one.
	ID int
	// Started is when the ATC started the build (zero: unknown).
	Started time.Time
	// Credentials resolve the build's ((vars)): its RunState, which looks them up in the
	// ATC's credential manager and the pipeline's var_sources, and tracks them for
	// redaction, as Concourse's steps do. The values are looked up before the run is
	// created, and given to its steps in a Secret of the run (tektonrun.WithCredentials).
	// nil: the steps read them from the namespace's Secrets.
	Credentials vars.Variables
	// OneOff says the build is one-off (fly execute's: it has no job), run as one
	// (tektonrun.OneOff): Uploads supply its artifact inputs (nil: it has none).
	OneOff  bool
	Uploads podexec.ArtifactSource
	// TaskCaches, when not nil, are the ATC's records of the job's task caches
	// (tektonrun.WithTaskCaches): its tasks clear the caches whose records are gone, and
	// report the ones they used (Run.TaskCaches). nil: the caches are not recorded.
	TaskCaches map[string]map[string]int
}

// team is the build's team's name (main when the ref names none, as a one-off build's
// name does).
func (r BuildRef) team() string {
	return cmp.Or(r.Meta.Team, "main")
}

// WithCredentials is the ref with the build's credentials resolved by creds (see
// BuildRef.Credentials).
func (r BuildRef) WithCredentials(creds vars.Variables) BuildRef {
	r.Credentials = creds
	return r
}

// AnnotationBuildID records on a PipelineRun the ID of the ATC build it runs.
const AnnotationBuildID = "concourse-ci.org/atc-build-id"

// AnnotationCheck marks the PipelineRun of a check build ("true"), which lives as long
// as the ATC wants its container: the target's worker deletes it once the ATC marks
// the container destroying (tektonworker.Reporter), as a worker destroys a check
// container.
const AnnotationCheck = "concourse-ci.org/atc-check"

// clockSkew is how much earlier than its build's start a run may have been created (by
// the cluster's clock, the start being the database's) and still be that build's: a run
// created long before the build started belongs to another build of the same names.
const clockSkew = time.Minute

// NewRuns returns the Runs of a backend: each build runs as one PipelineRun of the
// backend's target. builds, when not nil, is the ATC's database of builds: a run named
// after a build that belongs to a build the database no longer has (its pipeline was
// destroyed and set again, so its builds are numbered from 1 again) is deleted, and the
// build gets a run of its own; without it such a build errors, saying so.
func NewRuns(backend *tektonrun.Backend, builds Builds) Runs {
	return &backendRuns{backend: backend, tekton: backend.Client().Target().Tekton, builds: builds, gone: DefaultGoneTimeout}
}

// Builds finds a build of the ATC by its ID: db.BuildFactory.
type Builds interface {
	Build(id int) (db.Build, bool, error)
}

// DefaultGoneTimeout is how long Start waits for a stale run to be deleted.
const DefaultGoneTimeout = 2 * time.Minute

type backendRuns struct {
	backend *tektonrun.Backend
	tekton  versioned.Interface
	builds  Builds
	// gone is how long a stale run may take to be deleted.
	gone time.Duration
}

// staleRunError says a run named after a build runs another build of the ATC.
type staleRunError struct {
	owner int
	msg   string
}

func (e *staleRunError) Error() string { return e.msg }

var _ Runs = (*backendRuns)(nil)

func (r *backendRuns) Start(ctx context.Context, plan []byte, ref BuildRef) (Run, error) {
	var opts []tektonrun.RunOption
	if ref.Credentials != nil {
		opts = append(opts, tektonrun.WithCredentials(atcVars{ref.Credentials}))
	}
	if ref.TaskCaches != nil {
		opts = append(opts, tektonrun.WithTaskCaches(ref.TaskCaches))
	}
	if ref.OneOff {
		opts = append(opts, tektonrun.OneOff(ref.Uploads))
	}
	b, err := r.backend.RunPlan(ctx, plan, ref.Meta, opts...)
	if err != nil {
		return nil, err
	}
	err = r.claim(ctx, b, ref)
	var stale *staleRunError
	if errors.As(err, &stale) && r.builds != nil {
		if gone, findErr := r.ownerGone(stale.owner); findErr != nil {
			return nil, fmt.Errorf("%w (looking build %d up: %v)", err, stale.owner, findErr)
		} else if gone {
			if err := r.replace(ctx, b); err != nil {
				return nil, err
			}
			if b, err = r.backend.RunPlan(ctx, plan, ref.Meta, opts...); err != nil {
				return nil, err
			}
			err = r.claim(ctx, b, ref)
		}
	}
	if err != nil {
		return nil, err
	}
	return &backendRun{build: b, tekton: r.tekton}, nil
}

// ownerGone tells whether the ATC no longer has build id.
func (r *backendRuns) ownerGone(id int) (bool, error) {
	_, found, err := r.builds.Build(id)
	return !found && err == nil, err
}

// replace deletes the run of a build the ATC no longer has, with its TaskRuns, pods and
// volume, and waits until the run is gone, so that its name can be used again. The
// volume, which Kubernetes deletes only after the run, is deleted at once: a volume left
// of the old run would otherwise be there, its deletion not yet begun, when the new run's
// is made, and be taken for it (a volume being deleted is waited for when the new run is
// submitted).
func (r *backendRuns) replace(ctx context.Context, b *tektonrun.Build) error {
	runs := r.tekton.TektonV1().PipelineRuns(b.Namespace)
	old, err := runs.Get(ctx, b.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	} else if err != nil {
		return fmt.Errorf("reading PipelineRun %s/%s of a build the ATC no longer has: %w", b.Namespace, b.Name, err)
	}
	policy := metav1.DeletePropagationForeground
	uid := old.UID
	err = runs.Delete(ctx, b.Name, metav1.DeleteOptions{PropagationPolicy: &policy, Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting PipelineRun %s/%s of a build the ATC no longer has: %w", b.Namespace, b.Name, err)
	}
	if err := r.deleteVolume(ctx, b, uid); err != nil {
		return err
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, r.gone, true, func(ctx context.Context) (bool, error) {
		pr, err := runs.Get(ctx, b.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return err == nil && pr.UID != uid, err
	})
	if err != nil {
		return fmt.Errorf("waiting for PipelineRun %s/%s of a build the ATC no longer has to be deleted: %w", b.Namespace, b.Name, err)
	}
	return nil
}

// deleteVolume deletes the build volume of the run whose UID is owner, if it has one.
func (r *backendRuns) deleteVolume(ctx context.Context, b *tektonrun.Build, owner types.UID) error {
	claims := r.backend.Client().Target().Kube.CoreV1().PersistentVolumeClaims(b.Namespace)
	name := pvc.ClaimName(b.Name)
	c, err := claims.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	} else if err != nil {
		return fmt.Errorf("reading build volume %s/%s of a build the ATC no longer has: %w", b.Namespace, name, err)
	}
	if c.DeletionTimestamp != nil || !slices.ContainsFunc(c.OwnerReferences, func(o metav1.OwnerReference) bool { return o.UID == owner }) {
		return nil
	}
	err = claims.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &c.UID}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting build volume %s/%s of a build the ATC no longer has: %w", b.Namespace, name, err)
	}
	return nil
}

// atcVars are the ATC's vars as tektonrun looks them up: the same references, in
// Concourse's own type.
type atcVars struct{ vars vars.Variables }

var _ ctvars.Variables = atcVars{}

func (v atcVars) Get(ref ctvars.Reference) (any, bool, error) {
	return v.vars.Get(vars.Reference{Source: ref.Source, Path: ref.Path, Fields: ref.Fields})
}

// createdBefore tells whether a run was created before its build started (by more than
// the clock skew): a run of another build of the same names.
func createdBefore(pr *v1.PipelineRun, ref BuildRef) bool {
	return !ref.Started.IsZero() && pr.CreationTimestamp.Time.Before(ref.Started.Add(-clockSkew))
}

// claim records the build's ID on its run, after making sure that a run that existed is
// this build's.
func (r *backendRuns) claim(ctx context.Context, b *tektonrun.Build, ref BuildRef) error {
	runs := r.tekton.TektonV1().PipelineRuns(b.Namespace)
	pr, err := runs.Get(ctx, b.Name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading PipelineRun %s/%s: %w", b.Namespace, b.Name, err)
	}
	id := strconv.Itoa(ref.ID)
	owner := pr.Annotations[AnnotationBuildID]
	fix := fmt.Sprintf("delete it (kubectl -n %s delete pipelinerun %s) if that build is gone, or run this web node's builds in a namespace of their own (--tekton-namespace)", b.Namespace, b.Name)
	switch {
	case owner == id:
		return nil
	case owner != "":
		msg := fmt.Sprintf("PipelineRun %s/%s, named after this build, runs build %s of the ATC, not this build (%d): %s", b.Namespace, b.Name, owner, ref.ID, fix)
		if n, err := strconv.Atoi(owner); err == nil {
			return &staleRunError{owner: n, msg: msg}
		}
		return errors.New(msg)
	case b.Existed && createdBefore(pr, ref):
		return fmt.Errorf("PipelineRun %s/%s, named after this build, was created at %s, before the build started (%s): it is another build's; %s",
			b.Namespace, b.Name, pr.CreationTimestamp.UTC().Format(time.RFC3339), ref.Started.UTC().Format(time.RFC3339), fix)
	}
	annotations := map[string]string{AnnotationBuildID: id}
	if ref.Meta.Check {
		annotations[AnnotationCheck] = "true"
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": annotations}})
	if err != nil {
		return err
	}
	if _, err := runs.Patch(ctx, b.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("recording build %d on PipelineRun %s/%s: %w", ref.ID, b.Namespace, b.Name, err)
	}
	return nil
}

type backendRun struct {
	build  *tektonrun.Build
	tekton versioned.Interface
}

var _ Run = (*backendRun)(nil)

func (r *backendRun) Name() string       { return r.build.Namespace + "/" + r.build.Name }
func (r *backendRun) Attached() bool     { return r.build.Existed }
func (r *backendRun) Warnings() []string { return r.build.Warnings }

func (r *backendRun) Events(ctx context.Context, emit func(buildevents.Event) error) (event.BuildStatus, error) {
	status, err := r.build.Events(ctx, buildevents.Cursor{}, emit)
	if err != nil && ctx.Err() == nil {
		_, getErr := r.tekton.TektonV1().PipelineRuns(r.build.Namespace).Get(ctx, r.build.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(getErr) {
			return "", fmt.Errorf("%w: %s", ErrRunGone, r.Name())
		}
	}
	return status, err
}

func (r *backendRun) Abort(ctx context.Context) error { return r.build.Abort(ctx) }

func (r *backendRun) CheckedVersion(ctx context.Context) (map[string]string, error) {
	res, err := r.build.Wait(ctx)
	if err != nil {
		return nil, err
	}
	return res.Version, nil
}

func (r *backendRun) Worker() string { return "" }

func (r *backendRun) TaskCaches(ctx context.Context) (map[string][]string, error) {
	return r.build.TaskCaches(ctx)
}

func (r *backendRun) Outputs(ctx context.Context, names []string, save func(string, io.Reader) error) error {
	artifacts, err := r.build.Artifacts(ctx)
	if err != nil {
		return err
	}
	defer func() {
		if err := artifacts.Close(ctx); err != nil {
			lagerctx.FromContext(ctx).Error("failed-to-delete-transfer-pod", err)
		}
	}()
	for _, name := range names {
		if err := saveOutput(ctx, artifacts, name, save); err != nil {
			return err
		}
	}
	return nil
}

// saveOutput hands save the output's tar stream as it is downloaded, once its first
// bytes have come: an output the build never made is not handed over.
func saveOutput(ctx context.Context, artifacts *podexec.Artifacts, name string, save func(string, io.Reader) error) error {
	pr, pw := io.Pipe()
	downloaded := make(chan error, 1)
	go func() {
		err := artifacts.Download(ctx, name, pw)
		pw.CloseWithError(cmp.Or(err, io.EOF))
		downloaded <- err
	}()
	stream := bufio.NewReader(pr)
	if _, err := stream.Peek(1); err != nil {
		pr.Close()
		err := <-downloaded
		if errors.Is(err, podexec.ErrNoArtifact) {
			return nil
		}
		return cmp.Or(err, fmt.Errorf("downloading %s: the stream is empty", name))
	}
	saveErr := save(name, stream)
	// Whatever save left unread is not wanted.
	pr.CloseWithError(errors.New("the output's stream was not read to its end"))
	if err := <-downloaded; saveErr == nil && err != nil {
		return fmt.Errorf("downloading %s: %w", name, err)
	}
	return saveErr
}

func (r *backendRun) Delete(ctx context.Context) error {
	policy := metav1.DeletePropagationBackground
	err := r.tekton.TektonV1().PipelineRuns(r.build.Namespace).Delete(ctx, r.build.Name, metav1.DeleteOptions{PropagationPolicy: &policy})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
