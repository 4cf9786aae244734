// Command git-resource is the git Concourse resource type of the e2e tests
// (e2e/resource/git): install it as /opt/resource/{check,in,out}, beside a git binary.
package main
