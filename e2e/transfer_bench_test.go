//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// transferSize is the tree the transfer benchmark moves: one file of pseudo-random bytes
// (no compression helps either side).
const transferSize = 200 << 20

// BenchmarkTransfer compares execute's uploads and downloads with the baseline every
// Kubernetes user has, `tar | kubectl exec -i ... tar`, moving the same 200 MB tree through
// the same API server in the same run. Each reports upload-MiB/s and download-MiB/s:
// execute's from its progress lines (the stream alone, from the first byte to the last),
// kubectl's from the wall time of each pipeline (its process start and connection
// included, as a user waits for them).
func BenchmarkTransfer(b *testing.B) {
	ns := namespace(b)
	dir := b.TempDir()
	in := filepath.Join(dir, "in")
	if err := os.Mkdir(in, 0o755); err != nil {
		b.Fatal(err)
	}
	bigFile(b, filepath.Join(in, "big"), transferSize)

	b.Run("kubectl-exec-tar", func(b *testing.B) {
		pod := holdingPod(b, ns)
		var up, down time.Duration
		for i := 0; i < b.N; i++ {
			start := time.Now()
			shell(b, fmt.Sprintf("tar -C %s -cf - . | e2e/cluster/cluster.sh kubectl exec -i -n %s %s -- tar -xf - -C /x", in, ns, pod))
			up += time.Since(start)
			out := filepath.Join(b.TempDir(), "out")
			if err := os.Mkdir(out, 0o755); err != nil {
				b.Fatal(err)
			}
			start = time.Now()
			shell(b, fmt.Sprintf("e2e/cluster/cluster.sh kubectl exec -n %s %s -- tar -cf - -C /x . | tar -xf - -C %s", ns, pod, out))
			down += time.Since(start)
			checkSize(b, filepath.Join(out, "big"))
		}
		b.ReportMetric(mibPerSec(up, b.N), "upload-MiB/s")
		b.ReportMetric(mibPerSec(down, b.N), "download-MiB/s")
	})

	b.Run("execute", func(b *testing.B) {
		repo, tag, _ := strings.Cut(busyboxImage, ":")
		task := filepath.Join(dir, "task.yml")
		config := `platform: linux
image_resource: {type: registry-image, source: {repository: ` + repo + `, tag: "` + tag + `"}}
inputs: [{name: in}]
outputs: [{name: out}]
run: {path: sh, args: [-c, "cp -a in/. out/"]}
`
		if err := os.WriteFile(task, []byte(config), 0o644); err != nil {
			b.Fatal(err)
		}
		var upRate, downRate float64
		for i := 0; i < b.N; i++ {
			out := filepath.Join(b.TempDir(), "out")
			exit, stdout, stderr := runCLI(b, context.Background(), "execute", "-n", ns, "--no-color", "--build-volume-size", "2Gi",
				"-c", task, "-i", "in="+in, "-o", "out="+out)
			if exit != 0 {
				b.Fatalf("execute: exit %d\nstdout:\n%s\nstderr:\n%s", exit, stdout, stderr)
			}
			checkSize(b, filepath.Join(out, "big"))
			upRate += doneRate(b, stderr, "uploading in")
			downRate += doneRate(b, stderr, "downloading out")
		}
		b.ReportMetric(upRate/float64(b.N), "upload-MiB/s")
		b.ReportMetric(downRate/float64(b.N), "download-MiB/s")
	})
}

// holdingPod starts a busybox pod that sleeps with a volume of the default storage class
// (the build volumes') at /x, and returns its name.
func holdingPod(b *testing.B, ns string) string {
	b.Helper()
	name := "hold"
	claim := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("2Gi")}},
		},
	}
	if _, err := testCluster.kube.CoreV1().PersistentVolumeClaims(ns).Create(context.Background(), claim, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		b.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Volumes: []corev1.Volume{{Name: "x", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}}}},
			Containers: []corev1.Container{{
				Name: "main", Image: busyboxImage, ImagePullPolicy: corev1.PullIfNotPresent,
				Command: []string{"sleep", "3600"}, VolumeMounts: []corev1.VolumeMount{{Name: "x", MountPath: "/x"}},
			}},
		},
	}
	// The benchmark function runs more than once (to find b.N): one pod serves them all.
	if _, err := testCluster.kube.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		b.Fatal(err)
	}
	poll(b, "pod "+name, 3*time.Minute, func(ctx context.Context) (bool, error) {
		p, err := testCluster.kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodRunning, err
	})
	return name
}

func shell(b *testing.B, script string) {
	b.Helper()
	cmd := exec.Command("bash", "-o", "pipefail", "-c", script)
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfigPath())
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("%s: %v: %s", script, err, out)
	}
}

func checkSize(b *testing.B, path string) {
	b.Helper()
	info, err := os.Stat(path)
	if err != nil || info.Size() != transferSize {
		b.Fatalf("%s: %v, %v; want %d bytes", path, info, err, transferSize)
	}
}

func mibPerSec(d time.Duration, n int) float64 {
	return float64(transferSize) * float64(n) / (1 << 20) / d.Seconds()
}

// doneRate reads the rate of a transfer's last progress line: "<what>: done, 200.0 MiB (74.9 MiB/s) in 2.7s".
func doneRate(b *testing.B, stderr, what string) float64 {
	b.Helper()
	m := regexp.MustCompile(regexp.QuoteMeta(what) + `: done, [0-9.]+ MiB \(([0-9.]+) (MiB|GiB)/s\)`).FindStringSubmatch(stderr)
	if m == nil {
		b.Fatalf("no progress line for %s in:\n%s", what, stderr)
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	if m[2] == "GiB" {
		v *= 1024
	}
	return v
}
