// Command table turns the ginkgo JSON reports of testflight.sh (one per spec file of
// Concourse's testflight suite) into the Markdown table of atc/README.md: per file, the
// specs that passed of those it has, the time the file took, and for a file with failures
// the reason, taken from a reasons file written by whoever diagnosed them.
//
//	go run ./testflight/table [-reasons testflight/reasons.txt] [-suite DIR] [-w README.md] REPORT.json...
//
// -suite lists the suite's spec files, so that files without a report show as not run;
// -w replaces the table between the README's testflight markers instead of printing it.
package main
