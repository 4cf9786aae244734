package mock

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/concourse-tekton/concourse-tekton/e2e/resource"
)

// DefaultInitialVersion is what check emits when nothing else says otherwise.
const DefaultInitialVersion = "mock"

// Source is the resource's source configuration.
type Source struct {
	MirrorSelf        bool            `json:"mirror_self"`
	RawInitialVersion string          `json:"initial_version"`
	NoInitialVersion  bool            `json:"no_initial_version"`
	ForceVersion      string          `json:"force_version"`
	CreateFiles       map[string]any  `json:"create_files"`
	CheckDelay        string          `json:"check_delay"`
	CheckFailure      string          `json:"check_failure"`
	Metadata          []MetadataField `json:"metadata"`
	Log               string          `json:"log"`
	// PrintEnv makes check print its environment on stderr, as a put's print_env does.
	PrintEnv bool `json:"print_env"`
}

// Version is a version of the resource.
type Version struct {
	Version    string `json:"version"`
	Privileged string `json:"privileged,omitempty"`
}

// GetParams are the params of a get step.
type GetParams struct {
	MirrorSelfViaParams bool           `json:"mirror_self_via_params"`
	CreateFiles         map[string]any `json:"create_files_via_params"`
	Fail                string         `json:"fail"`
}

// PutParams are the params of a put step.
type PutParams struct {
	Version  string `json:"version"`
	PrintEnv bool   `json:"print_env"`
	File     string `json:"file"`
	Fail     string `json:"fail"`
}

// MetadataField is one name-value pair of metadata.
type MetadataField = resource.MetadataField

// Response is what in and out print.
type Response = resource.Response[Version]

// Env is everything a script reads or writes outside its request, so tests can run the
// scripts in-process as well as for real.
type Env struct {
	Args       []string // Args[1] is the destination (in) or source (out) directory
	Stdin      io.Reader
	Stdout     io.Writer
	Stderr     io.Writer
	Getenv     func(string) string
	Environ    func() []string
	Privileged func() (bool, error)
	Sleep      func(time.Duration)
}

// OSEnv is the process's own environment.
func OSEnv() Env {
	return Env{
		Args: os.Args, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		Getenv: os.Getenv, Environ: os.Environ, Privileged: IsPrivileged, Sleep: time.Sleep,
	}
}

// Main runs the script called name ("check", "in" or "out") and returns its exit code.
// Errors go to stderr, as Concourse shows them in the build log.
func Main(name string, env Env) int {
	return resource.Main(name, resource.Scripts{
		Check: func() error { return Check(env) },
		In:    func() error { return In(env) },
		Out:   func() error { return Out(env) },
	}, env.Stderr)
}

func decode(r io.Reader, strict bool, into any) error {
	d := json.NewDecoder(r)
	if strict {
		d.DisallowUnknownFields()
	}
	if err := d.Decode(into); err != nil {
		return fmt.Errorf("invalid payload: %w", err)
	}
	return nil
}

func (s Source) initialVersion(getenv func(string) string) string {
	if s.RawInitialVersion != "" {
		return s.RawInitialVersion
	}
	if v := getenv("MIRRORED_VERSION"); v != "" {
		return v
	}
	return DefaultInitialVersion
}

func logMessage(env Env, s Source) {
	if s.Log != "" {
		fmt.Fprintln(env.Stderr, s.Log)
	}
}

// Check emits the forced version, else the version it was given, else the initial one.
func Check(env Env) error {
	var req struct {
		Source  Source   `json:"source"`
		Version *Version `json:"version"`
	}
	if err := decode(env.Stdin, true, &req); err != nil {
		return err
	}
	logMessage(env, req.Source)
	if req.Source.PrintEnv {
		printEnv(env)
	}
	if req.Source.CheckDelay != "" {
		d, err := time.ParseDuration(req.Source.CheckDelay)
		if err != nil {
			return fmt.Errorf("malformed check_delay duration (%s): %w", req.Source.CheckDelay, err)
		}
		env.Sleep(d)
	}
	if req.Source.CheckFailure != "" {
		return fmt.Errorf("intentionally failing to check: %s", req.Source.CheckFailure)
	}
	versions := []Version{}
	switch {
	case req.Source.ForceVersion != "":
		versions = append(versions, Version{Version: req.Source.ForceVersion})
	case req.Version != nil:
		versions = append(versions, *req.Version)
	case !req.Source.NoInitialVersion:
		versions = append(versions, Version{Version: req.Source.initialVersion(env.Getenv)})
	}
	priv, err := env.Privileged()
	if err != nil {
		return fmt.Errorf("checking privilege: %w", err)
	}
	if priv {
		for i := range versions {
			versions[i].Privileged = "true"
		}
	}
	return json.NewEncoder(env.Stdout).Encode(versions)
}

// In writes the version, the privilege, and the files to create into the destination.
func In(env Env) error {
	var req struct {
		Source  Source    `json:"source"`
		Version Version   `json:"version"`
		Params  GetParams `json:"params"`
	}
	if err := decode(env.Stdin, false, &req); err != nil {
		return err
	}
	if len(env.Args) < 2 {
		return errors.New("destination path not specified")
	}
	dest := env.Args[1]
	logMessage(env, req.Source)
	if req.Params.Fail != "" {
		return fmt.Errorf("intentionally failing to get: %s", req.Params.Fail)
	}
	priv, err := env.Privileged()
	if err != nil {
		return fmt.Errorf("checking privilege: %w", err)
	}
	// As concourse/mock-resource says them (testflight waits for these lines).
	if priv {
		fmt.Fprintln(env.Stderr, "fetching in a privileged container")
	}
	fmt.Fprintf(env.Stderr, "fetching version: %s\n", req.Version.Version)
	if err := os.MkdirAll(dest, 0o755); err != nil {
		return fmt.Errorf("creating destination: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dest, "version"), []byte(req.Version.Version+"\n"), 0o644); err != nil {
		return fmt.Errorf("writing version file: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dest, "privileged"), []byte(strconv.FormatBool(priv)+"\n"), 0o644); err != nil {
		return fmt.Errorf("writing privileged file: %w", err)
	}
	files := map[string]any{}
	for k, v := range req.Source.CreateFiles {
		files[k] = v
	}
	for k, v := range req.Params.CreateFiles {
		files[k] = v
	}
	if err := createFiles(dest, files); err != nil {
		return err
	}
	if req.Source.MirrorSelf || req.Params.MirrorSelfViaParams {
		if err := mirrorSelf(dest, req.Version.Version, env.Stderr); err != nil {
			return err
		}
	}
	return json.NewEncoder(env.Stdout).Encode(Response{Version: req.Version, Metadata: metadata(req.Source)})
}

// printEnv writes the script's environment on stderr, sorted.
func printEnv(env Env) {
	vars := env.Environ()
	sort.Strings(vars)
	for _, v := range vars {
		fmt.Fprintln(env.Stderr, v)
	}
}

// Out emits the version given by the version param, or read from the file param.
func Out(env Env) error {
	var req struct {
		Source Source    `json:"source"`
		Params PutParams `json:"params"`
	}
	if err := decode(env.Stdin, true, &req); err != nil {
		return err
	}
	if len(env.Args) < 2 {
		return errors.New("source path not specified")
	}
	logMessage(env, req.Source)
	if req.Params.PrintEnv {
		printEnv(env)
	}
	if req.Params.Fail != "" {
		return fmt.Errorf("intentionally failing to put: %s", req.Params.Fail)
	}
	version := Version{Version: req.Params.Version}
	if req.Params.File != "" {
		b, err := os.ReadFile(filepath.Join(env.Args[1], req.Params.File))
		if err != nil {
			return fmt.Errorf("reading version file: %w", err)
		}
		version.Version = strings.TrimSpace(string(b))
	}
	priv, err := env.Privileged()
	if err != nil {
		return fmt.Errorf("checking privilege: %w", err)
	}
	if priv {
		fmt.Fprintln(env.Stderr, "pushing in a privileged container")
		version.Privileged = "true"
	}
	fmt.Fprintf(env.Stderr, "pushing version: %s\n", version.Version)
	return json.NewEncoder(env.Stdout).Encode(Response{Version: version, Metadata: metadata(req.Source)})
}

func metadata(s Source) []MetadataField {
	if s.Metadata == nil {
		return []MetadataField{}
	}
	return s.Metadata
}

// createFiles writes each file below dest: strings as they are, anything else as JSON.
func createFiles(dest string, files map[string]any) error {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		p := filepath.Join(dest, filepath.Clean("/"+n))
		var data []byte
		switch v := files[n].(type) {
		case string:
			data = []byte(v)
		default:
			b, err := json.Marshal(v)
			if err != nil {
				return fmt.Errorf("encoding %s: %w", n, err)
			}
			data = b
		}
		// As concourse/mock-resource does: a pipeline can hold a ((var)) for a file's
		// reader (a child pipeline, a task file) as START_VARnameEND_VAR.
		data = []byte(strings.NewReplacer("START_VAR", "((", "END_VAR", "))").Replace(string(data)))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("creating %s: %w", n, err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return fmt.Errorf("creating %s: %w", n, err)
		}
	}
	return nil
}

// mirrorSelf copies this container's root filesystem to dest/rootfs with the image
// metadata Concourse needs to run a task on it. What is mounted into the container (a
// pod's volumes: a build's volume, Secrets) is not the image's: an empty directory
// stands for each top-level mount.
func mirrorSelf(dest, version string, log io.Writer) error {
	rootfs := filepath.Join(dest, "rootfs")
	if err := os.MkdirAll(rootfs, 0o755); err != nil {
		return fmt.Errorf("creating rootfs: %w", err)
	}
	entries, err := os.ReadDir("/")
	if err != nil {
		return fmt.Errorf("reading /: %w", err)
	}
	mounts := mountPoints()
	for _, e := range entries {
		dst := filepath.Join(rootfs, e.Name())
		switch {
		case e.Name() == "tmp", e.Name() == "dev", e.Name() == "proc", e.Name() == "sys", mounts["/"+e.Name()] && e.IsDir():
			// Do not recurse into ourselves, or copy kernel file systems or volumes.
			if err := os.MkdirAll(dst, 0o755); err != nil {
				return fmt.Errorf("creating %s: %w", dst, err)
			}
			continue
		}
		if strings.HasPrefix(dest, "/"+e.Name()+"/") || dest == "/"+e.Name() {
			continue
		}
		cp := exec.Command("cp", "-a", "/"+e.Name(), dst)
		cp.Stdout, cp.Stderr = log, log
		if err := cp.Run(); err != nil {
			return fmt.Errorf("copying /%s: %w", e.Name(), err)
		}
	}
	var meta bytes.Buffer
	if err := json.NewEncoder(&meta).Encode(map[string]any{"env": []string{"MIRRORED_VERSION=" + version}, "user": "root"}); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dest, "metadata.json"), meta.Bytes(), 0o644); err != nil {
		return fmt.Errorf("writing metadata.json: %w", err)
	}
	return nil
}

// mountPoints are the mount points of this process's mount namespace
// (/proc/self/mountinfo); none where it cannot be read.
func mountPoints() map[string]bool {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	points := map[string]bool{}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) > 4 && f[4] != "/" {
			points[f[4]] = true
		}
	}
	return points
}

// capSysAdmin is CAP_SYS_ADMIN's bit in /proc/self/status's CapEff.
const capSysAdmin = 21

// IsPrivileged reports whether this process holds CAP_SYS_ADMIN, as a privileged
// container does and an ordinary one does not.
func IsPrivileged() (bool, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false, fmt.Errorf("reading capabilities: %w", err)
	}
	return privilegedFromStatus(string(b))
}

func privilegedFromStatus(status string) (bool, error) {
	for _, line := range strings.Split(status, "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				return false, fmt.Errorf("parsing CapEff %q: %w", v, err)
			}
			return caps&(1<<capSysAdmin) != 0, nil
		}
	}
	return false, errors.New("no CapEff in /proc/self/status")
}
