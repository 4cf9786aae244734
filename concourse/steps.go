package concourse

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
)

// Step is one step of a job's plan: an envelope around a StepConfig, which is a core step
// (get, put, task, ...) possibly wrapped in modifiers (hooks, across, attempts, timeout).
type Step struct {
	Config StepConfig
	// UnknownFields are keys left after the core step was parsed. Validation reports them.
	UnknownFields map[string]json.RawMessage
	// Aggregate is set when the step was written with the `aggregate` key that Concourse
	// removed in v7. Validation refuses it, as Concourse does; it is read as the
	// in_parallel it became, so that the steps in it are checked too.
	Aggregate bool
}

// ErrNoStepConfigured is a step with no key that names a step type.
var ErrNoStepConfigured = errors.New("no step configured")

// ErrNoCoreStepDeclared is a step with modifiers only.
var ErrNoCoreStepDeclared = errors.New("no core step type declared (e.g. get, put, task, etc.)")

// StepConfig is implemented by every step type.
type StepConfig interface {
	Visit(StepVisitor) error
}

// StepWrapper is implemented by the modifiers, which wrap the step parsed after them.
type StepWrapper interface {
	StepConfig
	Wrap(StepConfig)
	Unwrap() StepConfig
}

// StepVisitor has a method per step type, so that the compiler finds every place that must
// learn about a new one.
type StepVisitor interface {
	VisitTask(*TaskStep) error
	VisitGet(*GetStep) error
	VisitPut(*PutStep) error
	VisitRun(*RunStep) error
	VisitSetPipeline(*SetPipelineStep) error
	VisitLoadVar(*LoadVarStep) error
	VisitTry(*TryStep) error
	VisitDo(*DoStep) error
	VisitInParallel(*InParallelStep) error
	VisitAcross(*AcrossStep) error
	VisitTimeout(*TimeoutStep) error
	VisitRetry(*RetryStep) error
	VisitOnSuccess(*OnSuccessStep) error
	VisitOnFailure(*OnFailureStep) error
	VisitOnAbort(*OnAbortStep) error
	VisitOnError(*OnErrorStep) error
	VisitEnsure(*EnsureStep) error
}

type stepDetector struct {
	key string
	new func() StepConfig
}

// stepPrecedence is the order in which Concourse looks for step keys. Modifiers come first
// and wrap what follows; the first core step ends the parse. `timeout` comes after
// run/task/put/get, for which it is a field of the step itself.
var stepPrecedence = []stepDetector{
	{"ensure", func() StepConfig { return &EnsureStep{} }},
	{"on_error", func() StepConfig { return &OnErrorStep{} }},
	{"on_abort", func() StepConfig { return &OnAbortStep{} }},
	{"on_failure", func() StepConfig { return &OnFailureStep{} }},
	{"on_success", func() StepConfig { return &OnSuccessStep{} }},
	{"across", func() StepConfig { return &AcrossStep{} }},
	{"attempts", func() StepConfig { return &RetryStep{} }},
	{"run", func() StepConfig { return &RunStep{} }},
	{"task", func() StepConfig { return &TaskStep{} }},
	{"put", func() StepConfig { return &PutStep{} }},
	{"get", func() StepConfig { return &GetStep{} }},
	{"timeout", func() StepConfig { return &TimeoutStep{} }},
	{"set_pipeline", func() StepConfig { return &SetPipelineStep{} }},
	{"load_var", func() StepConfig { return &LoadVarStep{} }},
	{"try", func() StepConfig { return &TryStep{} }},
	{"do", func() StepConfig { return &DoStep{} }},
	{"in_parallel", func() StepConfig { return &InParallelStep{} }},
}

// stepFields caches the JSON keys of each step type.
var stepFields = sync.OnceValue(func() map[reflect.Type]map[string]bool {
	m := map[reflect.Type]map[string]bool{}
	for _, d := range stepPrecedence {
		s := d.new()
		m[reflect.TypeOf(s)] = jsonFieldNames(reflect.ValueOf(s).Elem().Interface())
	}
	return m
})

// stepError is a step that cannot be decoded as a whole: it is not a map, or it has no
// step type (err is ErrNoStepConfigured or ErrNoCoreStepDeclared). typo is a key of the
// step that looks like a misspelt step type; suggestion is that type.
type stepError struct {
	err              error
	typo, suggestion string
}

func (e *stepError) Error() string {
	if e.typo != "" {
		return fmt.Sprintf("unknown step type %q (did you mean %q?)", e.typo, e.suggestion)
	}
	return e.err.Error()
}

func (e *stepError) Unwrap() error { return e.err }

// errNotAStep is a step that is not a map.
var errNotAStep = errors.New("a step must be a map")

// noStep is the error for a step without a (core) step type. When a key of the step is a
// typo of a step type, the error names it, at that key.
func noStep(err error, raw map[string]json.RawMessage) error {
	for _, k := range slices.Sorted(maps.Keys(raw)) {
		if allStepKeys()[k] {
			continue
		}
		if best := closest(k, stepTypeKeys()); best != "" {
			return atPath(&stepError{err: err, typo: k, suggestion: best}, Key(k))
		}
	}
	return &stepError{err: err}
}

// stepTypeKeys are the keys that give a step its type, the modifiers among them, for the
// suggestion of a typo: made when first needed.
var stepTypeKeys = sync.OnceValue(func() map[string]bool {
	m := map[string]bool{}
	for _, d := range stepPrecedence {
		m[d.key] = true
	}
	return m
})

// allStepKeys are every key any step type knows, for typo suggestions.
var allStepKeys = sync.OnceValue(func() map[string]bool {
	m := map[string]bool{}
	for _, fields := range stepFields() {
		for k := range fields {
			m[k] = true
		}
	}
	return m
})

// UnmarshalJSON parses a step the way Concourse does: it walks the step keys in precedence
// order, each modifier wrapping what is parsed after it, and stops at the first core step.
func (step *Step) UnmarshalJSON(data []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return &stepError{err: errNotAStep}
	}
	if len(raw) == 0 {
		return &stepError{err: ErrNoStepConfigured}
	}
	*step = Step{}
	if agg, ok := raw["aggregate"]; ok {
		if _, both := raw["in_parallel"]; !both {
			delete(raw, "aggregate")
			raw["in_parallel"] = agg
			step.Aggregate = true
			var err error
			if data, err = json.Marshal(raw); err != nil {
				return err
			}
		}
	}
	var prev StepWrapper
	core := false
	for _, d := range stepPrecedence {
		if _, found := raw[d.key]; !found {
			continue
		}
		cur := d.new()
		if err := json.Unmarshal(data, cur); err != nil {
			return stepDecodeError(d.key, err)
		}
		if step.Config == nil {
			step.Config = cur
		}
		if prev != nil {
			prev.Wrap(cur)
		}
		for k := range stepFields()[reflect.TypeOf(cur)] {
			delete(raw, k)
		}
		w, isWrapper := cur.(StepWrapper)
		if !isWrapper {
			core = true
			break
		}
		prev = w
		var err error
		if data, err = json.Marshal(raw); err != nil {
			return err
		}
	}
	if step.Config == nil {
		return noStep(ErrNoStepConfigured, raw)
	}
	if !core {
		return noStep(ErrNoCoreStepDeclared, raw)
	}
	if len(raw) > 0 {
		step.UnknownFields = raw
	}
	return nil
}

// MarshalJSON flattens the step and its modifiers back into one map.
func (step Step) MarshalJSON() ([]byte, error) {
	fields := map[string]json.RawMessage{}
	for k, v := range step.UnknownFields {
		fields[k] = v
	}
	for cfg := step.Config; cfg != nil; {
		payload, err := json.Marshal(cfg)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(payload, &fields); err != nil {
			return nil, err
		}
		w, ok := cfg.(StepWrapper)
		if !ok {
			break
		}
		cfg = w.Unwrap()
	}
	return json.Marshal(fields)
}

// nestedStepKeys are the step keys whose value is decoded by a nested decoder (a step or a
// list of steps) that reports paths relative to that value.
var nestedStepKeys = map[string]bool{
	"ensure": true, "on_error": true, "on_abort": true, "on_failure": true, "on_success": true,
	"try": true, "in_parallel": true,
}

// stepDecodeError places a decode error in the step's map: type errors already name their
// field; errors from nested decoders are relative to the key they decoded.
func stepDecodeError(key string, err error) error {
	var te *json.UnmarshalTypeError
	if nestedStepKeys[key] && !errors.As(err, &te) {
		return atPath(err, Key(key))
	}
	return unwrapJSONError(err)
}

// decodeSteps decodes a list of steps one by one, so that an error names its index.
func decodeSteps(raws []json.RawMessage, key string) ([]Step, error) {
	if raws == nil {
		return nil, nil
	}
	steps := make([]Step, len(raws))
	for i, r := range raws {
		if err := json.Unmarshal(r, &steps[i]); err != nil {
			return nil, atPath(unwrapJSONError(err), Key(key), Index(i))
		}
	}
	return steps, nil
}

// unwrapJSONError turns a type error into a path error naming the field it concerns.
func unwrapJSONError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		var p Path
		for _, f := range splitDotted(te.Field) {
			if f != "plain" { // the local type our custom decoders decode through
				p = append(p, Key(f))
			}
		}
		return &pathError{path: p, err: &typeMismatch{value: te.Value, target: te.Type}}
	}
	return err
}

// typeMismatch is a JSON value of the wrong type for its field.
type typeMismatch struct {
	value  string
	target reflect.Type
}

func (e *typeMismatch) Error() string {
	return fmt.Sprintf("cannot use %s as %s", e.value, goTypeName(e.target))
}

func splitDotted(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '.' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

func goTypeName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int64, reflect.Int32, reflect.Uint, reflect.Uint64, reflect.Uint32:
		return "an integer"
	case reflect.Float64, reflect.Float32:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "a map"
	}
	return t.String()
}

// GetStep fetches a version of a resource.
type GetStep struct {
	Name     string         `json:"get"`
	Resource string         `json:"resource,omitempty"`
	Version  *VersionConfig `json:"version,omitempty"`
	Params   Params         `json:"params,omitempty"`
	Passed   []string       `json:"passed,omitempty"`
	Trigger  bool           `json:"trigger,omitempty"`
	Tags     Tags           `json:"tags,omitempty"`
	Timeout  string         `json:"timeout,omitempty"`
}

// ResourceName is the resource the step gets: `resource`, or else the step's name.
func (s *GetStep) ResourceName() string {
	if s.Resource != "" {
		return s.Resource
	}
	return s.Name
}

// Visit calls v.VisitGet.
func (s *GetStep) Visit(v StepVisitor) error { return v.VisitGet(s) }

// PutStep pushes a version of a resource.
type PutStep struct {
	Name      string        `json:"put"`
	Resource  string        `json:"resource,omitempty"`
	Params    Params        `json:"params,omitempty"`
	Inputs    *InputsConfig `json:"inputs,omitempty"`
	Tags      Tags          `json:"tags,omitempty"`
	GetParams Params        `json:"get_params,omitempty"`
	Timeout   string        `json:"timeout,omitempty"`
	NoGet     bool          `json:"no_get,omitempty"`
}

// ResourceName is the resource the step puts: `resource`, or else the step's name.
func (s *PutStep) ResourceName() string {
	if s.Resource != "" {
		return s.Resource
	}
	return s.Name
}

// Visit calls v.VisitPut.
func (s *PutStep) Visit(v StepVisitor) error { return v.VisitPut(s) }

// TaskStep runs a task.
type TaskStep struct {
	Name              string            `json:"task"`
	Privileged        bool              `json:"privileged,omitempty"`
	Hermetic          bool              `json:"hermetic,omitempty"`
	ConfigPath        string            `json:"file,omitempty"`
	Config            *TaskConfig       `json:"config,omitempty"`
	Limits            *ContainerLimits  `json:"container_limits,omitempty"`
	Params            TaskEnv           `json:"params,omitempty"`
	Vars              Params            `json:"vars,omitempty"`
	Tags              Tags              `json:"tags,omitempty"`
	InputMapping      map[string]string `json:"input_mapping,omitempty"`
	OutputMapping     map[string]string `json:"output_mapping,omitempty"`
	ImageArtifactName string            `json:"image,omitempty"`
	Timeout           string            `json:"timeout,omitempty"`
}

// Visit calls v.VisitTask.
func (s *TaskStep) Visit(v StepVisitor) error { return v.VisitTask(s) }

// RunStep runs a prototype (experimental in Concourse).
type RunStep struct {
	Message    string           `json:"run"`
	Type       string           `json:"type"`
	Params     Params           `json:"params,omitempty"`
	Privileged bool             `json:"privileged,omitempty"`
	Tags       Tags             `json:"tags,omitempty"`
	Limits     *ContainerLimits `json:"container_limits,omitempty"`
	Timeout    string           `json:"timeout,omitempty"`
}

// Visit calls v.VisitRun.
func (s *RunStep) Visit(v StepVisitor) error { return v.VisitRun(s) }

// InstanceVars are the vars that name one instance of an instanced pipeline.
type InstanceVars map[string]any

// SetPipelineStep configures a pipeline from a file.
type SetPipelineStep struct {
	Name         string       `json:"set_pipeline"`
	File         string       `json:"file,omitempty"`
	Team         string       `json:"team,omitempty"`
	Vars         Params       `json:"vars,omitempty"`
	VarFiles     []string     `json:"var_files,omitempty"`
	InstanceVars InstanceVars `json:"instance_vars,omitempty"`
}

// Visit calls v.VisitSetPipeline.
func (s *SetPipelineStep) Visit(v StepVisitor) error { return v.VisitSetPipeline(s) }

// LoadVarStep loads a local var from a file.
type LoadVarStep struct {
	Name   string `json:"load_var"`
	File   string `json:"file,omitempty"`
	Format string `json:"format,omitempty"`
	Reveal bool   `json:"reveal,omitempty"`
}

// Visit calls v.VisitLoadVar.
func (s *LoadVarStep) Visit(v StepVisitor) error { return v.VisitLoadVar(s) }

// TryStep runs a step and succeeds whatever it does, unless the build is aborted.
type TryStep struct {
	Step Step `json:"try"`
}

// Visit calls v.VisitTry.
func (s *TryStep) Visit(v StepVisitor) error { return v.VisitTry(s) }

// DoStep runs steps in order.
type DoStep struct {
	Steps []Step `json:"do"`
}

// UnmarshalJSON decodes the steps one by one, so that an error names its index.
func (s *DoStep) UnmarshalJSON(data []byte) error {
	var raw struct {
		Steps []json.RawMessage `json:"do"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	steps, err := decodeSteps(raw.Steps, "do")
	if err != nil {
		return err
	}
	*s = DoStep{Steps: steps}
	return nil
}

// Visit calls v.VisitDo.
func (s *DoStep) Visit(v StepVisitor) error { return v.VisitDo(s) }

// InParallelStep runs steps at the same time.
type InParallelStep struct {
	Config InParallelConfig `json:"in_parallel"`
}

// Visit calls v.VisitInParallel.
func (s *InParallelStep) Visit(v StepVisitor) error { return v.VisitInParallel(s) }

// InParallelConfig is either a list of steps or {steps, limit, fail_fast}.
type InParallelConfig struct {
	Steps    []Step `json:"steps,omitempty"`
	Limit    int    `json:"limit,omitempty"`
	FailFast bool   `json:"fail_fast,omitempty"`
}

// UnmarshalJSON accepts a list of steps or a map.
func (c *InParallelConfig) UnmarshalJSON(data []byte) error {
	var list []json.RawMessage
	if err := json.Unmarshal(data, &list); err == nil {
		steps := make([]Step, len(list))
		for i, r := range list {
			if err := json.Unmarshal(r, &steps[i]); err != nil {
				return atPath(unwrapJSONError(err), Index(i))
			}
		}
		*c = InParallelConfig{Steps: steps}
		return nil
	}
	var m struct {
		Steps    []json.RawMessage `json:"steps"`
		Limit    int               `json:"limit"`
		FailFast bool              `json:"fail_fast"`
	}
	if err := json.Unmarshal(data, &m); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return unwrapJSONError(err)
		}
		return errors.New("in_parallel must be a list of steps or a map with steps, limit and fail_fast")
	}
	steps, err := decodeSteps(m.Steps, "steps")
	if err != nil {
		return err
	}
	*c = InParallelConfig{Steps: steps, Limit: m.Limit, FailFast: m.FailFast}
	return nil
}

// MarshalJSON writes the map form.
func (c InParallelConfig) MarshalJSON() ([]byte, error) {
	type plain InParallelConfig
	if c.Steps == nil {
		c.Steps = []Step{}
	}
	return json.Marshal(plain(c))
}

// AcrossStep runs its step once per combination of values of its vars.
type AcrossStep struct {
	Step     StepConfig        `json:"-"`
	Vars     []AcrossVarConfig `json:"across"`
	FailFast bool              `json:"fail_fast,omitempty"`
}

// AcrossVarConfig is one var of an across step.
type AcrossVarConfig struct {
	Var         string             `json:"var"`
	Values      any                `json:"values,omitempty"`
	MaxInFlight *MaxInFlightConfig `json:"max_in_flight,omitempty"`
}

// UnmarshalJSON decodes the vars one by one, so that an error names its var.
func (s *AcrossStep) UnmarshalJSON(data []byte) error {
	var raw struct {
		Vars     []json.RawMessage `json:"across"`
		FailFast bool              `json:"fail_fast,omitempty"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	var vars []AcrossVarConfig
	if raw.Vars != nil {
		vars = make([]AcrossVarConfig, len(raw.Vars))
	}
	for i, r := range raw.Vars {
		if err := json.Unmarshal(r, &vars[i]); err != nil {
			return atPath(unwrapJSONError(err), Key("across"), Index(i))
		}
	}
	*s = AcrossStep{Vars: vars, FailFast: raw.FailFast}
	return nil
}

// UnmarshalJSON decodes strictly, as Concourse does: a key that is not a field (`vars:`
// for `var:`) is an error.
func (c *AcrossVarConfig) UnmarshalJSON(data []byte) error {
	type plain AcrossVarConfig
	var p plain
	unknown, err := decodeKnown(data, &p, acrossVarFields())
	if err != nil {
		return err
	}
	for _, k := range slices.Sorted(maps.Keys(unknown)) {
		// encoding/json matches a field's name in any case, and so does Concourse's
		// strict decoding.
		if !slices.ContainsFunc(slices.Collect(maps.Keys(acrossVarFields())), func(f string) bool { return strings.EqualFold(f, k) }) {
			return atPath(&unknownFieldError{key: k, known: acrossVarFields()}, Key(k))
		}
	}
	*c = AcrossVarConfig(p)
	return nil
}

var acrossVarFields = fieldsOf[AcrossVarConfig]()

// Wrap sets the step the across runs.
func (s *AcrossStep) Wrap(sub StepConfig) { s.Step = sub }

// Unwrap returns the step the across runs.
func (s *AcrossStep) Unwrap() StepConfig { return s.Step }

// Visit calls v.VisitAcross.
func (s *AcrossStep) Visit(v StepVisitor) error { return v.VisitAcross(s) }

// TimeoutStep stops its step after a duration (a failure, not an error).
type TimeoutStep struct {
	Step StepConfig `json:"-"`
	// Duration stays a string so that it can be a ((var)).
	Duration string `json:"timeout"`
}

// Wrap sets the step the timeout limits.
func (s *TimeoutStep) Wrap(sub StepConfig) { s.Step = sub }

// Unwrap returns the step the timeout limits.
func (s *TimeoutStep) Unwrap() StepConfig { return s.Step }

// Visit calls v.VisitTimeout.
func (s *TimeoutStep) Visit(v StepVisitor) error { return v.VisitTimeout(s) }

// RetryStep runs its step up to Attempts times, until it succeeds.
type RetryStep struct {
	Step     StepConfig `json:"-"`
	Attempts int        `json:"attempts"`
}

// Wrap sets the step to retry.
func (s *RetryStep) Wrap(sub StepConfig) { s.Step = sub }

// Unwrap returns the step to retry.
func (s *RetryStep) Unwrap() StepConfig { return s.Step }

// Visit calls v.VisitRetry.
func (s *RetryStep) Visit(v StepVisitor) error { return v.VisitRetry(s) }

// OnSuccessStep runs Hook after Step succeeds.
type OnSuccessStep struct {
	Step StepConfig `json:"-"`
	Hook Step       `json:"on_success"`
}

// Wrap sets the step the hook follows.
func (s *OnSuccessStep) Wrap(sub StepConfig) { s.Step = sub }

// Unwrap returns the step the hook follows.
func (s *OnSuccessStep) Unwrap() StepConfig { return s.Step }

// Visit calls v.VisitOnSuccess.
func (s *OnSuccessStep) Visit(v StepVisitor) error { return v.VisitOnSuccess(s) }

// OnFailureStep runs Hook after Step fails.
type OnFailureStep struct {
	Step StepConfig `json:"-"`
	Hook Step       `json:"on_failure"`
}

// Wrap sets the step the hook follows.
func (s *OnFailureStep) Wrap(sub StepConfig) { s.Step = sub }

// Unwrap returns the step the hook follows.
func (s *OnFailureStep) Unwrap() StepConfig { return s.Step }

// Visit calls v.VisitOnFailure.
func (s *OnFailureStep) Visit(v StepVisitor) error { return v.VisitOnFailure(s) }

// OnErrorStep runs Hook after Step errors.
type OnErrorStep struct {
	Step StepConfig `json:"-"`
	Hook Step       `json:"on_error"`
}

// Wrap sets the step the hook follows.
func (s *OnErrorStep) Wrap(sub StepConfig) { s.Step = sub }

// Unwrap returns the step the hook follows.
func (s *OnErrorStep) Unwrap() StepConfig { return s.Step }

// Visit calls v.VisitOnError.
func (s *OnErrorStep) Visit(v StepVisitor) error { return v.VisitOnError(s) }

// OnAbortStep runs Hook after Step is aborted.
type OnAbortStep struct {
	Step StepConfig `json:"-"`
	Hook Step       `json:"on_abort"`
}

// Wrap sets the step the hook follows.
func (s *OnAbortStep) Wrap(sub StepConfig) { s.Step = sub }

// Unwrap returns the step the hook follows.
func (s *OnAbortStep) Unwrap() StepConfig { return s.Step }

// Visit calls v.VisitOnAbort.
func (s *OnAbortStep) Visit(v StepVisitor) error { return v.VisitOnAbort(s) }

// EnsureStep runs Hook after Step, whatever happened.
type EnsureStep struct {
	Step StepConfig `json:"-"`
	Hook Step       `json:"ensure"`
}

// Wrap sets the step the hook follows.
func (s *EnsureStep) Wrap(sub StepConfig) { s.Step = sub }

// Unwrap returns the step the hook follows.
func (s *EnsureStep) Unwrap() StepConfig { return s.Step }

// Visit calls v.VisitEnsure.
func (s *EnsureStep) Visit(v StepVisitor) error { return v.VisitEnsure(s) }
