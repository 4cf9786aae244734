// Package booklit stands in for github.com/vito/booklit in the end-to-end test.
package booklit
