package concourse

import (
	"fmt"
	pathpkg "path"
	"strings"
	"time"
)

// jobCheck is what the checks of one job's steps share.
type jobCheck struct {
	job *JobConfig
	// gets are the get steps seen so far, by name, to find a name got twice.
	gets map[string]Path
	// acrossed are the steps an across runs, through its other modifiers: Concourse does
	// not check the name of a task or a set_pipeline there (atc.ValidateIdentifier).
	acrossed map[StepConfig]bool
}

// step checks one step config. Run, try, do and the hooks have no rules of their own: the
// walk visits the steps they hold.
func (v *validator) step(jc *jobCheck, s StepConfig, path Path, scope *walkScope) {
	switch st := s.(type) {
	case *GetStep:
		v.getStep(jc, st, path)
	case *PutStep:
		v.putStep(st, path)
	case *TaskStep:
		v.taskStep(st, path, jc.acrossed[st])
	case *SetPipelineStep:
		v.setPipelineStep(st, path, jc.acrossed[st])
	case *LoadVarStep:
		v.loadVarStep(st, path, scope)
	case *TimeoutStep:
		v.timeoutStep(st, path)
	case *RetryStep:
		v.retryStep(st, path)
	case *AcrossStep:
		jc.acrossed[coreStep(st)] = true
		v.acrossStep(st, path, scope)
	case *InParallelStep:
		v.inParallelStep(st, path)
	}
}

func (v *validator) getStep(jc *jobCheck, st *GetStep, path Path) {
	v.identifier(path.Child(Key("get")), "get step", st.Name)
	name := st.ResourceName()
	v.resourceRef(path.Child(Key("get")), name)
	if first, dup := jc.gets[st.Name]; dup {
		v.errorf(path.Child(Key("get")), "job %q gets %q more than once (first at line %d): give the steps different names and use `resource:`", jc.job.Name, st.Name, v.p.Pos(first).Line)
	} else {
		jc.gets[st.Name] = path.Child(Key("get"))
	}
	for k, pattern := range st.Passed {
		v.passed(jc.job, name, pattern, path.Child(Key("passed"), Index(k)))
	}
	v.stepTimeout(st.Timeout, path)
}

// passed checks one `passed` pattern of a get of resource, and records the jobs it names.
// Concourse v8 matches it against every job's name with path.Match, as its scheduler
// does (atc/db.insertJobInput), and every job it matches is a constraint; a malformed
// pattern matches nothing. Groups' jobs are gobwas globs instead (compileGlob).
func (v *validator) passed(job *JobConfig, resource, pattern string, path Path) {
	matched := false
	for _, other := range v.c.Jobs {
		if !matchPassed(pattern, other.Name) {
			continue
		}
		matched = true
		v.passedDeps[job.Name] = append(v.passedDeps[job.Name], other.Name)
		if !jobUsesResource(&other, resource) {
			v.errorf(path, "job '%s' does not interact with resource '%s': get or put it in that job, or remove the job from passed", other.Name, resource)
		}
	}
	if matched {
		return
	}
	hint := suggest(pattern, v.jobNames())
	if _, err := pathpkg.Match(pattern, ""); err != nil {
		hint = ": the pattern is malformed (path.Match syntax: *, ?, [a-z], [^a-z], \\ to escape)"
	}
	v.errorf(path, "no matching job(s) for '%s'%s", pattern, hint)
}

// matchPassed says whether a get's `passed` pattern names a job, by Concourse's rule
// (path.Match; a malformed pattern matches nothing).
func matchPassed(pattern, job string) bool {
	ok, _ := pathpkg.Match(pattern, job)
	return ok
}

func (v *validator) jobNames() map[string]bool {
	names := make(map[string]bool, len(v.c.Jobs))
	for _, j := range v.c.Jobs {
		names[j.Name] = true
	}
	return names
}

func (v *validator) putStep(st *PutStep, path Path) {
	v.identifier(path.Child(Key("put")), "put step", st.Name)
	v.resourceRef(path.Child(Key("put")), st.ResourceName())
	v.stepTimeout(st.Timeout, path)
}

// resourceRef records that a get or put uses a resource, and checks that it exists. A
// name with a ((var)) not given is looked up as written, as Concourse does: the
// resource must be named so too.
func (v *validator) resourceRef(path Path, name string) {
	v.used[name] = true
	if !v.resources[name] {
		v.errorf(path, "unknown resource %q%s", name, suggest(name, v.resources))
	}
}

// coreStep is the step a chain of modifiers ends in.
func coreStep(s StepConfig) StepConfig {
	for {
		w, ok := s.(StepWrapper)
		if !ok {
			return s
		}
		s = w.Unwrap()
	}
}

// stepName checks a step's name; acrossed says whether an across runs the step, where
// Concourse checks only that a task's or a set_pipeline's name is not empty.
func (v *validator) stepName(path Path, kind, name string, acrossed bool) {
	if acrossed && name != "" {
		return
	}
	v.identifier(path, kind, name)
}

func (v *validator) taskStep(st *TaskStep, path Path, acrossed bool) {
	v.stepName(path.Child(Key("task")), "task step", st.Name, acrossed)
	switch {
	case st.ConfigPath == "" && st.Config == nil:
		v.errorf(path.Child(Key("task")), "task %q has neither `file` nor `config`: give one of them", st.Name)
	case st.ConfigPath != "" && st.Config != nil:
		v.errorf(path.Child(Key("task")), "task %q has both `file` and `config`: give only one of them", st.Name)
	}
	if st.Config != nil {
		for _, fe := range st.Config.Validate() {
			v.field(SeverityError, path.Child(Key("config")), fe)
		}
		for _, fe := range st.Config.warnings() {
			v.field(SeverityWarning, path.Child(Key("config")), fe)
		}
		if st.ImageArtifactName == "" && !st.Config.namesImage() {
			v.warnf(path.Child(Key("config")), noImage, fmt.Sprintf("task %q", st.Name), "give the config an image_resource (or a rootfs_uri), or the step an image")
		}
		if st.ImageArtifactName != "" && (st.Config.ImageResource != nil || st.Config.RootfsURI != "") {
			v.warnf(path.Child(Key("image")), "task %q sets `image`, which wins over the image in its config", st.Name)
		}
	}
	if st.Hermetic {
		v.warnf(path.Child(Key("hermetic")), "hermetic only works on the containerd runtime")
	}
	v.stepTimeout(st.Timeout, path)
}

func (v *validator) setPipelineStep(st *SetPipelineStep, path Path, acrossed bool) {
	v.stepName(path.Child(Key("set_pipeline")), "set_pipeline step", st.Name, acrossed)
	if st.File == "" {
		v.errorf(path.Child(Key("set_pipeline")), "set_pipeline %q has no `file`", st.Name)
	}
}

// loadVarStep checks a load_var, which defines its var in the scope it is in (the job's,
// or an across's).
func (v *validator) loadVarStep(st *LoadVarStep, path Path, scope *walkScope) {
	at := path.Child(Key("load_var"))
	v.identifier(at, "load_var step", st.Name)
	if first, ok := scope.vars[st.Name]; ok {
		v.errorf(at, "var %q is defined twice in the same scope (also at line %d): give one of them another name", st.Name, v.p.Pos(first).Line)
	} else {
		if scope.parent.defines(st.Name) {
			v.warnf(at, "load_var %q shadows an outer var of the same name", st.Name)
		}
		scope.vars[st.Name] = at
	}
	if st.File == "" {
		v.errorf(path.Child(Key("load_var")), "load_var %q has no `file`", st.Name)
	}
}

func (v *validator) timeoutStep(st *TimeoutStep, path Path) {
	if strings.Contains(st.Duration, "((") {
		return
	}
	if _, err := time.ParseDuration(st.Duration); err != nil {
		v.errorf(path.Child(Key("timeout")), "invalid timeout %q: use a duration such as 30m or 1h30m", st.Duration)
	}
}

// stepTimeout checks a get/put/task `timeout`, which Concourse accepts and only reads when
// the step runs: a warning now saves a build.
func (v *validator) stepTimeout(d string, path Path) {
	if d == "" || strings.Contains(d, "((") {
		return
	}
	if _, err := time.ParseDuration(d); err != nil {
		v.warnf(path.Child(Key("timeout")), "invalid timeout %q: the step errors when it runs; use a duration such as 30m or 1h30m", d)
	}
}

func (v *validator) retryStep(st *RetryStep, path Path) {
	if st.Attempts <= 0 {
		v.errorf(path.Child(Key("attempts")), "attempts must be greater than 0, not %d", st.Attempts)
	}
}

func (v *validator) acrossStep(st *AcrossStep, path Path, scope *walkScope) {
	apath := path.Child(Key("across"))
	if len(st.Vars) == 0 {
		v.errorf(apath, "across has no vars")
	}
	seen := map[string]bool{}
	for k, av := range st.Vars {
		vpath := apath.Child(Index(k))
		if av.Var == "" {
			// Concourse accepts it: its values run, under a name no ((.:var)) can give.
			v.warnf(vpath, "across var has no name: no ((.:var)) can use its values")
		}
		if seen[av.Var] {
			v.errorf(vpath.Child(Key("var")), "across var %q is repeated", av.Var)
		}
		seen[av.Var] = true
		v.acrossVar(av, vpath, scope)
	}
}

// acrossVar checks one var of an across step, whose name is set.
func (v *validator) acrossVar(av AcrossVarConfig, path Path, scope *walkScope) {
	if scope.defines(av.Var) {
		v.warnf(path.Child(Key("var")), "across var %q shadows an outer var of the same name", av.Var)
	}
	if av.MaxInFlight != nil && !av.MaxInFlight.All && av.MaxInFlight.Limit <= 0 {
		v.errorf(path.Child(Key("max_in_flight")), "max_in_flight must be greater than 0")
	}
	// Concourse accepts both, and reads the values when the step runs.
	switch av.Values.(type) {
	case []any, string:
	case nil:
		v.warnf(path.Child(Key("values")), "across var %q has no values: Concourse runs the step for none", av.Var)
	default:
		v.warnf(path.Child(Key("values")), "across var %q: values must be a list (or a ((var)) that gives one): Concourse errors the step when it runs", av.Var)
	}
}

func (v *validator) inParallelStep(st *InParallelStep, path Path) {
	if st.Config.Limit < 0 {
		// Concourse accepts it; its in_parallel step cannot run with it.
		v.warnf(path.Child(Key("in_parallel"), Key("limit")), "limit must not be negative: Concourse errors the build at this step when it runs (here the steps run with no limit)")
	}
}
