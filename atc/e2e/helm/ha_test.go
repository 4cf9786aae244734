//go:build e2e

package helm

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/concourse-tekton/concourse-tekton/atc/e2e/internal/e2eenv"
)

// webPods are the release's running web pods, by their addresses.
func (in *install) webPods(t *testing.T) map[string]corev1.Pod {
	t.Helper()
	pods, err := in.kube.CoreV1().Pods(in.namespace).List(context.Background(), metav1.ListOptions{
		LabelSelector: "app.kubernetes.io/instance=" + release + ",app.kubernetes.io/component=web"})
	if err != nil {
		t.Fatal(err)
	}
	byIP := map[string]corev1.Pod{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" {
			byIP[p.Status.PodIP] = p
		}
	}
	return byIP
}

// token is fly's token for the release, from its ~/.flyrc.
func (in *install) token(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(in.home, ".flyrc"))
	if err != nil {
		t.Fatal(err)
	}
	var rc struct {
		Targets map[string]struct {
			Token struct{ Type, Value string } `json:"token"`
		} `json:"targets"`
	}
	if err := yaml.Unmarshal(b, &rc); err != nil {
		t.Fatal(err)
	}
	tok := rc.Targets[release].Token
	if tok.Value == "" {
		t.Fatalf("no token for %s in .flyrc:\n%s", release, b)
	}
	return tok.Type + " " + tok.Value
}

// forwardPod runs kubectl port-forward to one web pod until the test ends, and returns
// its local URL.
func (in *install) forwardPod(t *testing.T, pod string) string {
	t.Helper()
	port := freePort(t)
	cmd := in.portForward(t, "pod/"+pod, port)
	t.Cleanup(func() { stopGroup(cmd) })
	return "http://127.0.0.1:" + strconv.Itoa(port)
}

// testArtifacts: what fly execute uploads through one web node is there through the
// other, byte for byte, as when the node that takes the upload is not the one whose
// engine runs the build, nor the one fly downloads the outputs from (Concourse's own
// artifact API, each request to one pod); and fly execute, through the Service, gets its
// input in and its output back.
func (in *install) testArtifacts(t *testing.T) {
	pods := in.webPods(t)
	if len(pods) != 2 {
		t.Fatalf("%d web pods running; want 2", len(pods))
	}
	var urls []string
	for _, p := range pods {
		urls = append(urls, in.forwardPod(t, p.Name))
	}
	auth := in.token(t)

	var upload bytes.Buffer
	gz := gzip.NewWriter(&upload)
	tw := tar.NewWriter(gz)
	content := strings.Repeat("through the other web node\n", 4096)
	if err := tw.WriteHeader(&tar.Header{Name: "input.txt", Mode: 0o644, Size: int64(len(content)), Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write([]byte(content)); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, urls[0]+"/api/v1/teams/main/artifacts", &upload)
	req.Header.Set("Authorization", auth)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("uploading an artifact: %s\n%s", resp.Status, body)
	}
	var artifact struct{ ID int }
	if err := json.Unmarshal(body, &artifact); err != nil {
		t.Fatal(err)
	}
	req, _ = http.NewRequest(http.MethodGet, fmt.Sprintf("%s/api/v1/teams/main/artifacts/%d", urls[1], artifact.ID), nil)
	req.Header.Set("Authorization", auth)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("the artifact through the other web node: %s\n%s", resp.Status, b)
	}
	zr, err := gzip.NewReader(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		files[strings.TrimPrefix(h.Name, "./")] = string(b)
	}
	if files["input.txt"] != content {
		t.Errorf("the other web node has the artifact's input.txt of %d bytes; want %d", len(files["input.txt"]), len(content))
	}

	// fly execute, end to end, through the Service.
	repository, tag, _ := strings.Cut(e2eenv.BusyboxImage, ":")
	dir := t.TempDir()
	task := filepath.Join(dir, "task.yml")
	if err := os.WriteFile(task, []byte(fmt.Sprintf(`platform: linux
image_resource: {type: registry-image, source: {repository: %s, tag: "%s"}}
inputs: [{name: src}]
outputs: [{name: out}]
run: {path: sh, args: [-c, 'wc -c < src/input.txt > out/count']}
`, repository, tag)), 0o644); err != nil {
		t.Fatal(err)
	}
	src, out := filepath.Join(dir, "src"), filepath.Join(dir, "out")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "input.txt"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, code := in.flyRun(3*time.Minute, "execute", "-c", task, "-i", "src="+src, "-o", "out="+out); code != 0 {
		t.Fatalf("fly execute: exit %d\n%s", code, out)
	}
	if b, err := os.ReadFile(filepath.Join(out, "count")); err != nil || strings.TrimSpace(string(b)) != strconv.Itoa(len(content)) {
		t.Errorf("fly execute's output count: %q, %v; want %d", b, err, len(content))
	}
}

// trackedBy is the address of the web node that tracks the build: the client of the
// database session that holds the build's tracking lock (Concourse's
// lock.NewBuildTrackingLockID, pg_try_advisory_lock(1, id)).
func (in *install) trackedBy(t *testing.T, build int) (string, bool) {
	t.Helper()
	var addr string
	err := in.db.QueryRow(`SELECT host(a.client_addr) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
		WHERE l.locktype = 'advisory' AND l.granted AND l.classid = 1 AND l.objid = $1 AND l.objsubid = 2`, build).Scan(&addr)
	if err == sql.ErrNoRows {
		return "", false
	}
	if err != nil {
		t.Fatal(err)
	}
	return addr, true
}

// testFailover: two web nodes; the one tracking a running build is deleted (as a drain
// or a crash loop would): the other takes the build up through Concourse's tracking lock,
// and the build completes, each of its events once.
func (in *install) testFailover(t *testing.T) {
	if out, code := in.flyRun(time.Minute, "trigger-job", "-j", "chart/slow"); code != 0 {
		t.Fatalf("fly trigger-job: exit %d\n%s", code, out)
	}
	in.waitStarted(t)
	var builds []struct {
		ID   int    `json:"id"`
		Name string `json:"name"`
	}
	out, _ := in.flyRun(time.Minute, "builds", "-j", "chart/slow", "--json")
	if err := json.Unmarshal([]byte(out), &builds); err != nil || len(builds) == 0 {
		t.Fatalf("fly builds: %v\n%s", err, out)
	}
	build := builds[0].ID
	var tracker corev1.Pod
	for deadline := time.Now().Add(time.Minute); ; {
		if addr, ok := in.trackedBy(t, build); ok {
			pod, ok := in.webPods(t)[addr]
			if !ok {
				t.Fatalf("build %d is tracked from %s, no web pod's address", build, addr)
			}
			tracker = pod
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no web node holds build %d's tracking lock; the advisory locks:\n%s", build, in.advisoryLocks(t))
		}
		time.Sleep(time.Second)
	}
	in.stopForward()
	if err := in.kube.CoreV1().Pods(in.namespace).Delete(context.Background(), tracker.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// Another web node holds the lock while the build still runs.
	for deadline := time.Now().Add(2 * time.Minute); ; {
		addr, ok := in.trackedBy(t, build)
		if ok && addr != tracker.Status.PodIP {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after web pod %s went, build %d is tracked from %q (held: %v)", tracker.Name, build, addr, ok)
		}
		time.Sleep(time.Second)
	}
	in.startForward()
	out, code := in.flyRun(4*time.Minute, "watch", "-j", "chart/slow", "-b", builds[0].Name)
	if code != 0 {
		t.Fatalf("fly watch chart/slow after its web node went: exit %d, want 0:\n%s", code, out)
	}
	// The task's lines, each once (the "running sh -c ..." line names them too).
	for _, want := range []string{"started-slow", "done-after-upgrade"} {
		if n := linesOf(out, want); n != 1 {
			t.Errorf("fly watch shows the line %q %d times, want once:\n%s", want, n, out)
		}
	}
}

// linesOf counts the lines of out that are want.
func linesOf(out, want string) int {
	n := 0
	for _, line := range strings.Split(out, "\n") {
		if strings.TrimSpace(line) == want {
			n++
		}
	}
	return n
}

// advisoryLocks lists the database's advisory locks and their holders' addresses.
func (in *install) advisoryLocks(t *testing.T) string {
	rows, err := in.db.Query(`SELECT l.classid::text, l.objid::text, l.objsubid, l.granted, coalesce(host(a.client_addr), '')
		FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid WHERE l.locktype = 'advisory'`)
	if err != nil {
		return err.Error()
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var class, obj, addr string
		var sub int
		var granted bool
		if err := rows.Scan(&class, &obj, &sub, &granted, &addr); err != nil {
			return err.Error()
		}
		fmt.Fprintf(&b, "%s %s %d %v %s\n", class, obj, sub, granted, addr)
	}
	return b.String()
}

// waitStarted waits until the newest build of chart/slow runs its task (it has printed
// its first line). fly watch follows a build to its end: it is stopped after a few
// seconds each time, with what it printed until then.
func (in *install) waitStarted(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		out, code := in.flyRun(8*time.Second, "watch", "-j", "chart/slow")
		if code == 0 {
			t.Fatalf("the slow build ended before it was looked at:\n%s", out)
		}
		if strings.Contains(out, "\nstarted-slow") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the slow build did not start:\n%s", out)
		}
		time.Sleep(2 * time.Second)
	}
}
