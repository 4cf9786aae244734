package tektonengine

import (
	"encoding/json"
	"strings"

	"github.com/concourse/concourse/atc"
	atcevent "github.com/concourse/concourse/atc/event"
	"github.com/concourse/concourse/vars"
	"sigs.k8s.io/yaml"
)

// redactedMark is what Concourse shows in a credential's place.
const redactedMark = "((redacted))"

// shownTaskConfig is e, when it is a task's initialize-task or start-task, with the run's
// path and args as Concourse 8's task delegate shows them: the build's ((vars))
// interpolated (from the credential manager and the pipeline's var sources, through the
// build's state, which tracks them), then every credential the build has interpolated
// redacted, unless the web node runs with --disable-redact-secrets. A var the state does
// not have (a local var of the run, a task file's own vars) stays as it is written. Any
// other event is e.
func shownTaskConfig(e atc.Event, state vars.Variables, creds func(vars.TrackedVarsIterator)) atc.Event {
	show := func(c atcevent.TaskConfig) atcevent.TaskConfig {
		c.Run.Path = shownString(c.Run.Path, state, creds)
		if c.Run.Args != nil {
			args := make([]string, len(c.Run.Args))
			for i, a := range c.Run.Args {
				args[i] = shownString(a, state, creds)
			}
			c.Run.Args = args
		}
		return c
	}
	switch e := e.(type) {
	case atcevent.InitializeTask:
		e.TaskConfig = show(e.TaskConfig)
		return e
	case atcevent.StartTask:
		e.TaskConfig = show(e.TaskConfig)
		return e
	}
	return e
}

// shownString is s with the vars state has interpolated and the credentials redacted.
func shownString(s string, state vars.Variables, creds func(vars.TrackedVarsIterator)) string {
	if strings.Contains(s, "((") {
		// The template is YAML (JSON is YAML), and so is what it gives.
		if encoded, err := json.Marshal(s); err == nil {
			// A var the state cannot give, or whose lookup fails, stays as written.
			out, err := vars.NewTemplate(encoded).Evaluate(lenientVars{state}, vars.EvaluateOpts{})
			var interpolated string
			if err == nil && yaml.Unmarshal(out, &interpolated) == nil {
				s = interpolated
			}
		}
	}
	if atc.DisableRedactSecrets || creds == nil {
		return s
	}
	r := &redactor{line: s}
	creds(r)
	return r.line
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

// redactor replaces each credential in line, as Concourse's build output filter does:
// every line of a value, trimmed, longer than one character.
type redactor struct{ line string }

func (r *redactor) YieldCred(_, value string) {
	for v := range strings.SplitSeq(value, "\n") {
		if v = strings.TrimSpace(v); len(v) > 1 {
			r.line = strings.ReplaceAll(r.line, v, redactedMark)
		}
	}
}
