package concourse

import (
	"errors"
	"io/fs"
	"path"
	"strings"
)

// LoadTaskFiles reads the task configs that the pipeline's `task: file:` steps name from
// artifacts known before the build runs: inputs maps an artifact's name to its files
// (os.DirFS of a local checkout, say). A step whose artifact is not in inputs is left for
// the build to read. The configs are keyed by the `file:` as written (`repo/ci/test.yml`).
//
// It reads only through the file systems it is handed. A file that is missing or is not a
// valid task config is an error at the step that names it (its `file` key), and every
// such problem is reported at once, as an *InvalidConfigError.
func (p *Pipeline) LoadTaskFiles(inputs map[string]fs.FS) (map[string]TaskConfig, error) {
	configs := map[string]TaskConfig{}
	failed := map[string][]string{} // the problems of each file, read once
	var diags Diagnostics
	for i := range p.Config.Jobs {
		job := &p.Config.Jobs[i]
		p.WalkJob(job, Path{Key("jobs"), Named(i, job.Name)}, func(sc StepConfig, at Path) {
			t, ok := sc.(*TaskStep)
			if !ok || t.ConfigPath == "" {
				return
			}
			artifact, rel, found := strings.Cut(t.ConfigPath, "/")
			fsys, given := inputs[artifact]
			if _, done := configs[t.ConfigPath]; done || !found || !given {
				return
			}
			problems, seen := failed[t.ConfigPath]
			if !seen {
				cfg, ps := loadTaskFile(fsys, artifact, t.ConfigPath, rel)
				if ps == nil {
					configs[t.ConfigPath] = cfg
					return
				}
				problems, failed[t.ConfigPath] = ps, ps
			}
			for _, problem := range problems {
				diags = append(diags, p.Diagnostic(SeverityError, at.Child(Key("file")), "task %q: %s", t.Name, problem))
			}
		}, nil)
	}
	diags.sort()
	if err := diags.Err(); err != nil {
		return nil, err
	}
	return configs, nil
}

// loadTaskFile reads the task config at rel in an artifact's files, or says what is wrong
// with it, one problem a line.
func loadTaskFile(fsys fs.FS, artifact, file, rel string) (TaskConfig, []string) {
	data, err := fs.ReadFile(fsys, path.Clean(rel))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return TaskConfig{}, []string{"the artifact " + artifact + " has no file " + rel + ": fix the path, or give the directory of the artifact that has it"}
	case err != nil:
		return TaskConfig{}, []string{"reading " + file + ": " + err.Error()}
	}
	cfg, err := LoadTaskConfig(file, data)
	if err == nil {
		return cfg, nil
	}
	var invalid *InvalidConfigError
	if !errors.As(err, &invalid) {
		return TaskConfig{}, []string{"invalid task file: " + err.Error()}
	}
	var problems []string
	for _, d := range invalid.Diagnostics {
		problems = append(problems, "invalid task file: "+d.Error())
	}
	return TaskConfig{}, problems
}
