// Package vars implements Concourse's ((var)) references: their syntax, and their
// interpolation into a parsed YAML tree the way `fly set-pipeline` does it, leaving
// unknown vars in place for run time and reporting them.
package vars
