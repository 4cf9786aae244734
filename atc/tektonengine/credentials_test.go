package tektonengine

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/concourse/concourse/atc"
	"github.com/concourse/concourse/atc/exec"
	"github.com/concourse/concourse/vars"
	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/concourse-tekton/concourse-tekton/concourse/event"
	"github.com/concourse-tekton/concourse-tekton/runspec"
	"github.com/concourse-tekton/concourse-tekton/tektonrun"
)

// withRedaction makes sure the ATC redacts secrets (always, unless --disable-redact-secrets)
// for a test.
func withRedaction(t *testing.T) {
	was := atc.DisableRedactSecrets
	atc.DisableRedactSecrets = false
	t.Cleanup(func() { atc.DisableRedactSecrets = was })
}

// credentialsOf checks that a run was started with the build's RunState as its
// credentials, and that a var looked up through them is the build's, and tracked for
// Concourse's redaction as its steps' vars are.
func credentialsOf(t *testing.T, runs *fakeRuns) {
	t.Helper()
	if len(runs.refs) != 1 {
		t.Fatalf("%d runs started; want 1", len(runs.refs))
	}
	state, ok := runs.refs[0].Credentials.(exec.RunState)
	if !ok {
		t.Fatalf("the run's credentials are %T, not the build's RunState", runs.refs[0].Credentials)
	}
	v, found, err := state.Get(vars.Reference{Path: "token"})
	if err != nil || !found || v != "s3cr3t" {
		t.Errorf("((token)) = %v, %t, %v; want the build's s3cr3t", v, found, err)
	}
	tracked := vars.TrackedVarsMap{}
	state.IterateInterpolatedCreds(tracked)
	if tracked["token"] != "s3cr3t" {
		t.Errorf("tracked for redaction: %v", tracked)
	}
}

// A job build's run gets its credentials from the RunState the engine gives the step:
// the build's credential manager and its pipeline's var_sources (build.Variables).
func TestBuildStepGivesTheRunItsState(t *testing.T) {
	withRedaction(t)
	build := jobBuild(taskPlan)
	build.VariablesReturns(vars.StaticVariables{"token": "s3cr3t"}, nil)
	runs := &fakeRuns{run: newRun(event.BuildStatusSucceeded)}
	runEngine(t, build, &StepperFactory{Runs: runs}, nil)
	credentialsOf(t, runs)
}

// A check build's run too: the same state its source was evaluated with.
func TestCheckStepGivesTheRunItsState(t *testing.T) {
	withRedaction(t)
	plan := checkPlan
	check := *plan.Check
	check.Source = atc.Source{"token": "((token))"}
	plan.Check = &check
	fx := newCheckFixture(plan)
	fx.build.VariablesReturns(vars.StaticVariables{"token": "s3cr3t"}, nil)
	runs := &fakeRuns{run: newRun(event.BuildStatusSucceeded, checkEvents(event.Finish{Origin: event.Origin{ID: "5"}, Time: 103, Succeeded: true})...)}
	runEngine(t, fx.build, fx.factory(runs), nil)
	credentialsOf(t, runs)
	if _, source, _ := fx.configs.FindOrCreateResourceConfigArgsForCall(0); !cmp.Equal(source, atc.Source{"token": "s3cr3t"}) {
		t.Errorf("the resource config's source %v", source)
	}
	// The run's plan keeps the var: it is resolved for the run from the same state.
	if got := runs.plans[0].Check.Source["token"]; got != "((token))" {
		t.Errorf("the run's source has %v", got)
	}
}

// Start resolves the build's vars through its credentials, in Concourse's types, into the
// run's Secret; a var they do not have is left out (the step that needs it errors when it
// runs, as in Concourse); an error of the credentials fails the start with Concourse's.
func TestStartResolvesCredentials(t *testing.T) {
	plan := taskPlan
	task := *plan.Task
	config := *task.Config
	config.Params = atc.TaskEnv{"TOKEN": "((token))", "API": "((dm:api))"}
	task.Config = &config
	plan.Task = &task
	planJSON, err := json.Marshal(plan)
	if err != nil {
		t.Fatal(err)
	}
	creds := vars.NewMultiVars([]vars.Variables{
		vars.NamedVariables{"dm": vars.StaticVariables{"api": "api-key"}},
		vars.StaticVariables{"token": "t0k"},
	})
	tests := []struct {
		name    string
		creds   vars.Variables
		want    map[string][]byte
		wantErr string
	}{
		{"found", creds, map[string][]byte{runspec.CredentialKey("token"): []byte(`"t0k"`), runspec.CredentialKey("dm:api"): []byte(`"api-key"`)}, ""},
		{"undefined", vars.NewMultiVars([]vars.Variables{vars.NamedVariables{"dm": vars.StaticVariables{}}, vars.StaticVariables{"token": "t0k"}}),
			map[string][]byte{runspec.CredentialKey("token"): []byte(`"t0k"`)}, ""},
		{"no such var source", vars.NamedVariables{}, nil, "missing source 'dm' in var: dm:api"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runs, _, kube := newRunsWithKube(t)
			ctx := context.Background()
			ref := BuildRef{Meta: tektonrun.BuildMeta{Team: "main", Pipeline: "app", Job: "unit", Build: "3"}, ID: 7}
			_, err := runs.Start(ctx, planJSON, ref.WithCredentials(tt.creds))
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			s, err := kube.CoreV1().Secrets("ci").Get(ctx, "app-unit-3", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, s.Data); diff != "" {
				t.Errorf("the run's Secret (-want +got):\n%s", diff)
			}
		})
	}
}
