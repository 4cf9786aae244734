//go:build e2e

package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/concourse-tekton/concourse-tekton/internal/ociimage"
)

// standInImage is the stand-in resource type of e2e/testdata/booklit/stand-in-resource:
// busybox with three shell scripts at /opt/resource that accept any source and params
// and never reach the outside world.
const standInImage = "e2e.invalid/booklit-stand-in-resource:v1"

// Credentials the booklit pipeline reads at run time, as Secrets named after the
// pipeline (translate's rule: `((coveralls_token))` of pipeline booklit is the Secret
// booklit.coveralls-token, key value).
var booklitSecrets = map[string]string{
	"booklit.coveralls-token":  "coveralls-s3cr3t-value",
	"booklit.prs-access-token": "github-s3cr3t-token",
}

// TestBooklit runs the unit job of examples/booklit/pipeline.yml with local stand-ins for
// what it reaches outside (see testdata/booklit/README.md): the booklit repository is
// served by a git daemon in the cluster, and github-status is a stand-in resource type.
func TestBooklit(t *testing.T) {
	t.Parallel()
	importStandInImage(t)
	ns := namespace(t)
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	for name, value := range booklitSecrets {
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, StringData: map[string]string{"value": value}}
		if _, err := testCluster.kube.CoreV1().Secrets(ns).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	repo := "git://" + serveBooklit(t, ns) + "/booklit"
	file := filepath.Join(t.TempDir(), "booklit.yml")
	if err := os.WriteFile(file, []byte(booklitPipeline(t, repo)), 0o644); err != nil {
		t.Fatal(err)
	}
	exit, stdout, stderr := runCLI(t, ctx, "run", file, "-j", "unit", "-w", "-n", ns,
		"--runner-image", runnerImage, "--resource-image", "git="+gitImage,
		"--build-volume-size", "64Mi", "--kubeconfig", kubeconfigPath())
	t.Logf("run -j unit: exit %d\nstdout:\n%s\nstderr:\n%s", exit, stdout, stderr)
	checkBuild(t, "run", exit, stdout, scenario{
		wantExit: 0,
		want: []string{
			`stand-in put: {"path":"booklit","state":"pending"}`,
			"branch master, coveralls token ((redacted))",
			"ok  \tgithub.com/vito/booklit\t0.042s",
			`stand-in put: {"path":"booklit","state":"success"}`,
		},
		notWant: []string{`stand-in put: {"path":"booklit","state":"failure"}`},
	})
	if strings.Contains(stdout+stderr, "s3cr3t") {
		t.Errorf("a credential's value is in the output")
	}
}

// booklitPipeline is examples/booklit/pipeline.yml with the stand-ins in place.
func booklitPipeline(t *testing.T, repo string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "examples", "booklit", "pipeline.yml"))
	if err != nil {
		t.Fatal(err)
	}
	p := string(raw)
	for _, r := range []struct{ old, new string }{
		{"uri: https://github.com/vito/booklit\n", "uri: " + repo + "\n"},
		{"repository: resource/github-status\n", "repository: " + strings.Replace(standInImage, ":", "\n    tag: ", 1) + "\n"},
	} {
		if !strings.Contains(p, r.old) {
			t.Fatalf("examples/booklit/pipeline.yml has no %q to stand in for", r.old)
		}
		p = strings.ReplaceAll(p, r.old, r.new)
	}
	return p
}

// serveBooklit serves testdata/booklit as the repository booklit (branch master) from a
// git daemon in a pod, and returns the pod's address.
func serveBooklit(t *testing.T, ns string) string {
	t.Helper()
	ctx := context.Background()
	dir := filepath.Join("testdata", "booklit")
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "booklit-src"}, Data: map[string]string{}}
	var items []corev1.KeyToPath
	for _, f := range []string{"booklit.go", "ci/test.yml", "ci/test"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		key := strings.ReplaceAll(f, "/", "-")
		cm.Data[key] = string(b)
		items = append(items, corev1.KeyToPath{Key: key, Path: f})
	}
	if _, err := testCluster.kube.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	server := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "git-server"},
		Spec: corev1.PodSpec{
			Volumes: []corev1.Volume{{Name: "src", VolumeSource: corev1.VolumeSource{
				ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: cm.Name}, Items: items}}}},
			Containers: []corev1.Container{{
				Name: "main", Image: gitImage, ImagePullPolicy: corev1.PullIfNotPresent, Env: gitIdentity,
				VolumeMounts: []corev1.VolumeMount{{Name: "src", MountPath: "/src", ReadOnly: true}},
				Command: []string{"sh", "-c", `set -e
git init -q -b master /tmp/work && cp -rL /src/. /tmp/work/ && cd /tmp/work
chmod +x ci/test && git add . && git commit -q -m "booklit, as the e2e test stands it in"
mkdir /repos && git clone -q --bare /tmp/work /repos/booklit
touch /tmp/ready
exec git daemon --reuseaddr --export-all --base-path=/repos /repos`},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(9418)}},
					PeriodSeconds: 1},
			}},
		},
	}
	if _, err := testCluster.kube.CoreV1().Pods(ns).Create(ctx, server, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var ip string
	poll(t, "the git server", 2*time.Minute, func(ctx context.Context) (bool, error) {
		p, err := testCluster.kube.CoreV1().Pods(ns).Get(ctx, server.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		ip = p.Status.PodIP
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				return ip != "", nil
			}
		}
		return false, nil
	})
	return ip
}

// importStandInImage builds the stand-in resource image on the harness's busybox and
// imports it into the harness's containerd, as e2e/cluster does with its own images. On
// another cluster (E2E_KUBECONFIG) the test is skipped: load the image there first.
func importStandInImage(t *testing.T) {
	t.Helper()
	cache := harnessCache(t, standInImage)
	var files []ociimage.File
	for _, script := range []string{"check", "in", "out"} {
		b, err := os.ReadFile(filepath.Join("testdata", "booklit", "stand-in-resource", script))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, ociimage.File{Path: "/opt/resource/" + script, Mode: 0o755, Data: b})
	}
	importOnBusybox(t, cache, standInImage, files)
}
