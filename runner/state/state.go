package state

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// Dir is a build's state directory.
type Dir struct {
	Path string
}

// New returns the state directory of the build volume mounted at volume.
func New(volume string) Dir {
	return Dir{Path: filepath.Join(volume, runspec.StateDir)}
}

func (d Dir) file(sub, id string) string {
	return filepath.Join(d.Path, sub, runspec.Escape(id))
}

// write replaces path's content atomically.
func write(path string, data []byte) error {
	tmp, err := temp(path, data)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// writeOnce gives path the content data unless it already has one; it returns the content
// that won and whether it was data.
func writeOnce(path string, data []byte) ([]byte, bool, error) {
	tmp, err := temp(path, data)
	if err != nil {
		return nil, false, err
	}
	defer os.Remove(tmp)
	err = os.Link(tmp, path)
	if err == nil {
		return data, true, nil
	}
	if !errors.Is(err, fs.ErrExist) {
		return nil, false, fmt.Errorf("writing %s: %w", path, err)
	}
	existing, err := os.ReadFile(path)
	if err != nil {
		return nil, false, fmt.Errorf("reading %s: %w", path, err)
	}
	return existing, false, nil
}

func temp(path string, data []byte) (string, error) {
	if err := MkdirShared(filepath.Dir(path)); err != nil {
		return "", fmt.Errorf("creating the directory of %s: %w", path, err)
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return "", fmt.Errorf("writing %s: %w", path, err)
	}
	_, werr := f.Write(data)
	perr := f.Chmod(0o666)
	cerr := f.Close()
	if err := errors.Join(werr, perr, cerr); err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("writing %s: %w", path, err)
	}
	return f.Name(), nil
}

// MkdirShared makes dir and its missing parents writable by everyone. The pods of one
// build run as whatever users their images say (root for a resource, 1000 for a task,
// 65532 for the runner's own image), and each must be able to add its files; the volume
// belongs to the build alone.
func MkdirShared(dir string) error {
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	if parent := filepath.Dir(dir); parent != dir {
		if err := MkdirShared(parent); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, 0o777); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	// The umask took bits away from the mode; a directory another process made in the
	// meantime is left as it is.
	if err := os.Chmod(dir, 0o777); err != nil && !errors.Is(err, fs.ErrPermission) {
		return err
	}
	return nil
}

// read returns a file's content, with found false when there is no such file.
func read(path string) ([]byte, bool, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("reading %s: %w", path, err)
	}
	return data, true, nil
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// WriteOutcome records a step's outcome (overwriting: a join may record a composite's).
func (d Dir) WriteOutcome(planID string, o runspec.Outcome) error {
	return write(d.file(runspec.OutcomesDir, planID), []byte(string(o)+"\n"))
}

// Outcome reads one recorded outcome. A file that holds no outcome word counts as errored:
// whoever wrote it did not end cleanly.
func (d Dir) Outcome(planID string) (runspec.Outcome, bool, error) {
	data, found, err := read(d.file(runspec.OutcomesDir, planID))
	if err != nil || !found {
		return "", found, err
	}
	o, ok := runspec.ParseOutcome(strings.TrimSpace(string(data)))
	if !ok {
		return runspec.Errored, true, nil
	}
	return o, true, nil
}

// Outcomes reads the recorded outcome of every ID in ids.
func (d Dir) Outcomes(ids []string) (map[string]runspec.Outcome, error) {
	out := map[string]runspec.Outcome{}
	for _, id := range ids {
		o, found, err := d.Outcome(id)
		if err != nil {
			return nil, err
		}
		if found {
			out[id] = o
		}
	}
	return out, nil
}

// Abort writes the build's abort marker. Aborting twice is not an error.
func (d Dir) Abort(at time.Time) error {
	_, _, err := writeOnce(filepath.Join(d.Path, runspec.AbortMarker), []byte(at.UTC().Format(time.RFC3339Nano)+"\n"))
	return err
}

// Aborted tells whether the build was aborted.
func (d Dir) Aborted() bool {
	return exists(filepath.Join(d.Path, runspec.AbortMarker))
}

// Fire marks a fail-fast group as fired by one of its children.
func (d Dir) Fire(group, child string) error {
	_, _, err := writeOnce(d.file(runspec.FailFastDir, group), []byte(child+"\n"))
	return err
}

// Fired tells whether a fail-fast group fired.
func (d Dir) Fired(group string) bool {
	return exists(d.file(runspec.FailFastDir, group))
}

// FiredGroups returns, of groups, those that fired.
func (d Dir) FiredGroups(groups []string) map[string]bool {
	out := map[string]bool{}
	for _, g := range groups {
		if d.Fired(g) {
			out[g] = true
		}
	}
	return out
}

// ClaimStart records that a fail-fast group's child has started.
func (d Dir) ClaimStart(child string) error {
	_, _, err := writeOnce(d.file(runspec.StartedDir, child), []byte("started\n"))
	return err
}

// Started tells whether a fail-fast group's child has started.
func (d Dir) Started(child string) bool {
	return exists(d.file(runspec.StartedDir, child))
}

// DeadlineStart returns when the timeout id started: now, if this is the first step under
// it to ask, or what the first one recorded.
func (d Dir) DeadlineStart(id string, now time.Time) (time.Time, error) {
	data, _, err := writeOnce(d.file(runspec.DeadlinesDir, id), []byte(now.UTC().Format(time.RFC3339Nano)+"\n"))
	if err != nil {
		return time.Time{}, err
	}
	t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(string(data)))
	if err != nil {
		return time.Time{}, fmt.Errorf("reading the start of timeout %s: %w", id, err)
	}
	return t, nil
}

// Detach returns whether the hook id runs detached: done, if this is the first step of the
// hook to ask, or what the first one recorded.
func (d Dir) Detach(id string, done bool) (bool, error) {
	word := map[bool]string{true: "detached\n", false: "attached\n"}
	data, _, err := writeOnce(d.file(runspec.DetachDir, id), []byte(word[done]))
	if err != nil {
		return false, err
	}
	return string(data) == word[true], nil
}

func (d Dir) scoped(scope string, kind, name string) string {
	return filepath.Join(d.Path, runspec.ScopesDir, runspec.Escape(scope), kind, runspec.Escape(name))
}

// innermostFirst lists the scopes a lookup searches: the step's own first, the root last.
func innermostFirst(scope []string) []string {
	out := make([]string, 0, len(scope)+1)
	for i := len(scope) - 1; i >= 0; i-- {
		out = append(out, scope[i])
	}
	return append(out, "")
}

func innermost(scope []string) string {
	if len(scope) == 0 {
		return ""
	}
	return scope[len(scope)-1]
}

// RegisterArtifact registers name, in the step's innermost scope, as the volume at
// volPath (relative to the volume root). Registering a name again overwrites it.
func (d Dir) RegisterArtifact(scope []string, name, volPath string) error {
	return write(d.scoped(innermost(scope), "artifacts", name), []byte(volPath))
}

// Artifact looks name up from the innermost scope out; it returns the volume path.
func (d Dir) Artifact(scope []string, name string) (string, bool, error) {
	for _, s := range innermostFirst(scope) {
		data, found, err := read(d.scoped(s, "artifacts", name))
		if err != nil {
			return "", false, err
		}
		if found {
			return cleanVolumePath(string(data)), true, nil
		}
	}
	return "", false, nil
}

// cleanVolumePath keeps a registered path inside the volume, whatever the file says.
func cleanVolumePath(p string) string {
	return path.Clean("/" + p)[1:]
}

// Artifacts returns every artifact visible from the scope, name to volume path.
func (d Dir) Artifacts(scope []string) (map[string]string, error) {
	out := map[string]string{}
	err := d.eachEntry(scope, "artifacts", func(s, dir, file, name string) error {
		if _, shadowed := out[name]; shadowed {
			return nil
		}
		data, found, err := read(filepath.Join(dir, file))
		if err != nil {
			return err
		}
		if found {
			out[name] = cleanVolumePath(string(data))
		}
		return nil
	})
	return out, err
}

// eachEntry calls fn on every entry of a kind ("artifacts", "vars") in the scopes,
// innermost first: the scope, its directory, the entry's file name and its name.
func (d Dir) eachEntry(scope []string, kind string, fn func(s, dir, file, name string) error) error {
	for _, s := range innermostFirst(scope) {
		dir := filepath.Join(d.Path, runspec.ScopesDir, runspec.Escape(s), kind)
		entries, err := os.ReadDir(dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("listing %s: %w", kind, err)
		}
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), ".tmp-") {
				continue
			}
			name, err := unescape(e.Name())
			if err != nil {
				continue
			}
			if err := fn(s, dir, e.Name(), name); err != nil {
				return err
			}
		}
	}
	return nil
}

func unescape(s string) (string, error) {
	if s == "%" {
		return "", nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		if i+2 >= len(s) {
			return "", fmt.Errorf("bad escape in %q", s)
		}
		c, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
		if err != nil {
			return "", fmt.Errorf("bad escape in %q: %w", s, err)
		}
		b.WriteByte(byte(c))
		i += 2
	}
	return b.String(), nil
}

// Var is a local var: its value and whether it must be redacted.
type Var struct {
	Value  any  `json:"value"`
	Redact bool `json:"redact,omitempty"`
}

// SetVar sets a local var in the step's innermost scope.
func (d Dir) SetVar(scope []string, name string, v Var) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding var %s: %w", name, err)
	}
	return write(d.scoped(innermost(scope), "vars", name), data)
}

// LookupVar looks a local var up from the innermost scope out.
func (d Dir) LookupVar(scope []string, name string) (Var, bool, error) {
	for _, s := range innermostFirst(scope) {
		v, found, err := d.LookupVarIn(s, name)
		if err != nil || found {
			return v, found, err
		}
	}
	return Var{}, false, nil
}

// LookupVarIn looks a local var up in one scope only.
func (d Dir) LookupVarIn(scope, name string) (Var, bool, error) {
	data, found, err := read(d.scoped(scope, "vars", name))
	if err != nil || !found {
		return Var{}, false, err
	}
	var v Var
	if err := decodeJSON(data, &v); err != nil {
		return Var{}, false, fmt.Errorf("reading var %s: %w", name, err)
	}
	return v, true, nil
}

// ScopeVars returns every local var set in the scopes, innermost first, shadowed ones
// included: Concourse keeps tracking a redacted value that another shadows, so a step
// redacts every one it can see.
func (d Dir) ScopeVars(scope []string) ([]Var, error) {
	var out []Var
	err := d.eachEntry(scope, "vars", func(s, _, _, name string) error {
		v, found, err := d.LookupVarIn(s, name)
		if found {
			out = append(out, v)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Result is what a get, put or check produced.
type Result struct {
	Version  map[string]string `json:"version"`
	Metadata []MetadataField   `json:"metadata,omitempty"`
}

// MetadataField is one name/value pair of a resource's metadata.
type MetadataField struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// WriteResult records a step's version and metadata for a later version_from.
func (d Dir) WriteResult(planID string, r Result) error {
	return d.writeJSON(runspec.ResultsDir, planID, "the result of "+planID, r)
}

// ReadResult reads a step's recorded result.
func (d Dir) ReadResult(planID string) (Result, bool, error) {
	var r Result
	found, err := d.readJSON(runspec.ResultsDir, planID, "the result of "+planID, &r)
	return r, found, err
}

// writeJSON writes v as the JSON file id of the state's directory sub; what names it in
// errors.
func (d Dir) writeJSON(sub, id, what string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding %s: %w", what, err)
	}
	return write(d.file(sub, id), data)
}

// readJSON reads the JSON file id of the state's directory sub into v.
func (d Dir) readJSON(sub, id, what string, v any) (bool, error) {
	data, found, err := read(d.file(sub, id))
	if err != nil || !found {
		return found, err
	}
	if err := decodeJSON(data, v); err != nil {
		return false, fmt.Errorf("reading %s: %w", what, err)
	}
	return true, nil
}

// WriteConfig records the task config a resolve step read for a task.
func (d Dir) WriteConfig(taskPlanID string, config []byte) error {
	return write(d.file(runspec.ConfigsDir, taskPlanID), config)
}

// ReadConfig reads the task config recorded for a task.
func (d Dir) ReadConfig(taskPlanID string) ([]byte, bool, error) {
	return read(d.file(runspec.ConfigsDir, taskPlanID))
}

// Combinations are the values an across step's resolver found: the vars' names, and one
// list of values (in the vars' order) per combination.
type Combinations struct {
	Vars   []string `json:"vars"`
	Values [][]any  `json:"values"`
}

// Combination is combination i as local vars, name to value.
func (c Combinations) Combination(i int) (map[string]any, bool) {
	if i < 0 || i >= len(c.Values) || len(c.Values[i]) != len(c.Vars) {
		return nil, false
	}
	out := make(map[string]any, len(c.Vars))
	for j, name := range c.Vars {
		out[name] = c.Values[i][j]
	}
	return out, true
}

// WriteCombinations records an across step's combinations for its slots.
func (d Dir) WriteCombinations(acrossPlanID string, c Combinations) error {
	return d.writeJSON(runspec.AcrossDir, acrossPlanID, "the combinations of across "+acrossPlanID, c)
}

// ReadCombinations reads an across step's recorded combinations.
func (d Dir) ReadCombinations(acrossPlanID string) (Combinations, bool, error) {
	var c Combinations
	found, err := d.readJSON(runspec.AcrossDir, acrossPlanID, "the combinations of across "+acrossPlanID, &c)
	return c, found, err
}

func decodeJSON(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return dec.Decode(v)
}
