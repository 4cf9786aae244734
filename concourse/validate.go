package concourse

import (
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"unicode"

	"github.com/concourse-tekton/concourse-tekton/concourse/vars"
)

// Validate applies Concourse's pipeline rules (atc/configvalidate) and returns every problem,
// errors and warnings, each at its position.
func (p *Pipeline) Validate() Diagnostics {
	v := &validator{p: p, c: &p.Config}
	v.names()
	v.groups()
	v.varSources()
	v.display()
	v.jobs()
	v.unusedResources()
	return v.diags
}

type validator struct {
	p     *Pipeline
	c     *Config
	diags Diagnostics
	// used records the resources some get or put refers to.
	used map[string]bool
	// resources are the names of the pipeline's resources.
	resources map[string]bool
	// passedDeps are, for each job, the jobs its passed constraints name.
	passedDeps map[string][]string
}

func (v *validator) errorf(path Path, format string, args ...any) {
	v.add(SeverityError, path, format, args)
}

func (v *validator) warnf(path Path, format string, args ...any) {
	v.add(SeverityWarning, path, format, args)
}

// field records a task config's FieldError, under the config at path.
func (v *validator) field(sev Severity, path Path, fe FieldError) {
	v.diags = append(v.diags, v.p.fieldDiagnostic(sev, path, fe))
}

// add records a rule's diagnostic, the rule named by its format.
func (v *validator) add(sev Severity, path Path, format string, args []any) {
	d := v.p.Diagnostic(sev, path, format, args...)
	d.Rule = format
	v.diags = append(v.diags, d)
}

// isIdentifier is Concourse's rule for names, its regexp
// ^[\p{Ll}\p{Lt}\p{Lm}\p{Lo}\d][\p{Ll}\p{Lt}\p{Lm}\p{Lo}\d\-_.]*$ spelled out: a lowercase
// letter or a digit first, then lowercase letters, digits, '-', '_' and '.'. Compiling
// the regexp (its Unicode classes) cost every start of the command more than a small
// pipeline's validation.
func isIdentifier(name string) bool {
	for i, r := range name {
		switch {
		case '0' <= r && r <= '9', unicode.In(r, unicode.Ll, unicode.Lt, unicode.Lm, unicode.Lo):
		case i > 0 && (r == '-' || r == '_' || r == '.'):
		default:
			return false
		}
	}
	return name != ""
}

// digitsOnly reports whether a name is made of ASCII digits alone.
func digitsOnly(name string) bool {
	return name != "" && strings.Trim(name, "0123456789") == ""
}

// identifier checks a name as Concourse's atc.ValidateIdentifier does: as written, its
// ((vars)) unfilled when the pipeline is set. An empty name is an error.
func (v *validator) identifier(path Path, kind, name string) {
	if name == "" {
		v.errorf(path, "%s has no name", kind)
		return
	}
	if len(name) > maxNameBytes {
		v.errorf(path, "%s name is %s, over the limit of %s for a name: the build's Kubernetes objects carry it, and the API server refuses an object whose annotations pass 256 KiB: shorten it", kind, byteSize(len(name)), byteSize(maxNameBytes))
		return
	}
	if !isIdentifier(name) {
		v.warnf(path, "%s %q is not a valid identifier: start with a lowercase letter or a number, then use lowercase letters, numbers, '-', '_' and '.'", kind, name)
	} else if digitsOnly(name) {
		v.warnf(path, "%s %q is not a valid identifier: it must not be only digits", kind, name)
	}
}

// maxNameBytes bounds a name. Concourse has none, but a build's objects carry its job's
// name in their annotations twice (the job's, and the build's context), which Kubernetes
// bounds to 256 KiB in all, and its steps' and resources' names in their specs, which
// the API server bounds to a few MiB.
const maxNameBytes = 16 << 10

func (v *validator) names() {
	type named struct {
		path Path
		kind string
	}
	seen := map[string]named{}
	dup := func(space, name string, path Path, kind string) {
		key := space + "\x00" + name
		if first, ok := seen[key]; ok {
			v.errorf(path, "%s %q is defined more than once (also as %s at line %d)", kind, name, first.kind, v.p.Pos(first.path).Line)
			return
		}
		seen[key] = named{path, kind}
	}
	for i, g := range v.c.Groups {
		path := Path{Key("groups"), Named(i, g.Name)}
		if g.Name == "" {
			v.errorf(path, "group has no name")
			continue
		}
		v.identifier(path.Child(Key("name")), "group", g.Name)
		dup("group", g.Name, path, "group")
	}
	// Resources have their own name space; resource types and prototypes share one.
	typed := func(list, kind, space string, i int, name, typ string) {
		path := Path{Key(list), Named(i, name)}
		if name == "" {
			v.errorf(path, "%s has no name", kind)
		} else {
			v.identifier(path.Child(Key("name")), kind, name)
			dup(space, name, path, kind)
		}
		if typ == "" {
			v.errorf(path, "%s %q has no type", kind, name)
		}
	}
	for i, r := range v.c.Resources {
		typed("resources", "resource", "resource", i, r.Name, r.Type)
	}
	for i, t := range v.c.ResourceTypes {
		typed("resource_types", "resource type", "type", i, t.Name, t.Type)
	}
	for i, t := range v.c.Prototypes {
		typed("prototypes", "prototype", "type", i, t.Name, t.Type)
	}
	for i, j := range v.c.Jobs {
		path := Path{Key("jobs"), Named(i, j.Name)}
		if j.Name == "" {
			v.errorf(path, "job has no name")
			continue
		}
		v.identifier(path.Child(Key("name")), "job", j.Name)
		dup("job", j.Name, path, "job")
	}
	for i, s := range v.c.VarSources {
		path := Path{Key("var_sources"), Named(i, s.Name)}
		if s.Name == "" {
			v.errorf(path, "var source has no name")
			continue
		}
		v.identifier(path.Child(Key("name")), "var source", s.Name)
		dup("var_source", s.Name, path, "var source")
	}
}

func (v *validator) groups() {
	if len(v.c.Groups) == 0 {
		return
	}
	resources := map[string]bool{}
	for _, r := range v.c.Resources {
		resources[r.Name] = true
	}
	inGroup := map[string]bool{}
	for i, g := range v.c.Groups {
		path := Path{Key("groups"), Named(i, g.Name)}
		for k, pattern := range g.Jobs {
			re, err := compileGlob(pattern)
			if err != nil {
				v.errorf(path.Child(Key("jobs"), Index(k)), "invalid glob %q: %v", pattern, err)
				continue
			}
			matched := false
			for _, j := range v.c.Jobs {
				if re.MatchString(j.Name) {
					matched, inGroup[j.Name] = true, true
				}
			}
			if !matched {
				v.errorf(path.Child(Key("jobs"), Index(k)), "group %q has job %q, which matches no job", g.Name, pattern)
			}
		}
		for k, r := range g.Resources {
			if !resources[r] {
				v.errorf(path.Child(Key("resources"), Index(k)), "group %q has resource %q, which does not exist", g.Name, r)
			}
		}
	}
	for i, j := range v.c.Jobs {
		if j.Name != "" && !inGroup[j.Name] {
			v.errorf(Path{Key("jobs"), Named(i, j.Name)}, "job %q belongs to no group: once there are groups, every job must be in one", j.Name)
		}
	}
}

var varSourceTypes = map[string]bool{"vault": true, "dummy": true, "ssm": true, "secretsmanager": true, "idtoken": true}

func (v *validator) varSources() {
	deps := map[string][]string{}
	index := map[string]int{}
	for i, s := range v.c.VarSources {
		index[s.Name] = i
	}
	for i, s := range v.c.VarSources {
		path := Path{Key("var_sources"), Named(i, s.Name)}
		if !varSourceTypes[s.Type] {
			v.errorf(path.Child(Key("type")), "unknown var source type %q: use one of dummy, idtoken, secretsmanager, ssm, vault", s.Type)
		}
		if varSourceTypes[s.Type] {
			v.varSourceConfig(path, s)
		}
		for _, ref := range referencedVars(s.Config) {
			if ref.Source == "" || ref.Source == "." {
				continue
			}
			if _, ok := index[ref.Source]; !ok {
				v.errorf(path.Child(Key("config")), "var source %q uses ((%s)), but there is no var source %q", s.Name, ref, ref.Source)
				continue
			}
			deps[s.Name] = append(deps[s.Name], ref.Source)
		}
	}
	if cycle := findCycle(slices.Sorted(maps.Keys(deps)), deps); cycle != nil {
		i := index[cycle[0]]
		v.errorf(Path{Key("var_sources"), Named(i, cycle[0])}, "var sources depend on each other in a cycle: %s", strings.Join(cycle, " -> "))
	}
}

// referencedVars lists the ((vars)) in a generic value.
func referencedVars(val any) []vars.Reference {
	var refs []vars.Reference
	var walk func(any)
	walk = func(x any) {
		switch t := x.(type) {
		case string:
			for _, n := range vars.Names(t) {
				if r, err := vars.ParseReference(n); err == nil {
					refs = append(refs, r)
				}
			}
		case []any:
			for _, e := range t {
				walk(e)
			}
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(t)) {
				walk(k)
				walk(t[k])
			}
		}
	}
	walk(val)
	return refs
}

func (v *validator) display() {
	d := v.c.Display
	if d == nil || d.BackgroundImage == "" {
		return
	}
	u, err := url.Parse(d.BackgroundImage)
	if err != nil {
		v.errorf(Path{Key("display"), Key("background_image")}, "invalid background image URL: %v", err)
		return
	}
	if u.Scheme != "" && u.Scheme != "http" && u.Scheme != "https" {
		v.errorf(Path{Key("display"), Key("background_image")}, "background image scheme %q is not allowed: use http, https or a relative URL", u.Scheme)
	}
}

func (v *validator) jobs() {
	v.used = map[string]bool{}
	if len(v.c.Jobs) == 0 {
		// Its resources are unused too, and Concourse says so.
		v.errorf(nil, "the pipeline has no jobs: add at least one job")
		return
	}
	v.resources = map[string]bool{}
	for _, r := range v.c.Resources {
		v.resources[r.Name] = true
	}
	v.passedDeps = map[string][]string{}
	for i := range v.c.Jobs {
		job := &v.c.Jobs[i]
		jpath := Path{Key("jobs"), Named(i, job.Name)}
		v.jobSettings(job, jpath)
		jc := &jobCheck{job: job, gets: map[string]Path{}, acrossed: map[StepConfig]bool{}}
		v.p.walkJob(job, jpath, func(s StepConfig, path Path, scope *walkScope) {
			v.step(jc, s, path, scope)
		}, func(step Step, path Path) {
			if step.Aggregate {
				v.errorf(path.Child(Key("aggregate")), "aggregate was removed in Concourse v7: use in_parallel, which takes the same list of steps")
			}
			for _, k := range slices.Sorted(maps.Keys(step.UnknownFields)) {
				v.errorf(path.Child(Key(k)), "unknown field %q%s", k, suggest(k, allStepKeys()))
			}
		})
	}
	if cycle := findCycle(slices.Sorted(maps.Keys(v.passedDeps)), v.passedDeps); cycle != nil {
		i := 0
		for k, j := range v.c.Jobs {
			if j.Name == cycle[0] {
				i = k
			}
		}
		v.errorf(Path{Key("jobs"), Named(i, cycle[0])}, "the jobs' passed constraints form a cycle: %s", strings.Join(cycle, " -> "))
	}
}

func (v *validator) jobSettings(job *JobConfig, path Path) {
	if job.BuildLogsToRetain != 0 {
		v.warnf(path.Child(Key("build_logs_to_retain")), "build_logs_to_retain is deprecated. Use build_log_retention instead.")
	}
	if job.BuildLogRetention != nil && job.BuildLogsToRetain != 0 {
		v.errorf(path.Child(Key("build_logs_to_retain")), "can't use both build_log_retention and build_logs_to_retain: keep build_log_retention")
	} else if job.BuildLogsToRetain < 0 {
		v.errorf(path.Child(Key("build_logs_to_retain")), "build_logs_to_retain must not be negative")
	}
	if r := job.BuildLogRetention; r != nil {
		rp := path.Child(Key("build_log_retention"))
		if r.Builds < 0 {
			v.errorf(rp.Child(Key("builds")), "builds must not be negative")
		}
		if r.Days < 0 {
			v.errorf(rp.Child(Key("days")), "days must not be negative")
		}
		if r.MinimumSucceededBuilds < 0 {
			v.errorf(rp.Child(Key("minimum_succeeded_builds")), "minimum_succeeded_builds must not be negative")
		}
		if r.Builds > 0 && r.MinimumSucceededBuilds > r.Builds {
			v.errorf(rp.Child(Key("minimum_succeeded_builds")), "minimum_succeeded_builds (%d) must not be greater than builds (%d)", r.MinimumSucceededBuilds, r.Builds)
		}
	}
	if job.RawMaxInFlight < 0 {
		// Concourse accepts it, and its scheduler then finds the job always at its limit.
		v.warnf(path.Child(Key("max_in_flight")), "max_in_flight is negative: Concourse never starts a build of this job")
	}
}

func (v *validator) unusedResources() {
	for i, r := range v.c.Resources {
		if r.Name != "" && !v.used[r.Name] {
			v.errorf(Path{Key("resources"), Named(i, r.Name)}, "resource %q is not used by any job: use it in a get or put, or remove it", r.Name)
		}
	}
}

// jobUsesResource reports whether a job gets or puts the resource anywhere.
func jobUsesResource(job *JobConfig, resource string) bool {
	found := false
	walkSteps(job.StepConfig(), func(s StepConfig) {
		switch st := s.(type) {
		case *GetStep:
			found = found || st.ResourceName() == resource
		case *PutStep:
			found = found || st.ResourceName() == resource
		}
	})
	return found
}

// findCycle returns a cycle in a dependency graph (as a path that starts and ends at the
// same node), or nil.
func findCycle(nodes []string, deps map[string][]string) []string {
	const (
		unvisited = iota
		visiting
		done
	)
	state := map[string]int{}
	var stack []string
	var visit func(n string) []string
	visit = func(n string) []string {
		state[n] = visiting
		stack = append(stack, n)
		next := append([]string(nil), deps[n]...)
		sort.Strings(next)
		for _, m := range next {
			switch state[m] {
			case visiting:
				for i, s := range stack {
					if s == m {
						return append(append([]string(nil), stack[i:]...), m)
					}
				}
			case unvisited:
				if c := visit(m); c != nil {
					return c
				}
			}
		}
		stack = stack[:len(stack)-1]
		state[n] = done
		return nil
	}
	for _, n := range nodes {
		if state[n] == unvisited {
			if c := visit(n); c != nil {
				return c
			}
		}
	}
	return nil
}

// jobGlob matches job names: a regexp, or for a pattern without glob syntax (most of
// them: `passed: [unit]`) the name itself.
type jobGlob struct {
	re      *regexp.Regexp
	literal string
}

// MatchString says whether name matches the glob.
func (g jobGlob) MatchString(name string) bool {
	if g.re == nil {
		return name == g.literal
	}
	return g.re.MatchString(name)
}

// compileGlob turns a job glob (gobwas/glob syntax: *, ?, [abc], {a,b}) into a matcher.
func compileGlob(pattern string) (jobGlob, error) {
	if !strings.ContainsAny(pattern, "*?[]{}\\") {
		return jobGlob{literal: pattern}, nil
	}
	re, err := globRegexp(pattern)
	return jobGlob{re: re}, err
}

// globRegexp translates a glob into an anchored regexp.
func globRegexp(pattern string) (*regexp.Regexp, error) {
	var b strings.Builder
	b.WriteString("^")
	depth := 0
	for i := 0; i < len(pattern); i++ {
		c := pattern[i]
		switch c {
		case '*':
			b.WriteString(".*")
		case '?':
			b.WriteString(".")
		case '[':
			j := strings.IndexByte(pattern[i:], ']')
			if j < 0 {
				return nil, fmt.Errorf("unclosed '['")
			}
			class := pattern[i+1 : i+j]
			if strings.HasPrefix(class, "!") {
				class = "^" + class[1:]
			}
			b.WriteString("[" + class + "]")
			i += j
		case '{':
			depth++
			b.WriteString("(?:")
		case '}':
			if depth == 0 {
				return nil, fmt.Errorf("unmatched '}'")
			}
			depth--
			b.WriteString(")")
		case ',':
			if depth > 0 {
				b.WriteString("|")
			} else {
				b.WriteString(",")
			}
		case '\\':
			if i+1 < len(pattern) {
				i++
				b.WriteString(regexp.QuoteMeta(string(pattern[i])))
			}
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	if depth != 0 {
		return nil, fmt.Errorf("unclosed '{'")
	}
	b.WriteString("$")
	return regexp.Compile(b.String())
}
