//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/internal/testcorpus"
)

// TestCorpusAppliesOnStockTekton converts every valid pipeline of the corpus with the
// command, as a user would (`convert -o DIR`), and hands each file it wrote to the API
// server as `kubectl apply --dry-run=server` does: with strict field validation, through
// Tekton's own defaulting and validating webhooks, nothing stored. Every object must be
// accepted as it is: no field the server does not know, none its webhook refuses.
func TestCorpusAppliesOnStockTekton(t *testing.T) {
	t.Parallel()
	var valid []string
	for _, file := range testcorpus.Pipelines(t) {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if _, diags := concourse.ParsePipeline(filepath.Base(file), data, nil); len(diags.Errors()) == 0 {
			valid = append(valid, file)
		}
	}
	ns := namespace(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	dir := t.TempDir()
	exit, _, stderr := runCLI(t, ctx, append([]string{"convert", "-o", dir}, valid...)...)
	if exit != 0 {
		t.Fatalf("convert of %d pipelines: exit %d\n%s", len(valid), exit, stderr)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".yaml") {
			files = append(files, e.Name())
		}
	}

	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfigPath())
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 100, 200
	client := dynamic.NewForConfigOrDie(cfg)
	kinds := map[string]string{"Task": "tasks", "Pipeline": "pipelines", "PipelineRun": "pipelineruns"}
	var (
		mu       sync.Mutex
		refused  []string
		accepted = map[string]int{}
		next     = make(chan string)
		wg       sync.WaitGroup
	)
	apply := func(name string) error {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(data, &obj.Object); err != nil {
			return fmt.Errorf("not a YAML object: %w", err)
		}
		resource, ok := kinds[obj.GetKind()]
		gv, err := schema.ParseGroupVersion(obj.GetAPIVersion())
		if !ok || err != nil || gv.Group != "tekton.dev" {
			return fmt.Errorf("an object of kind %s, %s: not one convert writes", obj.GetKind(), obj.GetAPIVersion())
		}
		_, err = client.Resource(gv.WithResource(resource)).Namespace(ns).Create(ctx, obj,
			metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldValidation: metav1.FieldValidationStrict})
		if err == nil {
			mu.Lock()
			accepted[obj.GetKind()]++
			mu.Unlock()
		}
		return err
	}
	// Two at a time: the other tests' TaskRuns go through the same webhook meanwhile.
	for range 2 {
		wg.Go(func() {
			for name := range next {
				if err := apply(name); err != nil {
					mu.Lock()
					refused = append(refused, fmt.Sprintf("%s: %v", name, err))
					mu.Unlock()
				}
			}
		})
	}
	for _, name := range files {
		next <- name
	}
	close(next)
	wg.Wait()
	slices.Sort(refused)
	if len(refused) > 0 {
		t.Errorf("the API server refused %d of %d objects; the first:\n%s", len(refused), len(files), strings.Join(refused[:min(len(refused), 10)], "\n"))
	}
	if accepted["Pipeline"] == 0 || accepted["PipelineRun"] != accepted["Pipeline"] || accepted["Task"] == 0 {
		t.Errorf("accepted %v: want Tasks, and a PipelineRun for each Pipeline", accepted)
	}
	t.Logf("%d pipelines converted; accepted %v", len(valid), accepted)
}
