module github.com/concourse-tekton/concourse-tekton

go 1.26.4

require github.com/google/go-cmp v0.7.0 // indirect
