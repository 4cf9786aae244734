module github.com/concourse-tekton/concourse-tekton

go 1.26.4
