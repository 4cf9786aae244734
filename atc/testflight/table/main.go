package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// The README's table sits between these lines, which -w keeps.
const (
	beginMarker = "<!-- testflight table: begin (go run ./testflight/table -w README.md) -->"
	endMarker   = "<!-- testflight table: end -->"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "error: %v\n", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("table", flag.ContinueOnError)
	reasonsPath := fs.String("reasons", "", "the reasons file: lines `FILE: reason`, # comments")
	suite := fs.String("suite", "", "the suite's directory, to list files without a report as not run")
	readme := fs.String("w", "", "a README whose table (between the testflight markers) to replace")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var reports []Report
	for _, p := range fs.Args() {
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rs, err := ParseReports(data)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		reports = append(reports, rs...)
	}
	reasons := map[string]string{}
	if *reasonsPath != "" {
		data, err := os.ReadFile(*reasonsPath)
		if err != nil {
			return err
		}
		if reasons, err = ParseReasons(data); err != nil {
			return fmt.Errorf("%s: %w", *reasonsPath, err)
		}
	}
	var files []string
	if *suite != "" {
		matches, err := filepath.Glob(filepath.Join(*suite, "*_test.go"))
		if err != nil {
			return err
		}
		for _, m := range matches {
			if b := filepath.Base(m); b != "suite_test.go" {
				files = append(files, b)
			}
		}
	}
	table := Markdown(Summarize(reports, files), reasons)
	if *readme == "" {
		_, err := io.WriteString(stdout, table)
		return err
	}
	data, err := os.ReadFile(*readme)
	if err != nil {
		return err
	}
	updated, err := Replace(data, table)
	if err != nil {
		return fmt.Errorf("%s: %w", *readme, err)
	}
	return os.WriteFile(*readme, updated, 0o644)
}

// Report is the part of a ginkgo JSON report (types.Report) the table needs.
type Report struct {
	RunTime     time.Duration
	SuiteConfig struct{ DryRun bool }
	SpecReports []SpecReport
}

// SpecReport is one node's outcome: an It, or a suite node such as BeforeSuite.
type SpecReport struct {
	ContainerHierarchyTexts []string
	LeafNodeText            string
	LeafNodeType            string
	LeafNodeLocation        struct {
		FileName   string
		LineNumber int
	}
	State   string
	RunTime time.Duration
	Failure *struct{ Message string }
}

// ParseReports reads a ginkgo JSON report: a list of suites' reports.
func ParseReports(data []byte) ([]Report, error) {
	var rs []Report
	if err := json.Unmarshal(data, &rs); err != nil {
		return nil, fmt.Errorf("not a ginkgo JSON report (-ginkgo.json-report): %w", err)
	}
	return rs, nil
}

// ParseReasons reads lines `FILE: reason`; blank lines and # comments are skipped.
func ParseReasons(data []byte) (map[string]string, error) {
	reasons := map[string]string{}
	var errs []error
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		file, reason, ok := strings.Cut(line, ": ")
		if !ok || strings.ContainsAny(file, " \t") {
			errs = append(errs, fmt.Errorf("line %d: want `FILE: reason`, got %q", n, line))
			continue
		}
		reasons[file] = strings.TrimSpace(reason)
	}
	return reasons, errors.Join(append(errs, sc.Err())...)
}

// File is one spec file's outcome. Declared is how many specs the suite has in it, when a
// dry run's report (-ginkgo.dry-run) says.
type File struct {
	Declared                       int
	Name                           string
	Ran                            bool
	Total, Passed, Failed, Skipped int
	RunTime                        time.Duration
	SuiteFailure, FirstFailure     string
}

// Summarize counts each file's specs in the reports, files in the order they first ran.
// A spec in several reports counts as the last one says (a file run again, or some of its
// specs); files (the suite's, optional) adds those without a report, as not run.
func Summarize(reports []Report, files []string) []File {
	// A spec is its file, line and texts: two specs of a file may have the same texts.
	type key struct {
		file string
		line int
		spec string
	}
	last := map[key]SpecReport{}
	var specs []key
	suiteFailure := map[string]string{}
	var order []string
	seen := map[string]bool{}
	declared := map[string]int{}
	for _, r := range reports {
		if r.SuiteConfig.DryRun {
			for _, s := range r.SpecReports {
				if s.LeafNodeType == "It" {
					declared[path.Base(s.LeafNodeLocation.FileName)]++
				}
			}
			continue
		}
		var failure string
		var ran []string
		for _, s := range r.SpecReports {
			if s.LeafNodeType != "It" {
				if s.State != "passed" && s.State != "skipped" && s.Failure != nil {
					failure = s.LeafNodeType + ": " + firstLine(s.Failure.Message)
				}
				continue
			}
			if s.State == "skipped" && s.Failure == nil {
				continue // not focused: another file's run
			}
			k := key{path.Base(s.LeafNodeLocation.FileName), s.LeafNodeLocation.LineNumber, strings.Join(append(s.ContainerHierarchyTexts, s.LeafNodeText), " ")}
			if _, ok := last[k]; !ok {
				specs = append(specs, k)
			}
			last[k] = s
			if !seen[k.file] {
				seen[k.file] = true
				order = append(order, k.file)
			}
			ran = append(ran, k.file)
		}
		for _, f := range ran {
			suiteFailure[f] = failure
		}
	}
	byName := map[string]*File{}
	for _, name := range order {
		byName[name] = &File{Name: name, Ran: true, SuiteFailure: suiteFailure[name], Declared: declared[name]}
	}
	for _, k := range specs {
		s, f := last[k], byName[k.file]
		f.Total++
		f.RunTime += s.RunTime
		switch s.State {
		case "passed":
			f.Passed++
		case "skipped", "pending":
			f.Skipped++
		default:
			f.Failed++
			if f.FirstFailure == "" {
				msg := ""
				if s.Failure != nil {
					msg = ": " + firstLine(s.Failure.Message)
				}
				f.FirstFailure = fmt.Sprintf("%q %s%s", k.spec, s.State, msg)
			}
		}
	}
	out := make([]File, 0, len(order)+len(files))
	for _, name := range order {
		out = append(out, *byName[name])
	}
	var notRun []string
	for _, name := range files {
		if !seen[name] && declared[name] == 0 {
			notRun = append(notRun, name)
		}
	}
	for name := range declared {
		if !seen[name] {
			notRun = append(notRun, name)
		}
	}
	sort.Strings(notRun)
	for _, name := range notRun {
		out = append(out, File{Name: name, Declared: declared[name]})
	}
	return out
}

// Markdown renders the results: a table of the files run (the specs that passed of those
// each has, and the time it took), a paragraph naming the files not run, and a list of why
// each file that did not pass whole did not: its reason, else its first failure. Lines
// are wrapped, so that no line of the README grows with a reason.
func Markdown(files []File, reasons map[string]string) string {
	var b strings.Builder
	b.WriteString("| file | passed | time |\n|---|---|---|\n")
	var passed, total, ran, notRunSpecs int
	var took time.Duration
	var notRun, whyNot []string
	for _, f := range files {
		reason := reasons[f.Name]
		switch {
		case !f.Ran:
			name := f.Name
			if f.Declared > 0 {
				name = fmt.Sprintf("%s (%d)", f.Name, f.Declared)
				notRunSpecs += f.Declared
			}
			notRun = append(notRun, name)
			if reason != "" {
				whyNot = append(whyNot, fmt.Sprintf("%s (not run): %s", f.Name, reason))
			}
			continue
		case f.Failed == 0 && f.SuiteFailure == "" && f.Declared > f.Total:
			if reason == "" {
				reason = fmt.Sprintf("undiagnosed: %d specs not reached", f.Declared-f.Total)
			}
		case f.Failed == 0 && f.SuiteFailure == "":
			if f.Skipped == 0 {
				reason = ""
			} else if reason == "" {
				reason = fmt.Sprintf("%d skipped by the suite itself", f.Skipped)
			}
		case reason == "":
			reason = "undiagnosed: " + f.FirstFailure
			if f.SuiteFailure != "" {
				reason = "undiagnosed: " + f.SuiteFailure
			}
		}
		n := max(f.Total, f.Declared)
		ran++
		passed += f.Passed
		total += n
		took += f.RunTime
		fmt.Fprintf(&b, "| %s | %d/%d | %s |\n", f.Name, f.Passed, n, f.RunTime.Round(time.Second))
		if reason != "" {
			whyNot = append(whyNot, fmt.Sprintf("%s (%d/%d): %s", f.Name, f.Passed, n, reason))
		}
	}
	fmt.Fprintf(&b, "| **%d files run** | **%d/%d** | %s |\n", ran, passed, total, took.Round(time.Second))
	if len(notRun) > 0 {
		head := fmt.Sprintf("Not run (%d files", len(notRun))
		if notRunSpecs > 0 {
			head += fmt.Sprintf(", %d specs", notRunSpecs)
		}
		words := append(strings.Fields(head+"):"), notRun...)
		for i := len(words) - len(notRun); i < len(words)-1; i++ {
			words[i] += ","
		}
		words[len(words)-1] += "."
		b.WriteString("\n" + wrapWords(words, "", "") + "\n")
	}
	if len(whyNot) > 0 {
		b.WriteString("\nWhy not:\n\n")
		for _, w := range whyNot {
			b.WriteString(wrapWords(strings.Fields(w), "- ", "  ") + "\n")
		}
	}
	return b.String()
}

// width is where wrap breaks lines: the README's own width.
const width = 92

// wrapWords fills words into lines of at most width characters (a longer word stays
// whole), the first prefixed with first, the others with rest. A word that Markdown would
// read as the start of a list or a heading at the start of a line stays on the line before
// it. A word may hold a space: "caching_test.go (1)" is never broken.
func wrapWords(words []string, first, rest string) string {
	var b strings.Builder
	line := first
	empty := true
	for _, w := range words {
		if !empty && len(line)+1+len(w) > width && !opensBlock(w) {
			b.WriteString(line + "\n")
			line, empty = rest, true
		}
		if !empty {
			line += " "
		}
		line += w
		empty = false
	}
	b.WriteString(line)
	return b.String()
}

// opensBlock says whether a line that starts with w would start a list, a heading, a
// quote or a table row in Markdown, rather than continue a paragraph.
func opensBlock(w string) bool {
	switch w {
	case "-", "+", "*":
		return true
	}
	if strings.ContainsAny(w[:1], "#>|") {
		return true
	}
	rest := strings.TrimLeft(w, "0123456789")
	return len(rest) < len(w) && (rest == "." || rest == ")")
}

// Replace puts table between the markers of readme.
func Replace(readme []byte, table string) ([]byte, error) {
	s := string(readme)
	i := strings.Index(s, beginMarker)
	j := strings.Index(s, endMarker)
	if i < 0 || j < i {
		return nil, fmt.Errorf("no table markers: put the lines %q and %q where the table goes", beginMarker, endMarker)
	}
	return []byte(s[:i+len(beginMarker)] + "\n" + table + s[j:]), nil
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}
