package mock

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// runAsEnv makes the test binary act as the resource script it is linked as, so the
// tests below run check, in and out as real processes, the way Concourse does.
const runAsEnv = "MOCK_RESOURCE_TEST_RUN_AS_SCRIPT"

func TestMain(m *testing.M) {
	if os.Getenv(runAsEnv) == "1" {
		env := OSEnv()
		// The test machine's own privilege is irrelevant; MOCK_PRIVILEGED fakes it.
		env.Privileged = func() (bool, error) { return os.Getenv("MOCK_PRIVILEGED") == "true", nil }
		os.Exit(Main(filepath.Base(os.Args[0]), env))
	}
	os.Exit(m.Run())
}

// scripts links the test binary as check, in and out in a fresh directory.
func scripts(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, s := range []string{"check", "in", "out"} {
		if err := os.Symlink(self, filepath.Join(dir, s)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

type result struct {
	stdout, stderr string
	code           int
}

func run(t *testing.T, bin, script, request string, env []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(filepath.Join(bin, script), args...)
	cmd.Env = append([]string{runAsEnv + "=1", "PATH=/usr/bin:/bin"}, env...)
	cmd.Stdin = strings.NewReader(request)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running %s: %v", script, err)
	}
	return result{out.String(), errb.String(), code}
}

// succeeded checks the exit code and stderr, and tells whether there is a reply to read.
func (r result) succeeded(t *testing.T, wantCode int, wantStderr string) bool {
	t.Helper()
	if r.code != wantCode {
		t.Fatalf("exit code %d, want %d; stderr:\n%s", r.code, wantCode, r.stderr)
	}
	if !strings.Contains(r.stderr, wantStderr) {
		t.Errorf("stderr %q does not contain %q", r.stderr, wantStderr)
	}
	return wantCode == 0
}

func (r result) decode(t *testing.T, into any) {
	t.Helper()
	if err := json.Unmarshal([]byte(r.stdout), into); err != nil {
		t.Fatalf("stdout %q: %v", r.stdout, err)
	}
}

func TestCheck(t *testing.T) {
	bin := scripts(t)
	for _, tc := range []struct {
		name       string
		request    string
		env        []string
		want       []Version
		wantStderr string
		wantCode   int
	}{
		{name: "initial version by default", request: `{"source":{}}`, want: []Version{{Version: "mock"}}},
		{name: "initial_version", request: `{"source":{"initial_version":"v1"}}`, want: []Version{{Version: "v1"}}},
		{name: "mirrored version from the environment", request: `{"source":{}}`, env: []string{"MIRRORED_VERSION=m1"}, want: []Version{{Version: "m1"}}},
		{name: "no_initial_version", request: `{"source":{"no_initial_version":true}}`, want: []Version{}},
		{name: "returns the given version", request: `{"source":{"initial_version":"v1"},"version":{"version":"v7"}}`, want: []Version{{Version: "v7"}}},
		{name: "force_version wins", request: `{"source":{"force_version":"f"},"version":{"version":"v7"}}`, want: []Version{{Version: "f"}}},
		{name: "privileged", request: `{"source":{}}`, env: []string{"MOCK_PRIVILEGED=true"}, want: []Version{{Version: "mock", Privileged: "true"}}},
		{name: "log", request: `{"source":{"log":"hello from check"}}`, want: []Version{{Version: "mock"}}, wantStderr: "hello from check"},
		{name: "check_delay", request: `{"source":{"check_delay":"1ms"}}`, want: []Version{{Version: "mock"}}},
		{name: "check_failure", request: `{"source":{"check_failure":"boom"}}`, wantCode: 1, wantStderr: "intentionally failing to check: boom"},
		{name: "bad check_delay", request: `{"source":{"check_delay":"soon"}}`, wantCode: 1, wantStderr: "malformed check_delay"},
		{name: "unknown source field", request: `{"source":{"nope":1}}`, wantCode: 1, wantStderr: "invalid payload"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, bin, "check", tc.request, tc.env)
			if !r.succeeded(t, tc.wantCode, tc.wantStderr) {
				return
			}
			var got []Version
			r.decode(t, &got)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("versions (-want +got):\n%s", diff)
			}
		})
	}
}

func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	got := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		got[rel] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestIn(t *testing.T) {
	bin := scripts(t)
	for _, tc := range []struct {
		name       string
		request    string
		env        []string
		wantFiles  map[string]string
		wantResp   Response
		wantCode   int
		wantStderr string
	}{
		{
			name:      "version and privileged files",
			request:   `{"source":{},"version":{"version":"v1"}}`,
			wantFiles: map[string]string{"version": "v1\n", "privileged": "false\n"},
			wantResp:  Response{Version: Version{Version: "v1"}, Metadata: []MetadataField{}},
		},
		{
			name:      "privileged",
			request:   `{"source":{},"version":{"version":"v1"}}`,
			env:       []string{"MOCK_PRIVILEGED=true"},
			wantFiles: map[string]string{"version": "v1\n", "privileged": "true\n"},
			wantResp:  Response{Version: Version{Version: "v1"}, Metadata: []MetadataField{}},
		},
		{
			name: "create_files merged with create_files_via_params, metadata",
			request: `{"source":{"create_files":{"a.txt":"from source","sub/b.yml":"b: 1\n","obj.json":{"k":[1,2]}},"metadata":[{"name":"n","value":"v"}]},
				"version":{"version":"v2"},"params":{"create_files_via_params":{"a.txt":"from params","c":"c"}}}`,
			wantFiles: map[string]string{"version": "v2\n", "privileged": "false\n", "a.txt": "from params", "sub/b.yml": "b: 1\n", "obj.json": `{"k":[1,2]}`, "c": "c"},
			wantResp:  Response{Version: Version{Version: "v2"}, Metadata: []MetadataField{{Name: "n", Value: "v"}}},
		},
		{name: "fail", request: `{"source":{},"version":{"version":"v1"},"params":{"fail":"nope"}}`, wantCode: 1, wantStderr: "intentionally failing to get: nope"},
		{name: "log", request: `{"source":{"log":"getting"},"version":{"version":"v1"}}`, wantStderr: "getting",
			wantFiles: map[string]string{"version": "v1\n", "privileged": "false\n"},
			wantResp:  Response{Version: Version{Version: "v1"}, Metadata: []MetadataField{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dest := filepath.Join(t.TempDir(), "dest")
			r := run(t, bin, "in", tc.request, tc.env, dest)
			if !r.succeeded(t, tc.wantCode, tc.wantStderr) {
				return
			}
			var got Response
			r.decode(t, &got)
			if diff := cmp.Diff(tc.wantResp, got); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantFiles, readTree(t, dest)); diff != "" {
				t.Errorf("files (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("no destination", func(t *testing.T) {
		if r := run(t, bin, "in", `{"source":{}}`, nil); r.code != 1 || !strings.Contains(r.stderr, "destination path not specified") {
			t.Errorf("got %+v", r)
		}
	})
}

func TestOut(t *testing.T) {
	bin := scripts(t)
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "v.txt"), []byte("from-file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		request    string
		env        []string
		want       Response
		wantCode   int
		wantStderr string
	}{
		{name: "version param", request: `{"source":{},"params":{"version":"v3"}}`,
			want: Response{Version: Version{Version: "v3"}, Metadata: []MetadataField{}}, wantStderr: "pushing version: v3"},
		{name: "version from file", request: `{"source":{},"params":{"file":"v.txt"}}`,
			want: Response{Version: Version{Version: "from-file"}, Metadata: []MetadataField{}}},
		{name: "metadata from source", request: `{"source":{"metadata":[{"name":"a","value":"b"}]},"params":{"version":"v"}}`,
			want: Response{Version: Version{Version: "v"}, Metadata: []MetadataField{{Name: "a", Value: "b"}}}},
		{name: "print_env", request: `{"source":{},"params":{"version":"v","print_env":true}}`, env: []string{"BUILD_ID=42"},
			want: Response{Version: Version{Version: "v"}, Metadata: []MetadataField{}}, wantStderr: "BUILD_ID=42"},
		{name: "privileged", request: `{"source":{},"params":{"version":"v"}}`, env: []string{"MOCK_PRIVILEGED=true"},
			want: Response{Version: Version{Version: "v", Privileged: "true"}, Metadata: []MetadataField{}}},
		{name: "fail", request: `{"source":{},"params":{"fail":"no"}}`, wantCode: 1, wantStderr: "intentionally failing to put: no"},
		{name: "missing file", request: `{"source":{},"params":{"file":"nope"}}`, wantCode: 1, wantStderr: "reading version file"},
		{name: "unknown param", request: `{"source":{},"params":{"nope":true}}`, wantCode: 1, wantStderr: "invalid payload"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, bin, "out", tc.request, tc.env, src)
			if !r.succeeded(t, tc.wantCode, tc.wantStderr) {
				return
			}
			var got Response
			r.decode(t, &got)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
		})
	}
}

func TestUnknownScript(t *testing.T) {
	var stderr bytes.Buffer
	if code := Main("frobnicate", Env{Stderr: &stderr}); code != 1 || !strings.Contains(stderr.String(), "unknown script") {
		t.Errorf("code %d, stderr %q", code, stderr.String())
	}
}

func TestPrivilegedFromStatus(t *testing.T) {
	for _, tc := range []struct {
		name, status string
		want         bool
		wantErr      bool
	}{
		{"all capabilities", "Name:\tx\nCapEff:\t000001ffffffffff\n", true, false},
		{"default container set", "CapEff:\t00000000a80425fb\n", false, false},
		{"missing", "Name:\tx\n", false, true},
		{"garbage", "CapEff:\tzz\n", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := privilegedFromStatus(tc.status)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("got %v, %v; want %v, error %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}
