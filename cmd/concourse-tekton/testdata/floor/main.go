// Command floor decodes each file it is given with sigs.k8s.io/yaml, as Concourse reads a
// pipeline: the floor BenchmarkCorpus measures the command against.
package main

import (
	"os"

	"sigs.k8s.io/yaml"
)

func main() {
	for _, f := range os.Args[1:] {
		data, err := os.ReadFile(f)
		if err != nil {
			panic(err)
		}
		var v any
		_ = yaml.Unmarshal(data, &v)
	}
}
