package tektonengine

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"code.cloudfoundry.org/lager/v3"
	"github.com/concourse/concourse/atc"
	"github.com/concourse/concourse/atc/db"

	"github.com/concourse-tekton/concourse-tekton/concourse/event"
	"github.com/concourse-tekton/concourse-tekton/tektonrun/buildevents"
)

// ContainerWorkers are the ATC's workers, whose containers the database records:
// db.WorkerFactory.
type ContainerWorkers interface {
	GetWorker(name string) (db.Worker, bool, error)
}

var _ ContainerWorkers = db.WorkerFactory(nil)

// containers records the containers of a build's steps in the ATC's database, as a
// worker's are recorded when Concourse's engine makes them: `fly containers` lists
// them, `fly intercept` finds them by their build, step, type and attempt, and the
// web node's hijack reaches them through their worker's Garden server
// (tektonworker.Garden). A step's container is its TaskRun's pod: its handle is the
// TaskRun's name. It is recorded when the step is given its worker (its
// selected-worker event), once.
type containers struct {
	workers ContainerWorkers
	build   db.Build
	steps   map[atc.PlanID]stepContainer
	done    map[string]bool // handles recorded
	// session, when set, owns the container of the check of plan sessionPlan (a check
	// build's check of a resource); every other step's is its build's step's.
	session     db.ContainerOwner
	sessionPlan atc.PlanID
	// deleter deletes the run of a check container that another replaces (nil: none).
	deleter CheckRunDeleter
}

// checkContainerExpiries are Concourse's check containers': a resource's check session
// lasts 5 minutes to an hour.
var checkContainerExpiries = db.ContainerOwnerExpiries{Min: 5 * time.Minute, Max: time.Hour}

// newCheckContainers records the container of a check build's check of a resource as
// Concourse's check step owns it: by the check session of the resource's config, which
// fly intercept --check finds it by. A session has one container, as Concourse's check
// containers serve every check of their session: the latest check's, so the one before
// it goes, its record and its run (through runs, when it can delete them: else its
// record is marked destroying, and the worker deletes its run: tektonworker.Reporter).
// A check of a type or a prototype's is its build's step's.
func newCheckContainers(workers ContainerWorkers, build db.Build, plan atc.Plan, config db.ResourceConfig, runs Runs) *containers {
	c := newContainers(workers, build, plan)
	if workers == nil || plan.Check == nil || !plan.Check.IsResourceCheck() || config == nil {
		return c
	}
	if deleter, ok := runs.(CheckRunDeleter); ok {
		c.deleter = deleter
	}
	if base := config.OriginBaseResourceType(); base != nil {
		c.session = db.NewResourceConfigCheckSessionContainerOwner(config.ID(), base.ID, checkContainerExpiries)
		c.sessionPlan = plan.ID
	}
	return c
}

// stepContainer is what the database says of a step's container.
type stepContainer struct {
	typ     db.ContainerType
	name    string
	attempt string
}

func newContainers(workers ContainerWorkers, build db.Build, plan atc.Plan) *containers {
	c := &containers{workers: workers, build: build, steps: map[atc.PlanID]stepContainer{}, done: map[string]bool{}}
	if workers == nil {
		return c
	}
	// The attempts of the retries a step is in, outermost first ("2.1"), as Concourse's
	// stepper records them: Each walks a retry before its steps.
	attempts := map[atc.PlanID][]string{}
	plan.Each(func(p *atc.Plan) {
		if p.Retry == nil {
			return
		}
		for i := range *p.Retry {
			outer := attempts[p.ID]
			(*p.Retry)[i].Each(func(sub *atc.Plan) {
				attempts[sub.ID] = append(outer[:len(outer):len(outer)], strconv.Itoa(i+1))
			})
		}
	})
	plan.Each(func(p *atc.Plan) {
		s := stepContainer{attempt: strings.Join(attempts[p.ID], ".")}
		switch {
		case p.Task != nil:
			s.typ, s.name = db.ContainerTypeTask, p.Task.Name
		case p.Get != nil:
			s.typ, s.name = db.ContainerTypeGet, p.Get.Name
		case p.Put != nil:
			s.typ, s.name = db.ContainerTypePut, p.Put.Name
		case p.Check != nil:
			s.typ, s.name = db.ContainerTypeCheck, p.Check.Name
		default:
			return
		}
		c.steps[p.ID] = s
	})
	return c
}

// record records the container of the step an event is the selected-worker event of,
// if it has one and it is not recorded yet. A container that cannot be recorded is
// logged: the build goes on without it (only intercepting it fails).
func (c *containers) record(logger lager.Logger, e buildevents.Event) {
	sw, ok := e.Event.(event.SelectedWorker)
	if !ok || c.workers == nil || e.TaskRun == "" || c.done[e.TaskRun] {
		return
	}
	step, ok := c.steps[atc.PlanID(sw.Origin.ID)]
	if !ok {
		return
	}
	c.done[e.TaskRun] = true
	if err := c.create(sw.WorkerName, atc.PlanID(sw.Origin.ID), e.TaskRun, step); err != nil {
		logger.Error("failed-to-record-container", err, lager.Data{"handle": e.TaskRun, "worker": sw.WorkerName})
	}
}

func (c *containers) create(workerName string, id atc.PlanID, handle string, step stepContainer) error {
	worker, found, err := c.workers.GetWorker(workerName)
	if err != nil {
		return err
	}
	if !found {
		return fmt.Errorf("worker %s is not registered", workerName)
	}
	creating, created, err := worker.FindContainer(db.NewFixedHandleContainerOwner(handle))
	if err != nil || created != nil {
		return err
	}
	if creating == nil {
		meta := db.ContainerMetadata{
			Type:         step.typ,
			StepName:     step.name,
			Attempt:      step.attempt,
			PipelineID:   c.build.PipelineID(),
			JobID:        c.build.JobID(),
			BuildID:      c.build.ID(),
			PipelineName: c.build.PipelineName(),
			JobName:      c.build.JobName(),
			BuildName:    c.build.Name(),
		}
		if iv := c.build.PipelineInstanceVars(); iv != nil {
			b, _ := json.Marshal(iv)
			meta.PipelineInstanceVars = string(b)
		}
		var owner db.ContainerOwner = db.NewBuildStepContainerOwner(c.build.ID(), id, c.build.TeamID())
		if c.session != nil && id == c.sessionPlan {
			if err := c.replacePrevious(worker, c.session, handle); err != nil {
				return err
			}
			owner = c.session
		}
		if creating, err = worker.CreateContainer(handleOwner{ContainerOwner: owner, handle: handle}, meta); err != nil {
			return err
		}
	}
	_, err = creating.Created()
	return err
}

// replacePrevious does away with the container owner has on worker (an earlier check's
// of the same check session), unless it is handle's: the owner's container is the one
// made next. Its run is deleted and its record with it; when its run cannot be deleted
// here, the record is left destroying, for the worker to delete the run. One left
// creating (its web node stopped) is marked failed, for the ATC's collector.
func (c *containers) replacePrevious(worker db.Worker, owner db.ContainerOwner, handle string) error {
	creating, created, err := worker.FindContainer(owner)
	switch {
	case err != nil:
		return err
	case created != nil && created.Handle() != handle:
		destroying, err := created.Destroying()
		if err != nil || c.deleter == nil {
			return err
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := c.deleter.DeleteCheckRun(ctx, worker.Name(), created.Handle()); err != nil {
			return err
		}
		_, err = destroying.Destroy()
		return err
	case creating != nil && creating.Handle() != handle:
		_, err = creating.Failed()
	}
	return err
}

// handleOwner is a container owner whose container is given handle: the database
// takes a handle from the owner's columns (else it makes a random one).
type handleOwner struct {
	db.ContainerOwner
	handle string
}

func (o handleOwner) Create(tx db.Tx, workerName string) (map[string]any, error) {
	cols, err := o.ContainerOwner.Create(tx, workerName)
	if err != nil {
		return nil, err
	}
	cols["handle"] = o.handle
	return cols, nil
}
