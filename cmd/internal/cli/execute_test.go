package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/tektonrun"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

const executeTaskFile = `platform: linux
image_resource: {type: registry-image, source: {repository: ((image))}}
inputs: [{name: src}, {name: ci, optional: true}, {name: here}]
outputs: [{name: out}]
run: {path: sh, args: [-c, ((script))]}
`

var (
	repoGet = concourse.GetPlan{Name: "repo", Type: "git", Source: concourse.Source{"uri": "repo.git"}, Version: &concourse.Version{"ref": "r1"}}
	ciGet   = concourse.GetPlan{Name: "ci", Type: "git", Source: concourse.Source{"uri": "ci.git"}, Version: &concourse.Version{"ref": "c1"}}
)

// jobInputs are a job's inputs repo and ci.
func jobInputs(name string) (tektonrun.JobInput, bool) {
	for _, g := range []concourse.GetPlan{repoGet, ciGet} {
		if g.Name == name {
			return tektonrun.JobInput{Name: name, Get: g, Image: "git-resource"}, true
		}
	}
	return tektonrun.JobInput{}, false
}

func TestExecutePlan(t *testing.T) {
	dir := t.TempDir()
	task := filepath.Join(dir, "task.yml")
	if err := os.WriteFile(task, []byte(executeTaskFile), 0o644); err != nil {
		t.Fatal(err)
	}
	src, here := filepath.Join(dir, "src"), filepath.Join(dir, "here")
	for _, d := range []string{src, here} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name        string
		flags       executeFlags
		cwd         string
		args        []string
		wantInputs  []localDir
		wantOutputs []localDir
		wantArgs    []string
		wantErr     string
		job         func(string) (tektonrun.JobInput, bool)
		wantGets    []concourse.GetPlan
		wantMapping map[string]string
		wantImage   *concourse.ImageResource
	}{
		{
			name:        "inputs in the task's order, the current directory's by its name, outputs, args appended",
			flags:       executeFlags{inputs: []string{"src=" + src}, outputs: []string{"out=" + dir + "/o"}},
			cwd:         here,
			args:        []string{"extra"},
			wantInputs:  []localDir{{"src", src}, {"here", here}},
			wantOutputs: []localDir{{"out", dir + "/o"}},
			wantArgs:    []string{"-c", "echo hi", "extra"},
		},
		{name: "an unknown input", flags: executeFlags{inputs: []string{"nope=" + src}}, cwd: here, wantErr: "unknown input `nope`"},
		{name: "a required input missing", flags: executeFlags{}, cwd: here, wantErr: "missing required input `src`"},
		{name: "an input that is a file", flags: executeFlags{inputs: []string{"src=" + filepath.Join(dir, "file")}}, cwd: here, wantErr: "is not a directory"},
		{name: "an input given twice", flags: executeFlags{inputs: []string{"src=" + src, "src=" + here}}, cwd: here, wantErr: "input `src` given twice"},
		{name: "a bad pair", flags: executeFlags{inputs: []string{"src"}}, cwd: here, wantErr: `invalid -i "src": use NAME=DIR`},
		{name: "an unknown output", flags: executeFlags{inputs: []string{"src=" + src}, outputs: []string{"res=x"}}, cwd: here, wantErr: "unknown output `res`"},
		{
			name:        "inputs from a job, one mapped, the local one first",
			flags:       executeFlags{inputs: []string{"here=" + here}, mappings: []string{"src=repo"}},
			cwd:         dir,
			job:         jobInputs,
			wantInputs:  []localDir{{"here", here}},
			wantGets:    []concourse.GetPlan{repoGet, ciGet},
			wantMapping: map[string]string{"src": "repo"},
			wantArgs:    []string{"-c", "echo hi"},
		},
		{
			name:      "the image from a job's input",
			flags:     executeFlags{inputs: []string{"src=" + src, "here=" + here}, image: "ci"},
			cwd:       dir,
			job:       jobInputs,
			wantGets:  []concourse.GetPlan{ciGet},
			wantImage: &concourse.ImageResource{Type: "git", Source: concourse.Source{"uri": "ci.git"}, Version: concourse.Version{"ref": "c1"}},
		},
		{name: "an input the job lacks", flags: executeFlags{inputs: []string{"src=" + src}}, cwd: dir, job: func(string) (tektonrun.JobInput, bool) { return tektonrun.JobInput{}, false }, wantErr: "missing required input `here`"},
		{name: "-m without -j", flags: executeFlags{mappings: []string{"src=repo"}}, cwd: here, wantErr: "give the job with -j"},
		{name: "--image the job lacks", flags: executeFlags{image: "nope"}, cwd: here, job: jobInputs, wantErr: "the job has no input `nope` for --image"},
		{name: "outputs in the background", flags: executeFlags{inputs: []string{"src=" + src}, outputs: []string{"out=x"}, background: true}, cwd: here, wantErr: "background execution cannot withstand outputs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &streams{out: &strings.Builder{}, err: &strings.Builder{}}
			f := tt.flags
			f.config = task
			f.compile.vars.vars = []string{"image=busybox", "script=echo hi"}
			o, err := s.executePlan(&f, tt.args, tt.cwd, tt.job)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to say %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			cfg, inputs, outputs, used := o.cfg, o.uploads, o.outputs, o.used
			if diff := cmp.Diff(tt.wantGets, o.gets); diff != "" {
				t.Errorf("gets (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantMapping, o.mapping, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("input mapping (-want +got):\n%s", diff)
			}
			if tt.wantImage != nil {
				if diff := cmp.Diff(tt.wantImage, cfg.ImageResource); diff != "" {
					t.Errorf("image (-want +got):\n%s", diff)
				}
				return
			}
			if diff := cmp.Diff(tt.wantInputs, inputs, cmp.AllowUnexported(localDir{})); diff != "" {
				t.Errorf("inputs (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantOutputs, outputs, cmp.AllowUnexported(localDir{})); diff != "" {
				t.Errorf("outputs (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantArgs, cfg.Run.Args); diff != "" {
				t.Errorf("run.args (-want +got):\n%s", diff)
			}
			if repo := cfg.ImageResource.Source["repository"]; repo != "busybox" {
				t.Errorf("((image)) = %v, want busybox", repo)
			}
			if len(used) != 2 {
				t.Errorf("vars used = %v, want image and script", used)
			}
		})
	}
}

func TestExecuteInvalidTaskConfig(t *testing.T) {
	task := filepath.Join(t.TempDir(), "task.yml")
	if err := os.WriteFile(task, []byte("platform: linux\nrun: {path: x}\ninputs: [{nme: a}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := run(t, "", "execute", "-c", task)
	if code != 1 || !strings.Contains(stderr, "task.yml:3:") || !strings.Contains(stderr, "is not a valid task config") {
		t.Errorf("exit %d, stderr:\n%s", code, stderr)
	}
}

func TestGitFiles(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	dir := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	if got := gitFiles(t.Context(), dir); got != nil {
		t.Errorf("outside a work tree: %v, want nil (every file)", got)
	}
	git("init", "-q")
	for name, content := range map[string]string{".gitignore": "*.log\nbuild/\n", "a.go": "a", "gone": "g", "new.txt": "n", "x.log": "l", "build/out": "o"} {
		p := filepath.Join(dir, name)
		_ = os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git("add", ".gitignore", "a.go", "gone")
	if err := os.Remove(filepath.Join(dir, "gone")); err != nil {
		t.Fatal(err)
	}
	got := gitFiles(t.Context(), dir)
	slices.Sort(got)
	if diff := cmp.Diff([]string{".gitignore", "a.go", "new.txt"}, got); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
}

// TestExecuteTaskFileWarnings: the task file's warnings are said at their positions in
// it, before anything runs; --image gives the image a file without one lacks.
func TestExecuteTaskFileWarnings(t *testing.T) {
	dir := t.TempDir()
	task := filepath.Join(dir, "task.yml")
	if err := os.WriteFile(task, []byte("platform: linux\nrun: {path: x}\ncaches: [{}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	noImage := "warning: " + task + ":1:1: the task config has no image: "
	noPath := "warning: " + task + ":3:10: caches[0]: cache has no path: "
	for _, tt := range []struct {
		name  string
		flags executeFlags
		job   func(string) (tektonrun.JobInput, bool)
		want  []string
	}{
		{"no image", executeFlags{}, nil, []string{noImage, noPath}},
		{"--image", executeFlags{image: "repo"}, jobInputs, []string{noPath}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stderr strings.Builder
			s := &streams{out: &strings.Builder{}, err: &stderr}
			f := tt.flags
			f.config = task
			if _, err := s.executePlan(&f, nil, dir, tt.job); err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
			if len(lines) != len(tt.want) {
				t.Fatalf("stderr:\n%s\nwant %d lines", stderr.String(), len(tt.want))
			}
			for i, want := range tt.want {
				if !strings.HasPrefix(lines[i], want) {
					t.Errorf("line %q; want it to start with %q", lines[i], want)
				}
			}
		})
	}
}
