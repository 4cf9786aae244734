package tektonengine

import (
	"encoding/json"
	"strings"

	"github.com/concourse/concourse/atc"
	atcevent "github.com/concourse/concourse/atc/event"
	"github.com/concourse/concourse/atc/exec"
	"github.com/concourse/concourse/vars"
	"sigs.k8s.io/yaml"

	"github.com/concourse-tekton/concourse-tekton/runner/redact"
)

// shownTaskConfig is e, when it is a task's initialize-task or start-task, with the run's
// path and args as Concourse 8's task delegate shows them: the build's ((vars))
// interpolated (from the credential manager and the pipeline's var sources, through the
// build's state, which tracks them), then every credential the build has interpolated
// redacted, unless the web node runs with --disable-redact-secrets. A var the state does
// not have (a local var of the run, a task file's own vars) stays as it is written. Any
// other event, or an event of a build with no state, is e.
func shownTaskConfig(e atc.Event, state exec.RunState) atc.Event {
	if state == nil {
		return e
	}
	switch ev := e.(type) {
	case atcevent.InitializeTask:
		ev.TaskConfig = shownRun(ev.TaskConfig, state)
		return ev
	case atcevent.StartTask:
		ev.TaskConfig = shownRun(ev.TaskConfig, state)
		return ev
	}
	return e
}

// shownRun is c with its run's path and args interpolated, then redacted with the
// project's redactor, which has Concourse's rule (every line of a value, trimmed, longer
// than one character).
func shownRun(c atcevent.TaskConfig, state exec.RunState) atcevent.TaskConfig {
	c.Run.Path = interpolated(c.Run.Path, state)
	if c.Run.Args != nil {
		args := make([]string, len(c.Run.Args))
		for i, a := range c.Run.Args {
			args[i] = interpolated(a, state)
		}
		c.Run.Args = args
	}
	if atc.DisableRedactSecrets {
		return c
	}
	// After the interpolation, which tracks the credentials it looked up.
	var secrets redact.Secrets
	state.IterateInterpolatedCreds(trackedSecrets{&secrets})
	c.Run.Path = secrets.String(c.Run.Path)
	for i, a := range c.Run.Args {
		c.Run.Args[i] = secrets.String(a)
	}
	return c
}

// interpolated is s with the vars state has interpolated; a var the state cannot give,
// or whose lookup fails, stays as written.
func interpolated(s string, state vars.Variables) string {
	if !strings.Contains(s, "((") {
		return s
	}
	// The template is YAML (JSON is YAML), and so is what it gives.
	encoded, err := json.Marshal(s)
	if err != nil {
		return s
	}
	out, err := vars.NewTemplate(encoded).Evaluate(lenientVars{state}, vars.EvaluateOpts{})
	var result string
	if err != nil || yaml.Unmarshal(out, &result) != nil {
		return s
	}
	return result
}

// lenientVars are vars whose failed lookups are vars not found.
type lenientVars struct{ vars.Variables }

func (v lenientVars) Get(ref vars.Reference) (any, bool, error) {
	val, found, err := v.Variables.Get(ref)
	if err != nil {
		return nil, false, nil
	}
	return val, found, nil
}

// trackedSecrets adds the credentials a build has interpolated to secrets.
type trackedSecrets struct{ *redact.Secrets }

func (t trackedSecrets) YieldCred(_, value string) { t.Add(value) }
