// Package resource holds what the e2e test resource types share: running the script a
// binary is called as (check, in or out), the way Concourse expects.
package resource
