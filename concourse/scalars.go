package concourse

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// invalidValueError is a string value a custom decoder refused. The loader finds the value
// in the document to report it at its own position.
type invalidValueError struct {
	value string
	msg   string
}

func (e *invalidValueError) Error() string { return e.msg }

func invalidValue(value, format string, args ...any) error {
	return &invalidValueError{value: value, msg: fmt.Sprintf(format, args...)}
}

// Tags are worker tags. Empty strings are dropped when they are decoded, as Concourse does.
type Tags []string

// UnmarshalJSON drops empty tags.
func (t *Tags) UnmarshalJSON(data []byte) error {
	var raw []string
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	out := Tags{}
	for _, s := range raw {
		if s != "" {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		out = nil
	}
	*t = out
	return nil
}

// Version is a resource version: a map of strings.
type Version map[string]string

// Source is a resource's source configuration.
type Source map[string]any

// Params are the params of a get, put or resource type.
type Params map[string]any

// MetadataField is one name/value pair of resource metadata.
type MetadataField struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Metadata is the metadata a resource script reports with a version.
type Metadata []MetadataField

// VersionConfig is a get step's `version`: "latest", "every", or a pinned version.
type VersionConfig struct {
	Every  bool
	Latest bool
	Pinned Version
}

const (
	versionLatest = "latest"
	versionEvery  = "every"
)

// UnmarshalJSON accepts "latest", "every" or a map of strings.
func (c *VersionConfig) UnmarshalJSON(data []byte) error {
	var s string
	if err := json.Unmarshal(data, &s); err == nil {
		switch s {
		case versionLatest:
			*c = VersionConfig{Latest: true}
		case versionEvery:
			*c = VersionConfig{Every: true}
		default:
			return invalidValue(s, "invalid version %q: use \"latest\", \"every\" or a map of version fields", s)
		}
		return nil
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return errors.New(`invalid version: use "latest", "every" or a map of version fields`)
	}
	pinned := Version{}
	for k, v := range m {
		s, ok := v.(string)
		if !ok {
			return fmt.Errorf("invalid version: the value of %q must be a string, not %s", k, jsonKind(v))
		}
		pinned[k] = s
	}
	*c = VersionConfig{Pinned: pinned}
	return nil
}

// MarshalJSON writes the form it was read from.
func (c VersionConfig) MarshalJSON() ([]byte, error) {
	switch {
	case c.Every:
		return json.Marshal(versionEvery)
	case c.Pinned != nil:
		return json.Marshal(c.Pinned)
	default:
		return json.Marshal(versionLatest)
	}
}

// InputsConfig is a put step's `inputs`: "all", "detect", or a list of artifact names.
type InputsConfig struct {
	All       bool
	Detect    bool
	Specified []string
}

// UnmarshalJSON accepts "all", "detect" or a list of names (each trimmed).
func (c *InputsConfig) UnmarshalJSON(data []byte) error {
	var s string
	if err := json.Unmarshal(data, &s); err == nil {
		switch s {
		case "all":
			*c = InputsConfig{All: true}
		case "detect":
			*c = InputsConfig{Detect: true}
		default:
			return invalidValue(s, "invalid inputs %q: use \"all\", \"detect\" or a list of artifact names", s)
		}
		return nil
	}
	var names []string
	if err := json.Unmarshal(data, &names); err != nil {
		return errors.New(`invalid inputs: use "all", "detect" or a list of artifact names`)
	}
	out := make([]string, 0, len(names))
	for _, n := range names {
		out = append(out, strings.TrimSpace(n))
	}
	*c = InputsConfig{Specified: out}
	return nil
}

// MarshalJSON writes the form it was read from.
func (c InputsConfig) MarshalJSON() ([]byte, error) {
	switch {
	case c.All:
		return json.Marshal("all")
	case c.Detect:
		return json.Marshal("detect")
	default:
		if c.Specified == nil {
			return json.Marshal([]string{})
		}
		return json.Marshal(c.Specified)
	}
}

// DetectPutInputs are the artifacts a put mounts when its inputs are detected, which since
// Concourse v8 is also what a put without `inputs` mounts (exec.NewDetectInputs): for every
// string among the values of its params, at any depth of maps and lists, the string itself
// when it has no '/', else its first path segment other than "." and "..". A leading '/'
// makes that segment empty, so an absolute path names no artifact; keys, numbers and
// booleans name none either. The params are the step's, not interpolated. A name is a
// guess: one that is no artifact of the build is skipped when the put runs. The names are
// in the order of the params' sorted keys, each once.
func DetectPutInputs(params map[string]any) []string {
	var names []string
	seen := map[string]bool{}
	var walk func(any)
	walk = func(value any) {
		switch v := value.(type) {
		case string:
			name := v
			if parts := strings.Split(v, "/"); len(parts) > 1 {
				for _, part := range parts {
					if part != "." && part != ".." {
						name = part
						break
					}
				}
			}
			if name != "" && !seen[name] {
				seen[name] = true
				names = append(names, name)
			}
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(v)) {
				walk(v[k])
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(params)
	return names
}

// MaxInFlightConfig is an across var's `max_in_flight`: a number, or "all".
type MaxInFlightConfig struct {
	All   bool
	Limit int
}

// UnmarshalJSON accepts an integer or "all".
func (c *MaxInFlightConfig) UnmarshalJSON(data []byte) error {
	var s string
	if err := json.Unmarshal(data, &s); err == nil {
		if s != "all" {
			return invalidValue(s, "invalid max_in_flight %q: use a number or \"all\"", s)
		}
		*c = MaxInFlightConfig{All: true}
		return nil
	}
	var n int
	if err := json.Unmarshal(data, &n); err != nil {
		return errors.New(`invalid max_in_flight: use a number or "all"`)
	}
	*c = MaxInFlightConfig{Limit: n}
	return nil
}

// MarshalJSON writes "all" or the number.
func (c MaxInFlightConfig) MarshalJSON() ([]byte, error) {
	if c.All {
		return json.Marshal("all")
	}
	return json.Marshal(c.Limit)
}

// EffectiveLimit is how many may run at once given numValues values; 0 means no limit.
// Concourse runs across values one at a time when max_in_flight is not set.
func (c *MaxInFlightConfig) EffectiveLimit(numValues int) int {
	if c == nil {
		return 1
	}
	if c.All {
		return numValues
	}
	return c.Limit
}

// CheckEvery is a resource's `check_every`: "", "never", or a Go duration.
type CheckEvery struct {
	Never    bool
	Interval time.Duration
}

// UnmarshalJSON accepts "never" or a Go duration string.
func (c *CheckEvery) UnmarshalJSON(data []byte) error {
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return errors.New(`invalid check_every: use a duration such as "10m", or "never"`)
	}
	if s == "" {
		*c = CheckEvery{}
		return nil
	}
	if s == "never" {
		*c = CheckEvery{Never: true}
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return invalidValue(s, "invalid check_every %q: use a duration such as \"10m\", or \"never\"", s)
	}
	*c = CheckEvery{Interval: d}
	return nil
}

// MarshalJSON writes it as Concourse does: "never", the interval as Go prints a
// duration ("168h0m0s"), or "".
func (c CheckEvery) MarshalJSON() ([]byte, error) {
	return json.Marshal(c.String())
}

// String is the text MarshalJSON writes.
func (c CheckEvery) String() string {
	switch {
	case c.Never:
		return "never"
	case c.Interval != 0:
		return c.Interval.String()
	}
	return ""
}

// TaskEnv is a task's params: every value coerced to a string the way Concourse does.
type TaskEnv map[string]string

// UnmarshalJSON coerces each value: strings stay, numbers keep their JSON text, booleans
// become "true"/"false", objects and arrays become compact JSON, null becomes "".
func (e *TaskEnv) UnmarshalJSON(data []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		// A type error, so that encoding/json names the field (params) it is in.
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return &json.UnmarshalTypeError{Value: te.Value, Type: reflect.TypeFor[TaskEnv]()}
		}
		return err
	}
	out := make(TaskEnv, len(raw))
	for k, v := range raw {
		s, err := coerceString(v)
		if err != nil {
			return fmt.Errorf("invalid param %q: %w", k, err)
		}
		out[k] = s
	}
	*e = out
	return nil
}

func coerceString(v json.RawMessage) (string, error) {
	var anything any
	dec := json.NewDecoder(strings.NewReader(string(v)))
	dec.UseNumber()
	if err := dec.Decode(&anything); err != nil {
		return "", err
	}
	switch x := anything.(type) {
	case nil:
		return "", nil
	case string:
		return x, nil
	case json.Number:
		return x.String(), nil
	case bool:
		return strconv.FormatBool(x), nil
	default:
		b, err := json.Marshal(x)
		return string(b), err
	}
}

// ContainerLimits are a task's CPU shares and memory bytes.
type ContainerLimits struct {
	CPU    *CPULimit    `json:"cpu,omitempty"`
	Memory *MemoryLimit `json:"memory,omitempty"`
}

// CPULimit is a number of CPU shares.
type CPULimit uint64

// UnmarshalJSON accepts a non-negative integer (a number or a numeric string).
func (l *CPULimit) UnmarshalJSON(data []byte) error {
	n, err := parseUintish(data)
	if err != nil {
		return fmt.Errorf("invalid cpu limit: %w", err)
	}
	*l = CPULimit(n)
	return nil
}

// MemoryLimit is a number of bytes.
type MemoryLimit uint64

var memoryLimitRegexp = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)^(\d+)(([KMG])(i)?B?)?$`) })

// ParseMemoryLimit parses Concourse's memory limit syntax, where every unit is binary
// (K = 1024).
func ParseMemoryLimit(s string) (MemoryLimit, error) {
	m := memoryLimitRegexp().FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return 0, invalidValue(s, "invalid memory limit %q: use a number of bytes or a size such as 512MB or 1G", s)
	}
	n, err := strconv.ParseUint(m[1], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("invalid memory limit %q: %w", s, err)
	}
	switch strings.ToUpper(m[3]) {
	case "K":
		n <<= 10
	case "M":
		n <<= 20
	case "G":
		n <<= 30
	}
	return MemoryLimit(n), nil
}

// UnmarshalJSON accepts a number of bytes or a size string.
func (l *MemoryLimit) UnmarshalJSON(data []byte) error {
	var s string
	if err := json.Unmarshal(data, &s); err == nil {
		v, err := ParseMemoryLimit(s)
		if err != nil {
			return err
		}
		*l = v
		return nil
	}
	n, err := parseUintish(data)
	if err != nil {
		return fmt.Errorf("invalid memory limit: %w", err)
	}
	*l = MemoryLimit(n)
	return nil
}

func parseUintish(data []byte) (uint64, error) {
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		s = string(data)
	}
	n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
	if err != nil {
		f, ferr := strconv.ParseFloat(s, 64)
		if ferr != nil || f < 0 || f != float64(uint64(f)) {
			return 0, fmt.Errorf("%s is not a non-negative integer", string(data))
		}
		return uint64(f), nil
	}
	return n, nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case float64, json.Number, int, int64:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "a list"
	case map[string]any:
		return "a map"
	}
	return fmt.Sprintf("%T", v)
}
