package preflight

import (
	"fmt"
	"strings"
	"testing"
)

func TestReportSortsOneLinePerFinding(t *testing.T) {
	findings := []Finding{
		{CRD: "b.example.com", Version: "v1", Path: ".spec.a", Rule: RuleEnum, Detail: `values removed: ["x"]`},
		{CRD: "a.example.com", Version: "v2", Path: ".spec", Rule: RuleRequired, Detail: `newly required: ["a"]`},
		{CRD: "a.example.com", Version: "v1", Path: ".spec.z", Rule: RuleFieldRemoval, Detail: "property removed"},
		{CRD: "a.example.com", Version: "v1", Path: ".spec.z", Rule: RuleDefault, Detail: `added 1`},
	}
	want := strings.Join([]string{
		`a.example.com v1 .spec.z: default: added 1`,
		`a.example.com v1 .spec.z: existingFieldRemoval: property removed`,
		`a.example.com v2 .spec: required: newly required: ["a"]`,
		`b.example.com v1 .spec.a: enum: values removed: ["x"]`,
	}, "\n")
	input := append([]Finding(nil), findings...)
	if got := Report(findings, MaxConditionMessageBytes); got != want {
		t.Errorf("Report:\n%s\nwant:\n%s", got, want)
	}
	for i := range findings {
		if findings[i] != input[i] {
			t.Fatalf("Report reordered its argument")
		}
	}
	if got := Report(findings, 0); got != want {
		t.Errorf("Report with no limit:\n%s\nwant:\n%s", got, want)
	}
	if got := Report(nil, MaxConditionMessageBytes); got != "" {
		t.Errorf("Report(nil) = %q, want empty", got)
	}
}

func TestReportTruncatesWithCount(t *testing.T) {
	var findings []Finding
	for i := 0; i < 2000; i++ {
		findings = append(findings, Finding{CRD: "widgets.example.com", Version: "v1", Path: fmt.Sprintf(".spec.field%04d", i), Rule: RuleFieldRemoval, Detail: "property removed"})
	}
	full := Report(findings, 0)
	if len(full) <= MaxConditionMessageBytes {
		t.Fatalf("test needs a report over the limit; got %d bytes", len(full))
	}
	got := Report(findings, MaxConditionMessageBytes)
	if len(got) > MaxConditionMessageBytes {
		t.Fatalf("report is %d bytes, over the %d limit", len(got), MaxConditionMessageBytes)
	}
	lines := strings.Split(got, "\n")
	kept := lines[:len(lines)-1]
	last := lines[len(lines)-1]
	if want := fmt.Sprintf("... and %d more findings", 2000-len(kept)); last != want {
		t.Errorf("last line %q, want %q", last, want)
	}
	fullLines := strings.Split(full, "\n")
	for i, l := range kept {
		if l != fullLines[i] {
			t.Fatalf("line %d = %q, want the full report's line %q (sorted prefix, no partial lines)", i, l, fullLines[i])
		}
	}
	// As many lines as fit: one more line would overflow the limit.
	next := len(strings.Join(fullLines[:len(kept)+1], "\n")) + len(fmt.Sprintf("\n... and %d more findings", 2000-len(kept)-1))
	if next <= MaxConditionMessageBytes {
		t.Errorf("kept %d lines but %d would fit (%d bytes)", len(kept), len(kept)+1, next)
	}
}

func TestReportLimitEdges(t *testing.T) {
	f := []Finding{
		{CRD: "a", Version: "v1", Path: ".x", Rule: RuleType, Detail: "changed"},
		{CRD: "a", Version: "v1", Path: ".y", Rule: RuleType, Detail: "changed"},
	}
	full := Report(f, 0)
	if got := Report(f, len(full)); got != full {
		t.Errorf("limit equal to the length: %q, want the full report", got)
	}
	// Too small for even one line: only the count.
	if got := Report(f, 30); got != "... and 2 more findings" {
		t.Errorf("tiny limit: %q", got)
	}
	if got := Report(f, 5); len(got) > 5 {
		t.Errorf("limit 5: %q is longer", got)
	}
}

func TestTruncateKeepsRunes(t *testing.T) {
	cases := []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"abcdef", 3, "abc..."},
		{"aé", 2, "a..."}, // é is two bytes: never cut inside it
		{"ééé", 4, "éé..."},
	}
	for _, tc := range cases {
		if got := truncate(tc.in, tc.n); got != tc.want {
			t.Errorf("truncate(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}
