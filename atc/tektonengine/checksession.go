package tektonengine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"code.cloudfoundry.org/lager/v3"
	"github.com/concourse/concourse/atc"
	"github.com/concourse/concourse/atc/db"

	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/concourse/event"
	"github.com/concourse-tekton/concourse-tekton/runspec"
	"github.com/concourse-tekton/concourse-tekton/tektonrun"
	"github.com/concourse-tekton/concourse-tekton/tektonrun/buildevents"
)

// CheckSessions compile the checks of resources to run in their check sessions'
// containers (tektonrun.SessionCheck): *Pool.
type CheckSessions interface {
	// PrepareCheck compiles a check build's plan to run in a check session on the worker
	// the build would run on, preferring one has says has the session's container; an
	// error wrapping tektonrun.ErrNoSession says the check runs as a build of its own.
	PrepareCheck(ctx context.Context, planJSON []byte, ref BuildRef, has func(worker string) bool) (*WorkerCheck, error)
}

var _ CheckSessions = (*Pool)(nil)

// WorkerCheck is a check compiled for a check session on Worker.
type WorkerCheck struct {
	SessionCheck
	Worker string
}

// SessionCheck is a check compiled for a check session: *tektonrun.SessionCheck on its
// target (targetCheck).
type SessionCheck interface {
	// Hash is what the session's pod is made of; NewName names a new one.
	Hash() string
	NewName() string
	// Start starts the session pod name.
	Start(ctx context.Context, name string) error
	// Run runs the check in the session pod name (tektonrun.SessionCheck.Run): an error
	// wrapping tektonrun.ErrSessionGone, before anything else, when the pod can take no
	// check.
	Run(ctx context.Context, name string, emit func(buildevents.Event) error) (runspec.SessionResult, error)
	// Delete deletes the container name of the session: its pod, or the run of a check
	// that had the container before (DeleteCheckRun).
	Delete(ctx context.Context, name string) error
}

// targetCheck is a check session's check on its target.
type targetCheck struct {
	*tektonrun.SessionCheck
	client *tektonrun.Client
}

func (c targetCheck) Delete(ctx context.Context, name string) error {
	if deleted, err := c.client.DeleteSession(ctx, name); deleted || err != nil {
		return err
	}
	_, err := DeleteCheckRun(ctx, c.client.Target(), name)
	return err
}

// PrepareCheck compiles the check for the worker Pool chooses, as it chooses one for a
// build, but that a worker with the session's container (has, asked only when there is
// a choice) comes first, as
// Concourse's check step finds the worker of its session's container.
func (p *Pool) PrepareCheck(ctx context.Context, planJSON []byte, ref BuildRef, has func(worker string) bool) (*WorkerCheck, error) {
	specs, tags, matching, err := p.matching(planJSON, ref.team())
	if err != nil {
		return nil, err
	}
	running, unreadable := candidates(ctx, matching)
	running = ownFirst(running, ref.team())
	for i, w := range running {
		if len(running) > 1 && has(w.Name) {
			running[0], running[i] = running[i], running[0]
			break
		}
	}
	if len(running) == 0 {
		if unreadable != nil {
			return nil, unreadable
		}
		return nil, noWorkers(specs, tags, p.running(ctx, ref.team()))
	}
	w := running[0]
	br, ok := w.Runs.(*backendRuns)
	if !ok {
		return nil, fmt.Errorf("%w: worker %s runs builds in no backend", tektonrun.ErrNoSession, w.Name)
	}
	var cplan concourse.Plan
	if err := json.Unmarshal(planJSON, &cplan); err != nil {
		return nil, fmt.Errorf("decoding the build plan: %w", err)
	}
	if ref.Credentials == nil {
		return nil, fmt.Errorf("%w: the check's credentials are not supplied", tektonrun.ErrNoSession)
	}
	sc, err := br.backend.PrepareCheck(ctx, cplan, ref.Meta, atcVars{ref.Credentials})
	if err != nil {
		return nil, err
	}
	return &WorkerCheck{SessionCheck: targetCheck{SessionCheck: sc, client: br.backend.Client()}, Worker: w.Name}, nil
}

// sessionExpiries are the check sessions' whose checks run in check containers: an hour.
// Concourse gives the sessions of a worker that started less than an hour ago that long
// only (at least 5 minutes), so that the containers of a new worker move to it soon; here
// Kubernetes places each session's pod on a node of its choosing, and a session that
// ended costs a pod start, so sessions last as long as Concourse's longest.
var sessionExpiries = db.ContainerOwnerExpiries{Min: time.Hour, Max: time.Hour}

// runInSession runs a check of a resource in the container of its resource config's
// check session, as Concourse's check step does (a container owned by the session, which
// lasts an hour here, serves every check of the config meanwhile): the
// session's pod (tektonrun.SessionCheck) is found by its container's record on the
// worker, or started and recorded; one that cannot take the check (gone, ended, of
// another image) is replaced. It says whether it ran the check (ran false: the check
// cannot run in a session, and runs as a build of its own); else it returns what
// runCheck returns.
func (s *checkStep) runInSession(ctx context.Context, logger lager.Logger, plan atc.Plan, planJSON []byte, ref BuildRef, config db.ResourceConfig) (versions []atc.Version, succeeded bool, err error, ran bool) {
	sessions, ok := s.factory.Runs.(CheckSessions)
	workers := s.factory.Containers
	if !ok || workers == nil || !s.config.CheckContainers || !plan.Check.IsResourceCheck() || config == nil || config.OriginBaseResourceType() == nil {
		return nil, false, nil, false
	}
	owner := db.NewResourceConfigCheckSessionContainerOwner(config.ID(), config.OriginBaseResourceType().ID, sessionExpiries)
	has := func(name string) bool {
		w, found, err := workers.GetWorker(name)
		if err != nil || !found {
			return false
		}
		_, created, err := w.FindContainer(owner)
		return err == nil && created != nil
	}
	wc, err := sessions.PrepareCheck(ctx, planJSON, ref, has)
	if errors.Is(err, tektonrun.ErrNoSession) {
		logger.Debug("no-check-container", lager.Data{"reason": err.Error()})
		return nil, false, nil, false
	}
	if err != nil {
		return nil, false, err, true
	}
	worker, found, err := workers.GetWorker(wc.Worker)
	if err != nil {
		return nil, false, err, true
	}
	if !found {
		// Not registered yet (the web node just started): no record of its containers
		// can be made, and the check runs as a build of its own, as every check did.
		logger.Info("no-check-container", lager.Data{"reason": "worker " + wc.Worker + " is not registered"})
		return nil, false, nil, false
	}
	var failure string
	var res runspec.SessionResult
	var runErr error
	// gone is the recorded container whose pod could take no check: replaced once.
	gone := ""
	for {
		handle, err := s.sessionContainer(ctx, logger, worker, owner, wc, gone)
		if err != nil {
			return nil, false, err, true
		}
		res, runErr = wc.Run(ctx, handle, func(e buildevents.Event) error {
			if sw, ok := e.Event.(event.SelectedWorker); ok {
				// The worker, where the run says the node.
				sw.WorkerName = wc.Worker
				e.Event = sw
			}
			return s.saveCheckEvent(plan.ID, e.Event, &failure)
		})
		// A pod that cannot take the check (gone, ended, of another image; before the
		// check began in it) is replaced, once.
		if errors.Is(runErr, tektonrun.ErrSessionGone) && gone == "" {
			gone = handle
			continue
		}
		if runErr != nil {
			logger.Info("check-container-failed", lager.Data{"container": handle, "error": runErr.Error()})
		}
		break
	}
	switch {
	case ctx.Err() != nil:
		return nil, false, ctx.Err(), true
	case runErr != nil:
		return nil, false, runErr, true
	case failure != "":
		return nil, false, errors.New(failure), true
	case res.Outcome != runspec.Succeeded:
		return nil, false, nil, true
	}
	logger.Debug("checked-in-container", lager.Data{"versions": len(res.Versions)})
	for _, v := range res.Versions {
		versions = append(versions, atc.Version(v))
	}
	return versions, true, nil, true
}

// sessionContainer is the handle of the session's container on worker: the one
// recorded, unless it is gone (its pod could take no check); else a new one, started
// and recorded, which replaces the record and the pod of the one before it.
func (s *checkStep) sessionContainer(ctx context.Context, logger lager.Logger, worker db.Worker, owner db.ContainerOwner, wc *WorkerCheck, gone string) (string, error) {
	creating, created, err := worker.FindContainer(owner)
	if err != nil {
		return "", err
	}
	switch {
	case created != nil && created.Handle() != gone:
		return created.Handle(), nil
	case created != nil:
		logger.Info("replacing-check-container", lager.Data{"container": gone})
		destroying, err := created.Destroying()
		if err != nil {
			return "", err
		}
		if err := s.deleteSession(ctx, wc, gone); err != nil {
			return "", err
		}
		if _, err := destroying.Destroy(); err != nil {
			return "", err
		}
	case creating != nil:
		// Left creating by a web node that stopped meanwhile: the collector removes it.
		if err := s.deleteSession(ctx, wc, creating.Handle()); err != nil {
			return "", err
		}
		if _, err := creating.Failed(); err != nil {
			return "", err
		}
	}
	name := wc.NewName()
	meta := db.ContainerMetadata{Type: db.ContainerTypeCheck, StepName: s.plan.Check.Name, PipelineID: s.build.PipelineID(), PipelineName: s.build.PipelineName()}
	if iv := s.build.PipelineInstanceVars(); iv != nil {
		b, _ := json.Marshal(iv)
		meta.PipelineInstanceVars = string(b)
	}
	creating, err = worker.CreateContainer(handleOwner{ContainerOwner: owner, handle: name}, meta)
	if err != nil {
		return "", err
	}
	logger.Info("starting-check-container", lager.Data{"container": name})
	if err := wc.Start(ctx, name); err != nil {
		if _, ferr := creating.Failed(); ferr != nil {
			logger.Error("failed-to-mark-container-failed", ferr)
		}
		return "", err
	}
	if _, err := creating.Created(); err != nil {
		return "", err
	}
	return name, nil
}

// deleteSession deletes a session's container that is replaced.
func (s *checkStep) deleteSession(ctx context.Context, wc *WorkerCheck, handle string) error {
	return wc.Delete(context.WithoutCancel(ctx), handle)
}
