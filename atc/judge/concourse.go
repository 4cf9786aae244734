package judge

import (
	"github.com/concourse/concourse/atc"
	"github.com/concourse/concourse/atc/configvalidate"
	// The credential managers a pipeline's var_sources may name, registered as the web
	// node registers them (atc/atccmd).
	_ "github.com/concourse/concourse/atc/creds/conjur"
	_ "github.com/concourse/concourse/atc/creds/credhub"
	_ "github.com/concourse/concourse/atc/creds/dummy"
	"github.com/concourse/concourse/atc/creds/idtoken"
	_ "github.com/concourse/concourse/atc/creds/kubernetes"
	_ "github.com/concourse/concourse/atc/creds/secretsmanager"
	_ "github.com/concourse/concourse/atc/creds/ssm"
	_ "github.com/concourse/concourse/atc/creds/vault"
	"github.com/concourse/concourse/atc/db/dbfakes"
	cvars "github.com/concourse/concourse/vars"
	yamlv3 "go.yaml.in/yaml/v3"
	"sigs.k8s.io/yaml"
)

// Stage is where Concourse refused a file.
type Stage string

const (
	// StageYAML is fly's strict parse of the raw text (go.yaml.in/yaml/v3, which refuses
	// duplicate keys); its messages name lines of the file.
	StageYAML Stage = "yaml"
	// StageTemplate is fly's templating, which reads the text again (yaml v2).
	StageTemplate Stage = "template"
	// StageDecode is the decoding of the templated text into Concourse's types: fly's
	// (sigs.k8s.io/yaml), the web node's strict atc.UnmarshalConfig, or a task file's
	// atc.NewTaskConfig. Its messages name fields, not lines.
	StageDecode Stage = "decode"
	// StageValidate is configvalidate.Validate (a task config's Validate); its messages
	// name places like jobs.unit.plan.do[2].get(repo).
	StageValidate Stage = "validate"
)

// Verdict is Concourse's verdict on a file: accepted when Errors is empty.
type Verdict struct {
	// Stage is where the file was refused.
	Stage Stage
	// Errors are Concourse's messages, one per problem.
	Errors []string
	// Warnings are what fly shows of a file it accepts.
	Warnings []atc.ConfigWarning
}

func init() {
	// As fly validate-pipeline and the web node do: without an issuer and a signing key
	// factory, every idtoken var source would be refused.
	idtoken.UpdateGlobalManagerFactory(func(f *idtoken.ManagerFactory) {
		f.SetIssuer("http://localhost")
		f.SetSigningKeyFactory(&dbfakes.FakeSigningKeyFactory{})
	})
}

// Pipeline is Concourse's verdict on a pipeline file, reached as `fly set-pipeline` reaches
// it without vars (fly/commands/internal/templatehelpers and setpipelinehelpers): the
// strict parse of the raw text, the templating that leaves every ((var)) as written, fly's
// decoding of the result; then the web node's (atc/api/configserver/save.go):
// atc.UnmarshalConfig, strict, and configvalidate.Validate.
func Pipeline(data []byte) Verdict {
	v, _ := setPipeline(data)
	return v
}

// setPipeline is Pipeline's verdict on a file, and the config the web node decoded of it.
func setPipeline(data []byte) (Verdict, atc.Config) {
	if err := yamlv3.Unmarshal(data, make(map[string]any)); err != nil {
		return refused(StageYAML, err), atc.Config{}
	}
	evaluated, err := cvars.NewTemplateResolver(data, []cvars.Variables{cvars.StaticVariables{}}).Resolve(false)
	if err != nil {
		return refused(StageTemplate, err), atc.Config{}
	}
	var flyConfig atc.Config
	if err := yaml.Unmarshal(evaluated, &flyConfig); err != nil {
		return refused(StageDecode, err), atc.Config{}
	}
	// fly shows the warnings of its own decoding before it sends the text.
	warnings, _ := configvalidate.Validate(flyConfig)
	var config atc.Config
	if err := atc.UnmarshalConfig(evaluated, &config); err != nil {
		return refused(StageDecode, err), atc.Config{}
	}
	_, errs := configvalidate.Validate(config)
	if len(errs) > 0 {
		return Verdict{Stage: StageValidate, Errors: errs, Warnings: warnings}, atc.Config{}
	}
	return Verdict{Warnings: warnings}, config
}

// TaskFile is Concourse's verdict on a task file, as fly execute and a task step's `file`
// read one: atc.NewTaskConfig on the raw text (its ((vars)) are interpolated at run time).
func TaskFile(data []byte) Verdict {
	if _, err := atc.NewTaskConfig(data); err != nil {
		if v, ok := err.(atc.TaskValidationError); ok {
			return Verdict{Stage: StageValidate, Errors: v.Errors}
		}
		return refused(StageDecode, err)
	}
	return Verdict{}
}

func refused(stage Stage, err error) Verdict {
	return Verdict{Stage: stage, Errors: []string{err.Error()}}
}
