// Package deps holds no code, only a test: that Concourse's packages and this repository's
// tektonrun link into one binary, and that doing so leaves tektonrun's dependencies at the
// versions the main module selects (so it runs with what its own tests ran with), apart
// from the differences listed there with their reasons.
package deps
