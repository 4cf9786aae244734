// Command pause is the sandbox ("pause") container of the e2e cluster: it holds the pod's
// namespaces open, reaps orphaned children, and exits on SIGINT or SIGTERM.
package main
