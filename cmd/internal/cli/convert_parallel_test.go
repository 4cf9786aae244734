package cli

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/concourse-tekton/concourse-tekton/internal/testcorpus"
)

// parallelPipeline has jobs that convert, jobs whose step warns (a base type no image
// is known for) and jobs that cannot be converted (a rootfs_uri), interleaved. The
// first job, of many steps, takes longest: the jobs after it end first.
func parallelPipeline() string {
	var b strings.Builder
	b.WriteString("resources:\n- name: odd\n  type: some-type\njobs:\n")
	for i := range 12 {
		fmt.Fprintf(&b, "- name: job-%02d\n  plan:\n", i)
		if i == 0 {
			for j := range 300 {
				fmt.Fprintf(&b, "  - task: step-%d\n    config: {platform: linux, image_resource: {type: registry-image, source: {repository: busybox}}, run: {path: \"true\"}}\n", j)
			}
		}
		switch i % 4 {
		case 1:
			b.WriteString("  - get: odd\n")
		case 3:
			b.WriteString("  - task: t\n    config: {platform: linux, rootfs_uri: file:///x, run: {path: \"true\"}}\n")
		}
		fmt.Fprintf(&b, "  - task: echo\n    config:\n      platform: linux\n      image_resource: {type: registry-image, source: {repository: busybox}}\n      run: {path: echo, args: [\"%d\"]}\n", i)
	}
	return b.String()
}

// TestConvertParallel: pipelines convert (and validate), and the jobs of a pipeline
// compile and render, at the same time; what convert writes and says, and the error that
// stops it, are those of the conversion one after another (GOMAXPROCS=1), whatever the
// timing.
func TestConvertParallel(t *testing.T) {
	file := writeFile(t, "odd.yml", parallelPipeline())
	again := writeFile(t, "again.yml", parallelPipeline())
	bad := writeFile(t, "bad.yml", "jobs:\n- name: j\n  plan: [{get: nowhere}]\n")
	largest, size := "", int64(0)
	for _, f := range testcorpus.Pipelines(t) {
		if st, err := os.Stat(f); err == nil && st.Size() > size {
			largest, size = f, st.Size()
		}
	}
	for _, args := range [][]string{
		{"convert", "--skip-unsupported", file},
		{"convert", file},
		{"convert", largest},
		{"convert", "--skip-unsupported", largest, file, again},
		{"convert", "--skip-unsupported", file, bad, largest, again},
		{"validate", file, bad, largest, again},
	} {
		type outcome struct {
			Code           int
			Stdout, Stderr string
		}
		convert := func(procs int) outcome {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			code, stdout, stderr := run(t, "", args...)
			return outcome{code, stdout, stderr}
		}
		want := convert(1)
		for range 3 {
			if diff := cmp.Diff(want, convert(4)); diff != "" {
				t.Fatalf("%v: on 4 processors (-1 +4):\n%s", args, diff)
			}
		}
		switch {
		case len(args) > 3:
			// What each pipeline says comes in the order of the files, before the
			// summary.
			var order []string
			for _, line := range strings.Split(want.Stderr, "\n") {
				if strings.HasPrefix(line, "converted ") || strings.Contains(line, "could not be converted") || strings.Contains(line, "are invalid") {
					break
				}
				for _, f := range []string{file, again, bad, largest} {
					if strings.Contains(line, f) && (len(order) == 0 || order[len(order)-1] != f) {
						order = append(order, f)
					}
				}
			}
			wantOrder := args[2:]
			if args[0] == "validate" {
				wantOrder = args[1:]
			}
			if diff := cmp.Diff(wantOrder, order); diff != "" {
				t.Errorf("%v: the files spoken of, in order (-want +got):\n%s\n%s", args, diff, want.Stderr)
			}
		case args[1] == "--skip-unsupported":
			// The warnings follow the jobs.
			var jobs []string
			for _, line := range strings.Split(want.Stderr, "\n") {
				if i := strings.Index(line, "jobs[job-"); i >= 0 {
					jobs = append(jobs, line[i+5:i+11])
				}
			}
			wantJobs := []string{"job-01", "job-03", "job-05", "job-07", "job-09", "job-11"}
			if diff := cmp.Diff(wantJobs, jobs); want.Code != 0 || diff != "" {
				t.Errorf("code %d, the jobs warned of (-want +got):\n%s\n%s", want.Code, diff, want.Stderr)
			}
		case args[1] == file:
			// The first job that cannot be converted, in the pipeline's order, and no
			// warning of a job after it.
			if want.Code != 1 || want.Stdout != "" || !strings.Contains(want.Stderr, "jobs[job-03].plan[0].task: rootfs_uri") ||
				strings.Contains(want.Stderr, "job-05") || strings.Contains(want.Stderr, "job-07") {
				t.Errorf("code %d, stdout %d bytes, stderr:\n%s", want.Code, len(want.Stdout), want.Stderr)
			}
		}
	}
}
