//go:build e2e

package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestClearTaskCache: a job's task caches are recorded in the ATC's database as its
// builds use them, and fly clear-task-cache clears them, one path or the whole step,
// for the job's next build.
func TestClearTaskCache(t *testing.T) {
	dumpOnFailure(t)
	t.Parallel()
	setPipeline(t, "caches", fmt.Sprintf(`
jobs:
- name: cached
  plan:
  - task: some-task
    config:
      platform: linux
      image_resource: %s
      caches: [{path: cache}, {path: other}]
      run:
        path: sh
        args:
        - -c
        - |
          for c in cache other; do
            if [ -f $c/n ]; then echo "$c: kept, written $(cat $c/n) times"; else echo "$c: empty"; fi
            echo $(($(cat $c/n 2>/dev/null || echo 0) + 1)) > $c/n
          done
`, busybox()))
	trigger := func(want ...string) {
		t.Helper()
		out := flyOK(t, 5*time.Minute, "trigger-job", "-j", "caches/cached", "-w")
		inOrder(t, out, want...)
	}
	clear := func(want string, args ...string) {
		t.Helper()
		out := flyOK(t, time.Minute, append([]string{"clear-task-cache", "-n", "-j", "caches/cached"}, args...)...)
		if !strings.Contains(out, want) {
			errorf(t, "fly clear-task-cache %s printed:\n%s\nwant %q", strings.Join(args, " "), out, want)
		}
	}

	trigger("cache: empty", "other: empty", "succeeded")
	trigger("cache: kept, written 1 times", "other: kept, written 1 times", "succeeded")
	clear("1 caches removed", "-s", "some-task", "-c", "cache")
	trigger("cache: empty", "other: kept, written 2 times", "succeeded")
	clear("0 caches removed", "-s", "another-task")
	trigger("cache: kept, written 1 times", "other: kept, written 3 times", "succeeded")
	clear("2 caches removed", "-s", "some-task")
	trigger("cache: empty", "other: empty", "succeeded")
}

// TestTaskCacheAcrossAttempts: a step's task caches go from one attempt to the next
// within a build, as Concourse saves a task's caches after every run of it, whatever its
// exit status: the task counts its attempts in a cache, and passes at the third.
func TestTaskCacheAcrossAttempts(t *testing.T) {
	dumpOnFailure(t)
	t.Parallel()
	setPipeline(t, "attempts", fmt.Sprintf(`
jobs:
- name: flaky
  plan:
  - task: flaky
    attempts: 3
    config:
      platform: linux
      image_resource: %s
      caches: [{path: count}]
      run:
        path: sh
        args:
        - -c
        - |
          n=$(( $(cat count/n 2>/dev/null || echo 0) + 1 ))
          echo $n > count/n
          echo "attempt $n"
          test $n -ge 3
`, busybox()))
	out := flyOK(t, 10*time.Minute, "trigger-job", "-j", "attempts/flaky", "-w")
	inOrder(t, out, "attempt 1", "attempt 2", "attempt 3", "succeeded")
}
