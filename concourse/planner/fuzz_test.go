package planner_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/concourse/planner"
)

// FuzzPlan: every job of every pipeline that validates plans without a panic, its plan
// encodes as JSON that decodes back, and PlanBuild locates every node of it.
func FuzzPlan(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.yml")
	for _, file := range files {
		if data, err := os.ReadFile(file); err == nil {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, diags := concourse.ParsePipeline("fuzz.yml", data, nil)
		if p == nil || len(diags.Errors()) > 0 {
			return
		}
		for i := range p.Config.Jobs {
			plan, err := planner.Plan(&p.Config, &p.Config.Jobs[i], planner.Options{})
			if err != nil {
				t.Fatalf("a valid pipeline must plan: %v", err)
			}
			buf, err := json.Marshal(plan)
			if err != nil {
				// NaN and infinities cannot be JSON; they can only come from YAML like .inf.
				continue
			}
			var back concourse.Plan
			if err := json.Unmarshal(buf, &back); err != nil {
				t.Fatalf("plan JSON does not decode: %v\n%s", err, buf)
			}
			b, err := planner.PlanBuild(p, p.Config.Jobs[i].Name, planner.Options{})
			if err != nil {
				t.Fatalf("PlanBuild: %v", err)
			}
			b.Plan.Each(func(n *concourse.Plan) {
				if _, ok := b.Paths[n.ID]; !ok {
					t.Fatalf("plan %s is not located", n.ID)
				}
			})
		}
	})
}
