package concourse

import (
	pathpkg "path"
	"strings"
	"time"
)

// jobCheck is what the checks of one job's steps share.
type jobCheck struct {
	job *JobConfig
	// gets are the get steps seen so far, by name, to find a name got twice.
	gets map[string]Path
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
		v.taskStep(st, path)
	case *SetPipelineStep:
		v.setPipelineStep(st, path)
	case *LoadVarStep:
		v.loadVarStep(st, path)
	case *TimeoutStep:
		v.timeoutStep(st, path)
	case *RetryStep:
		v.retryStep(st, path)
	case *AcrossStep:
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

// resourceRef records that a get or put uses a resource, and checks that it exists.
func (v *validator) resourceRef(path Path, name string) {
	v.used[name] = true
	if !v.resources[name] && !strings.Contains(name, "((") {
		v.errorf(path, "unknown resource %q%s", name, suggest(name, v.resources))
	}
}

func (v *validator) taskStep(st *TaskStep, path Path) {
	v.identifier(path.Child(Key("task")), "task step", st.Name)
	switch {
	case st.ConfigPath == "" && st.Config == nil:
		v.errorf(path.Child(Key("task")), "task %q has neither `file` nor `config`: give one of them", st.Name)
	case st.ConfigPath != "" && st.Config != nil:
		v.errorf(path.Child(Key("task")), "task %q has both `file` and `config`: give only one of them", st.Name)
	}
	if st.Config != nil {
		for _, fe := range st.Config.Validate() {
			v.errorf(path.Child(Key("config")).Child(fe.Field...), "%s", fe.Message)
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

func (v *validator) setPipelineStep(st *SetPipelineStep, path Path) {
	v.identifier(path.Child(Key("set_pipeline")), "set_pipeline step", st.Name)
	if st.File == "" {
		v.errorf(path.Child(Key("set_pipeline")), "set_pipeline %q has no `file`", st.Name)
	}
}

func (v *validator) loadVarStep(st *LoadVarStep, path Path) {
	v.identifier(path.Child(Key("load_var")), "load_var step", st.Name)
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

// stepTimeout checks a get/put/task `timeout`. Concourse only finds a bad one at run time;
// saying so now costs nothing and saves a build.
func (v *validator) stepTimeout(d string, path Path) {
	if d == "" || strings.Contains(d, "((") {
		return
	}
	if _, err := time.ParseDuration(d); err != nil {
		v.errorf(path.Child(Key("timeout")), "invalid timeout %q: use a duration such as 30m or 1h30m", d)
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
			v.errorf(vpath, "across var has no name")
			continue
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
	if scope.shadows(av.Var) {
		v.warnf(path.Child(Key("var")), "across var %q shadows an outer var of the same name", av.Var)
	}
	if av.MaxInFlight != nil && !av.MaxInFlight.All && av.MaxInFlight.Limit <= 0 {
		v.errorf(path.Child(Key("max_in_flight")), "max_in_flight must be greater than 0")
	}
	switch av.Values.(type) {
	case []any, string:
	case nil:
		v.errorf(path.Child(Key("values")), "across var %q has no values", av.Var)
	default:
		v.errorf(path.Child(Key("values")), "across var %q: values must be a list (or a ((var)) that gives one)", av.Var)
	}
}

func (v *validator) inParallelStep(st *InParallelStep, path Path) {
	if st.Config.Limit < 0 {
		v.errorf(path.Child(Key("in_parallel"), Key("limit")), "limit must not be negative")
	}
}
