package runner_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/registry"

	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// sharedRegistry is a registry for the shared resource caches: with user set, it wants
// basic credentials; with corrupt set, it changes the file content of the blobs it serves.
type sharedRegistry struct {
	srv     *httptest.Server
	user    string
	corrupt atomic.Bool
	pushes  atomic.Int32
}

func newSharedRegistry(t *testing.T, user string) *sharedRegistry {
	r := &sharedRegistry{user: user}
	inner := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if r.user != "" {
			if u, p, ok := req.BasicAuth(); !ok || u != r.user || p != "secret" {
				w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
		}
		if req.Method == http.MethodPut && strings.Contains(req.URL.Path, "/manifests/") {
			r.pushes.Add(1)
		}
		if req.Method == http.MethodGet && strings.Contains(req.URL.Path, "/blobs/") && r.corrupt.Load() {
			rec := httptest.NewRecorder()
			inner.ServeHTTP(rec, req)
			body := rec.Body.Bytes()
			// A file's content, so that the archive still reads.
			if i := strings.Index(string(body), "fetched\n"); i >= 0 {
				body[i] = 'F'
			}
			w.WriteHeader(rec.Code)
			w.Write(body)
			return
		}
		inner.ServeHTTP(w, req)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *sharedRegistry) host() string { return strings.TrimPrefix(r.srv.URL, "http://") }

// sharedArgs are the runner's arguments for a get of spec with the team's shared caches:
// the registry, the index and the registry's Docker config directory.
func (w *world) sharedArgs(spec runspec.Spec, reg *sharedRegistry, index, auth string) []string {
	return append(w.args(spec), "--image=registry.example.com/git-resource:1", "--image-registry="+reg.host(), "--image-namespace=ci",
		"--x-resource-cache-index="+index, "--x-registry-auth="+auth)
}

// index records what a step reported in the team's index, as the build's follower does.
func indexRecords(t *testing.T, index, image, result string) []runspec.ResourceCacheRecord {
	t.Helper()
	var recs []runspec.ResourceCacheRecord
	if err := json.Unmarshal([]byte(result), &recs); err != nil {
		t.Fatalf("the step's resource-cache result %q: %v", result, err)
	}
	for _, r := range recs {
		raw, _ := json.Marshal(runspec.IndexEntry{Manifest: r.Manifest})
		if err := os.WriteFile(filepath.Join(index, runspec.ResourceCacheEntry(image, r.Key)), raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return recs
}

// TestSharedResourceCache: a job's get pushes what it fetched to the namespace's store
// and says so in its result; once the team's index has it, a get of another job (another
// volume) finds it there instead of fetching: the script does not run, Concourse's INFO
// line says so, and the artifact, version and metadata are the ones fetched. A get whose
// entry is not in the index, or of another image, fetches; a blob that is not what its
// digest says is refused (and the get fetches); a registry that wants credentials gets
// those of the Docker config.
func TestSharedResourceCache(t *testing.T) {
	const image = "registry.example.com/git-resource:1"
	count := filepath.Join(t.TempDir(), "count")
	t.Setenv("REC_COUNT", count)
	fetches := func() string { return strings.TrimSpace(readFile(t, count)) }
	newJob := func() *world {
		w := newWorld(t)
		w.recordingScript("in", `n=$(cat "$REC_COUNT" 2>/dev/null || echo 0); echo $((n+1)) > "$REC_COUNT"
echo "fetching" >&2
mkdir -p "$1/dir" && echo fetched > "$1/dir/file" && ln -s dir/file "$1/link"
echo '{"version":{"ref":"abc"},"metadata":[{"name":"author","value":"me"}]}'`)
		return w
	}
	get := func(w *world, planID string, args func(runspec.Spec) []string) (run, runspec.Spec) {
		t.Helper()
		spec := w.spec(runspec.ModeGet, planID, "repo")
		spec.Build.Name = "7"
		spec.Get = &runspec.Get{Type: "git", Source: map[string]any{"uri": "https://example.com/repo"}, Version: map[string]string{"ref": "abc"}}
		r := w.startArgs(args(spec), nil).wait(t)
		w.checkRun(r, planID, runspec.Succeeded)
		return r, spec
	}
	found := "\x1b[1;36mINFO: found existing resource cache\x1b[0m\n\n"

	t.Run("shared", func(t *testing.T) {
		reg := newSharedRegistry(t, "")
		index, noAuth := t.TempDir(), filepath.Join(t.TempDir(), "none")
		os.Remove(count)
		a := newJob()
		r, _ := get(a, "1", func(s runspec.Spec) []string { return a.sharedArgs(s, reg, index, noAuth) })
		if fetches() != "1" || r.stderr != "in is working\nfetching\n" {
			t.Fatalf("job a: fetched %s times, stderr %q", fetches(), r.stderr)
		}
		recs := indexRecords(t, index, image, a.result("1", runspec.ResultResourceCache))
		if len(recs) != 1 || !strings.HasPrefix(recs[0].Manifest, "sha256:") || len(recs[0].Key) != 64 {
			t.Fatalf("job a's record: %+v", recs)
		}
		b := newJob()
		r, _ = get(b, "3", func(s runspec.Spec) []string { return b.sharedArgs(s, reg, index, noAuth) })
		if fetches() != "1" || r.stderr != found {
			t.Errorf("job b: fetched %s times, stderr %q; want the shared cache found", fetches(), r.stderr)
		}
		dir := b.artifactDir(nil, "repo")
		link, _ := os.Readlink(filepath.Join(dir, "link"))
		if got := map[string]string{
			"version":  b.result("3", "version"),
			"metadata": b.result("3", "metadata"),
			"file":     readFile(t, filepath.Join(dir, "dir", "file")),
			"link":     link,
			"record":   b.result("3", runspec.ResultResourceCache),
		}; !cmp.Equal(got, map[string]string{"version": `{"ref":"abc"}`, "metadata": `[{"name":"author","value":"me"}]`,
			"file": "fetched\n", "link": "dir/file", "record": a.result("1", runspec.ResultResourceCache)}) {
			t.Errorf("job b, from the store: %v", got)
		}
		// b keeps it on its own volume: nothing pushed again.
		if n := reg.pushes.Load(); n != 1 {
			t.Errorf("%d manifests pushed, want 1", n)
		}
		// Another image of the type: another entry, not in the index.
		c := newJob()
		get(c, "4", func(s runspec.Spec) []string {
			return append(c.sharedArgs(s, reg, index, noAuth), "--image=registry.example.com/git-resource:2")
		})
		if fetches() != "2" {
			t.Errorf("another image: fetched %s times, want 2", fetches())
		}
		// A blob that is not what its digest says.
		reg.corrupt.Store(true)
		d := newJob()
		r, _ = get(d, "5", func(s runspec.Spec) []string { return d.sharedArgs(s, reg, index, noAuth) })
		if fetches() != "3" || !strings.Contains(r.stderr, "could not be read: the blob's digest is") || !strings.Contains(r.stderr, "fetching") {
			t.Errorf("corrupt blob: fetched %s times, stderr %q; want it refused and fetched", fetches(), r.stderr)
		}
		if entries, _ := os.ReadDir(filepath.Join(d.volume, runspec.ResourceCachesDir)); len(entries) != 1 {
			t.Errorf("corrupt blob: resource caches %v, want the fetched one alone", entries)
		}
	})

	t.Run("credentials", func(t *testing.T) {
		reg := newSharedRegistry(t, "ci")
		index, auth := t.TempDir(), t.TempDir()
		os.Remove(count)
		// Without them, the get succeeds, unshared, and says why.
		a := newJob()
		r, _ := get(a, "1", func(s runspec.Spec) []string { return a.sharedArgs(s, reg, index, auth) })
		if !strings.Contains(r.stderr, "was not shared: the registry wants credentials") || a.result("1", runspec.ResultResourceCache) != "" {
			t.Errorf("no credentials: stderr %q, record %q", r.stderr, a.result("1", runspec.ResultResourceCache))
		}
		config := `{"auths":{"` + reg.host() + `":{"auth":"` + base64.StdEncoding.EncodeToString([]byte("ci:secret")) + `"}}}`
		if err := os.WriteFile(filepath.Join(auth, "config.json"), []byte(config), 0o644); err != nil {
			t.Fatal(err)
		}
		b := newJob()
		get(b, "1", func(s runspec.Spec) []string { return b.sharedArgs(s, reg, index, auth) })
		indexRecords(t, index, image, b.result("1", runspec.ResultResourceCache))
		c := newJob()
		r, _ = get(c, "1", func(s runspec.Spec) []string { return c.sharedArgs(s, reg, index, auth) })
		if fetches() != "2" || r.stderr != found {
			t.Errorf("with credentials: fetched %s times, stderr %q; want 2 and the cache found", fetches(), r.stderr)
		}
	})
}

// TestSharedResourceCacheResultRoom: the shared caches' result takes its room from the
// version and metadata's budget, so that a get's results fit Tekton's termination
// message as before: with much metadata, fewer fields are kept than without sharing.
func TestSharedResourceCacheResultRoom(t *testing.T) {
	var fields []string
	for i := range 60 {
		fields = append(fields, fmt.Sprintf(`{"name":"field-%02d","value":"%s"}`, i, strings.Repeat("x", 60)))
	}
	out := `{"version":{"ref":"abc"},"metadata":[` + strings.Join(fields, ",") + `]}`
	reg := newSharedRegistry(t, "")
	index, noAuth := t.TempDir(), filepath.Join(t.TempDir(), "none")
	metadataKept := map[bool]int{}
	for _, shared := range []bool{false, true} {
		w := newWorld(t)
		w.recordingScript("in", "echo '"+out+"'")
		spec := w.spec(runspec.ModeGet, "1", "repo")
		spec.Build.Name = "7"
		spec.Get = &runspec.Get{Type: "git", Source: map[string]any{"uri": "https://example.com/repo"}, Version: map[string]string{"ref": "abc"}}
		args := w.args(spec)
		if shared {
			args = w.sharedArgs(spec, reg, index, noAuth)
		}
		w.checkRun(w.startArgs(args, nil).wait(t), "1", runspec.Succeeded)
		var kept []map[string]string
		if err := json.Unmarshal([]byte(w.result("1", "metadata")), &kept); err != nil {
			t.Fatal(err)
		}
		metadataKept[shared] = len(kept)
		size := 0
		for _, r := range []string{"version", "metadata", runspec.ResultResourceCache} {
			if v := w.result("1", r); v != "" {
				enc, _ := json.Marshal(v)
				size += len(enc)
			}
		}
		if shared {
			size += len(`{"key":"resource-cache","value":,"type":1},`)
		}
		if size > 3072 {
			t.Errorf("shared %t: the results take %d bytes, more than the budget's 3072", shared, size)
		}
	}
	if metadataKept[true] >= metadataKept[false] || metadataKept[true] == 0 {
		t.Errorf("metadata fields kept: %d unshared, %d shared; want fewer, not none, when shared", metadataKept[false], metadataKept[true])
	}
}
