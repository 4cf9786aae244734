package tektonrun

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
)

// TargetSpec is one entry of a targets file (the web node's --tekton-targets, which
// check-target --targets reads too): a further target (a namespace of a cluster with
// Tekton) the web node runs builds on, the worker it is, and what it does differently
// from the --tekton-* flags, whose values it takes otherwise.
//
//   - worker: tekton-gpu          # default: tekton-<namespace>
//     kubeconfig: /etc/concourse/gpu.kubeconfig
//     context: gpu                # default: the kubeconfig's current context
//     namespace: ci-gpu           # default: the context's, else default
//     tags: [gpu]                 # steps with these tags run here (untagged ones: not)
//     service_account: builder
//     storage_class: fast
//     build_volume_size: 10Gi
//     image_registry: registry.gpu.internal:5000/ci
//     image_registry_secret: push
type TargetSpec struct {
	Worker     string   `yaml:"worker"`
	Kubeconfig string   `yaml:"kubeconfig"`
	Context    string   `yaml:"context"`
	Namespace  string   `yaml:"namespace"`
	InCluster  bool     `yaml:"in_cluster"`
	Tags       []string `yaml:"tags"`
	Team       string   `yaml:"team"`

	ServiceAccount      string `yaml:"service_account"`
	StorageClass        string `yaml:"storage_class"`
	BuildVolumeSize     string `yaml:"build_volume_size"`
	ImageRegistry       string `yaml:"image_registry"`
	ImageRegistrySecret string `yaml:"image_registry_secret"`

	// Line and Column are where the entry is in its file.
	Line, Column int `yaml:"-"`
}

// WorkerName is the name of the worker the target is, in namespace (the namespace its
// kubeconfig context gives, when it names none): its worker's, else tekton-<namespace>.
func (s TargetSpec) WorkerName(namespace string) string {
	return cmp.Or(s.Worker, "tekton-"+namespace)
}

// tagPattern is what a worker tag may be here (tagRule says it): a word a pipeline's
// `tags:` can name.
var tagPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:/-]*$`)

const tagRule = "letters, digits, and _ . : / - after the first"

// CheckTag says why tag cannot be a worker's tag, or nil when it can.
func CheckTag(tag string) error {
	if !tagPattern.MatchString(tag) {
		return fmt.Errorf("%q is not a tag (%s)", tag, tagRule)
	}
	return nil
}

// targetFields are the keys of a TargetSpec in the file, in the order errors list them.
var targetFields = []string{"worker", "kubeconfig", "context", "namespace", "in_cluster", "tags", "team", "service_account", "storage_class", "build_volume_size", "image_registry", "image_registry_secret"}

// yamlLine is the position yaml puts in its type errors' messages.
var yamlLine = regexp.MustCompile(`^line \d+: `)

// ReadTargets reads a targets file: a YAML list of TargetSpec. An error names the file,
// the line and column, and the field.
func ReadTargets(path string) ([]TargetSpec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	specs, err := parseTargets(data)
	if err != nil {
		return nil, fmt.Errorf("%s:%w", path, err)
	}
	return specs, nil
}

// posError is an error at a line and column of the file.
func posError(line, col int, format string, args ...any) error {
	return fmt.Errorf("%d:%d: %s", line, col, fmt.Sprintf(format, args...))
}

func parseTargets(data []byte) ([]TargetSpec, error) {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, posError(1, 1, "no targets: want a list of them (worker, namespace, tags, ...)")
		}
		return nil, posError(1, 1, "%v", err)
	}
	list := doc.Content[0]
	if list.Kind != yaml.SequenceNode {
		return nil, posError(list.Line, list.Column, "want a list of targets (worker, namespace, tags, ...)")
	}
	specs := make([]TargetSpec, 0, len(list.Content))
	for i, item := range list.Content {
		var s TargetSpec
		if item.Kind != yaml.MappingNode {
			return nil, posError(item.Line, item.Column, "targets[%d]: want a mapping (worker, namespace, tags, ...)", i)
		}
		for k := 0; k+1 < len(item.Content); k += 2 {
			key, v := item.Content[k], item.Content[k+1]
			field := fieldOf(&s, key.Value)
			if field == nil {
				return nil, posError(key.Line, key.Column, "targets[%d].%s: unknown field (want %s)", i, key.Value, strings.Join(targetFields, ", "))
			}
			if err := v.Decode(field); err != nil {
				return nil, posError(v.Line, v.Column, "targets[%d].%s: %v", i, key.Value, yamlMessage(err))
			}
		}
		s.Line, s.Column = item.Line, item.Column
		if err := s.validate(i, item); err != nil {
			return nil, err
		}
		specs = append(specs, s)
	}
	return specs, nil
}

// fieldOf is the field of s a key of the file decodes into (nil: no such key).
func fieldOf(s *TargetSpec, key string) any {
	switch key {
	case "worker":
		return &s.Worker
	case "kubeconfig":
		return &s.Kubeconfig
	case "context":
		return &s.Context
	case "namespace":
		return &s.Namespace
	case "in_cluster":
		return &s.InCluster
	case "tags":
		return &s.Tags
	case "team":
		return &s.Team
	case "service_account":
		return &s.ServiceAccount
	case "storage_class":
		return &s.StorageClass
	case "build_volume_size":
		return &s.BuildVolumeSize
	case "image_registry":
		return &s.ImageRegistry
	case "image_registry_secret":
		return &s.ImageRegistrySecret
	}
	return nil
}

// yamlMessage is a decoding error without yaml's own position (the caller gives it).
func yamlMessage(err error) string {
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		return yamlLine.ReplaceAllString(te.Errors[0], "")
	}
	return err.Error()
}

// validate checks what can be checked without the cluster.
func (s *TargetSpec) validate(i int, item *yaml.Node) error {
	at := func(field string) (int, int) {
		for k := 0; k+1 < len(item.Content); k += 2 {
			if item.Content[k].Value == field {
				return item.Content[k+1].Line, item.Content[k+1].Column
			}
		}
		return item.Line, item.Column
	}
	if s.InCluster && (s.Kubeconfig != "" || s.Context != "") {
		l, c := at("in_cluster")
		return posError(l, c, "targets[%d].in_cluster: the pod's service account: leave out kubeconfig and context", i)
	}
	if s.Namespace != "" {
		if errs := validation.IsDNS1123Label(s.Namespace); len(errs) > 0 {
			l, c := at("namespace")
			return posError(l, c, "targets[%d].namespace: %q: %s", i, s.Namespace, errs[0])
		}
	}
	for _, tag := range s.Tags {
		if err := CheckTag(tag); err != nil {
			l, c := at("tags")
			return posError(l, c, "targets[%d].tags: %v", i, err)
		}
	}
	if s.BuildVolumeSize != "" {
		if _, err := resource.ParseQuantity(s.BuildVolumeSize); err != nil {
			l, c := at("build_volume_size")
			return posError(l, c, "targets[%d].build_volume_size: %q: %v", i, s.BuildVolumeSize, err)
		}
	}
	return nil
}
