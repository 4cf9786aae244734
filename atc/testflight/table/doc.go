// Command table turns the ginkgo JSON reports of testflight.sh (one per spec file of
// Concourse's testflight suite) into the results of atc/README.md: a table with, per file
// run, the specs that passed of those it has and the time the file took; the files not
// run; and why each file that did not pass whole did not: its reason, from a reasons file
// written by whoever diagnosed it, else its first failure. Lines are wrapped at 92
// characters.
//
//	go run ./testflight/table [-reasons testflight/reasons.txt] [-suite DIR] [-w README.md] REPORT.json...
//
// -suite lists the suite's spec files, so that files without a report show as not run;
// -w replaces the results between the README's testflight markers instead of printing them.
package main
