// Command mock-resource is the mock Concourse resource type (e2e/resource/mock): install
// it as /opt/resource/{check,in,out}; it runs the script it is named after.
package main
