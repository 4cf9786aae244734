package mock

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/concourse-tekton/concourse-tekton/e2e/resource/resourcetest"
)

func TestMain(m *testing.M) {
	if name, ok := resourcetest.ActingAsScript(); ok {
		env := OSEnv()
		// The test machine's own privilege is irrelevant; MOCK_PRIVILEGED fakes it.
		env.Privileged = func() (bool, error) { return os.Getenv("MOCK_PRIVILEGED") == "true", nil }
		os.Exit(Main(name, env))
	}
	os.Exit(m.Run())
}

var (
	scripts = resourcetest.Scripts
	run     = resourcetest.Run
)

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
		{name: "print_env", request: `{"source":{"print_env":true}}`, env: []string{"BUILD_NAME=check"}, want: []Version{{Version: "mock"}}, wantStderr: "BUILD_NAME=check"},
		{name: "check_delay", request: `{"source":{"check_delay":"1ms"}}`, want: []Version{{Version: "mock"}}},
		{name: "check_failure", request: `{"source":{"check_failure":"boom"}}`, wantCode: 1, wantStderr: "intentionally failing to check: boom"},
		{name: "bad check_delay", request: `{"source":{"check_delay":"soon"}}`, wantCode: 1, wantStderr: "malformed check_delay"},
		{name: "unknown source field", request: `{"source":{"nope":1}}`, wantCode: 1, wantStderr: "invalid payload"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, bin, "check", tc.request, tc.env)
			if !r.Succeeded(t, tc.wantCode, tc.wantStderr) {
				return
			}
			var got []Version
			r.Decode(t, &got)
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
			name:       "version and privileged files, and what is fetched said",
			request:    `{"source":{},"version":{"version":"v1"}}`,
			wantFiles:  map[string]string{"version": "v1\n", "privileged": "false\n"},
			wantResp:   Response{Version: Version{Version: "v1"}, Metadata: []MetadataField{}},
			wantStderr: "fetching version: v1",
		},
		{
			name:       "privileged",
			request:    `{"source":{},"version":{"version":"v1"}}`,
			env:        []string{"MOCK_PRIVILEGED=true"},
			wantFiles:  map[string]string{"version": "v1\n", "privileged": "true\n"},
			wantResp:   Response{Version: Version{Version: "v1"}, Metadata: []MetadataField{}},
			wantStderr: "fetching in a privileged container\nfetching version: v1",
		},
		{
			name:      "START_VAR and END_VAR in created files are a var's parentheses",
			request:   `{"source":{"create_files":{"p.yml":"args: [START_VARgreetingsEND_VAR]"}},"version":{"version":"v1"}}`,
			wantFiles: map[string]string{"version": "v1\n", "privileged": "false\n", "p.yml": "args: [((greetings))]"},
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
			if !r.Succeeded(t, tc.wantCode, tc.wantStderr) {
				return
			}
			var got Response
			r.Decode(t, &got)
			if diff := cmp.Diff(tc.wantResp, got); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantFiles, readTree(t, dest)); diff != "" {
				t.Errorf("files (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("no destination", func(t *testing.T) {
		if r := run(t, bin, "in", `{"source":{}}`, nil); r.Code != 1 || !strings.Contains(r.Stderr, "destination path not specified") {
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
			if !r.Succeeded(t, tc.wantCode, tc.wantStderr) {
				return
			}
			var got Response
			r.Decode(t, &got)
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

// TestMountPoints reads the process's mount points, which mirror_self does not copy.
func TestMountPoints(t *testing.T) {
	points := mountPoints()
	if !points["/proc"] || points["/"] {
		t.Errorf("mount points %v: want /proc, not /", points)
	}
}
