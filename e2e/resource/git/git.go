package git

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/concourse-tekton/concourse-tekton/e2e/resource"
)

// Source is the resource's source configuration.
type Source struct {
	URI    string `json:"uri"`
	Branch string `json:"branch"`
}

func (s Source) validate() error {
	if s.URI == "" {
		return errors.New("source.uri is required")
	}
	return nil
}

func (s Source) branch() string {
	if s.Branch == "" {
		return "main"
	}
	return s.Branch
}

// Version is a commit.
type Version struct {
	Ref string `json:"ref"`
}

// MetadataField is one name-value pair of metadata.
type MetadataField = resource.MetadataField

// Response is what in and out print.
type Response = resource.Response[Version]

// Env is what a script reads and writes besides its request.
type Env struct {
	Args   []string
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	TmpDir string
}

// Main runs the script called name and returns its exit code.
func Main(name string, env Env) int {
	return resource.Main(name, resource.Scripts{
		Check: func() error { return Check(env) },
		In:    func() error { return In(env) },
		Out:   func() error { return Out(env) },
	}, env.Stderr)
}

// git runs git in dir, its output going to the log, and returns its stdout.
func git(env Env, dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	// Never prompt, and work in containers without a home.
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "HOME="+env.TmpDir,
		"GIT_AUTHOR_NAME=concourse-tekton", "GIT_AUTHOR_EMAIL=e2e@e2e.invalid",
		"GIT_COMMITTER_NAME=concourse-tekton", "GIT_COMMITTER_EMAIL=e2e@e2e.invalid")
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = env.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(out.String()), nil
}

func decode(r io.Reader, into any) error {
	if err := json.NewDecoder(r).Decode(into); err != nil {
		return fmt.Errorf("invalid payload: %w", err)
	}
	return nil
}

// Check prints the commits of the branch from the requested ref on, oldest first; the
// newest commit alone when there is no ref or it is gone (history rewritten).
func Check(env Env) error {
	var req struct {
		Source  Source   `json:"source"`
		Version *Version `json:"version"`
	}
	if err := decode(env.Stdin, &req); err != nil {
		return err
	}
	if err := req.Source.validate(); err != nil {
		return err
	}
	dir, err := os.MkdirTemp(env.TmpDir, "git-check")
	if err != nil {
		return fmt.Errorf("making a work directory: %w", err)
	}
	defer os.RemoveAll(dir)
	if _, err := git(env, dir, "clone", "-q", "--bare", "--single-branch", "--branch", req.Source.branch(), req.Source.URI, "repo"); err != nil {
		return err
	}
	repo := filepath.Join(dir, "repo")
	var out string
	if req.Version != nil && req.Version.Ref != "" {
		if _, err := git(env, repo, "cat-file", "-e", req.Version.Ref+"^{commit}"); err == nil {
			out, err = git(env, repo, "rev-list", "--reverse", "--first-parent", req.Version.Ref+"..HEAD")
			if err != nil {
				return err
			}
			out = strings.TrimSpace(req.Version.Ref + "\n" + out)
		}
	}
	if out == "" {
		if out, err = git(env, repo, "rev-parse", "HEAD"); err != nil {
			return err
		}
	}
	versions := []Version{}
	for _, ref := range strings.Fields(out) {
		versions = append(versions, Version{Ref: ref})
	}
	return json.NewEncoder(env.Stdout).Encode(versions)
}

// In clones the branch into the destination and checks out the requested ref.
func In(env Env) error {
	var req struct {
		Source  Source  `json:"source"`
		Version Version `json:"version"`
	}
	if err := decode(env.Stdin, &req); err != nil {
		return err
	}
	if err := req.Source.validate(); err != nil {
		return err
	}
	if len(env.Args) < 2 {
		return errors.New("destination path not specified")
	}
	dest := env.Args[1]
	if _, err := git(env, "", "clone", "-q", "--branch", req.Source.branch(), req.Source.URI, dest); err != nil {
		return err
	}
	ref := req.Version.Ref
	if ref == "" {
		ref = "HEAD"
	}
	if _, err := git(env, dest, "checkout", "-q", ref); err != nil {
		return err
	}
	sha, err := git(env, dest, "rev-parse", "HEAD")
	if err != nil {
		return err
	}
	// As concourse/git-resource does: the fetched ref, for tasks that want it.
	if err := os.WriteFile(filepath.Join(dest, ".git", "ref"), []byte(sha+"\n"), 0o644); err != nil {
		return fmt.Errorf("writing .git/ref: %w", err)
	}
	meta, err := git(env, dest, "log", "-1", "--format=%an%x00%s")
	if err != nil {
		return err
	}
	author, message, _ := strings.Cut(meta, "\x00")
	return json.NewEncoder(env.Stdout).Encode(Response{Version: Version{Ref: sha}, Metadata: []MetadataField{
		{Name: "commit", Value: sha}, {Name: "author", Value: author}, {Name: "message", Value: message},
	}})
}

// Out pushes params.repository (a directory below the sources) to the branch.
func Out(env Env) error {
	var req struct {
		Source Source `json:"source"`
		Params struct {
			Repository string `json:"repository"`
		} `json:"params"`
	}
	if err := decode(env.Stdin, &req); err != nil {
		return err
	}
	if err := req.Source.validate(); err != nil {
		return err
	}
	if len(env.Args) < 2 {
		return errors.New("source path not specified")
	}
	if req.Params.Repository == "" {
		return errors.New("params.repository is required")
	}
	repo := filepath.Join(env.Args[1], filepath.Clean("/"+req.Params.Repository))
	sha, err := git(env, repo, "rev-parse", "HEAD")
	if err != nil {
		return err
	}
	if _, err := git(env, repo, "push", "-q", req.Source.URI, "HEAD:refs/heads/"+req.Source.branch()); err != nil {
		return err
	}
	return json.NewEncoder(env.Stdout).Encode(Response{Version: Version{Ref: sha}, Metadata: []MetadataField{{Name: "commit", Value: sha}}})
}
