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
// It reads only through the file systems it is handed, each file once. A file that is
// missing or is not a valid task config is an error at each step that names it (its
// `file` key); a valid file's warnings are at their positions in the file, once (that it
// names no image, only when a step that names it gives none). The diagnostics hold every
// problem at once; the configs are nil when one is an error.
func (p *Pipeline) LoadTaskFiles(inputs map[string]fs.FS) (map[string]TaskConfig, Diagnostics) {
	type use struct {
		step *TaskStep
		at   Path
	}
	uses := map[string][]use{} // the steps that name each file given
	var files []string         // in the order of their first step
	for i := range p.Config.Jobs {
		job := &p.Config.Jobs[i]
		p.WalkJob(job, Path{Key("jobs"), Named(i, job.Name)}, func(sc StepConfig, at Path) {
			t, ok := sc.(*TaskStep)
			if !ok || t.ConfigPath == "" {
				return
			}
			artifact, _, found := strings.Cut(t.ConfigPath, "/")
			if _, given := inputs[artifact]; !found || !given {
				return
			}
			if uses[t.ConfigPath] == nil {
				files = append(files, t.ConfigPath)
			}
			uses[t.ConfigPath] = append(uses[t.ConfigPath], use{t, at})
		}, nil)
	}
	configs := map[string]TaskConfig{}
	var diags Diagnostics
	for _, file := range files {
		imageGiven := true
		for _, u := range uses[file] {
			imageGiven = imageGiven && u.step.ImageArtifactName != ""
		}
		artifact, rel, _ := strings.Cut(file, "/")
		cfg, warnings, problems := loadTaskFile(inputs[artifact], artifact, file, rel, imageGiven)
		if problems == nil {
			configs[file] = cfg
			diags = append(diags, warnings...)
			continue
		}
		for _, u := range uses[file] {
			for _, problem := range problems {
				diags = append(diags, p.Diagnostic(SeverityError, u.at.Child(Key("file")), "task %q: %s", u.step.Name, problem))
			}
		}
	}
	diags.sort()
	if diags.Err() != nil {
		return nil, diags
	}
	return configs, diags
}

// loadTaskFile reads the task config at rel in an artifact's files, with its warnings,
// or says what is wrong with it, one problem a line.
func loadTaskFile(fsys fs.FS, artifact, file, rel string, imageGiven bool) (TaskConfig, Diagnostics, []string) {
	data, err := readFile(fsys, path.Clean(rel))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return TaskConfig{}, nil, []string{"the artifact " + artifact + " has no file " + rel + ": fix the path, or give the directory of the artifact that has it"}
	case err != nil:
		return TaskConfig{}, nil, []string{"reading " + file + ": " + err.Error()}
	}
	cfg, diags := LoadTaskConfig(file, data, TaskFileOptions{ImageGiven: imageGiven})
	errs := diags.Errors()
	if len(errs) == 0 {
		return cfg, diags, nil
	}
	var problems []string
	for _, d := range errs {
		problems = append(problems, "invalid task file: "+d.Error())
	}
	return TaskConfig{}, nil, problems
}

// readFile is fs.ReadFile bounded by the loader's limit (ReadConfig).
func readFile(fsys fs.FS, name string) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadConfig(name, f)
}
