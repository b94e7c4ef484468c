package main

import (
	"reflect"
	"testing"
)

// TestRunner checks the testing.TB stand-in test/framework runs under: a
// fatal call ends the steps there and reports failure, cleanups run last
// first, and a skip (missing binary) counts as a failure.
func TestRunner(t *testing.T) {
	cases := []struct {
		name       string
		steps      func(tb testing.TB, trace *[]string)
		wantOK     bool
		wantTrace  []string
		wantFailed bool
	}{
		{"steps that pass", func(tb testing.TB, trace *[]string) {
			tb.Cleanup(func() { *trace = append(*trace, "cleanup 1") })
			tb.Cleanup(func() { *trace = append(*trace, "cleanup 2") })
			*trace = append(*trace, "step")
		}, true, []string{"step", "cleanup 2", "cleanup 1"}, false},
		{"Fatal stops the steps", func(tb testing.TB, trace *[]string) {
			tb.Cleanup(func() { *trace = append(*trace, "cleanup") })
			*trace = append(*trace, "before")
			tb.Fatalf("boom %d", 1)
			*trace = append(*trace, "after")
		}, false, []string{"before", "cleanup"}, true},
		{"Skip is fatal", func(tb testing.TB, trace *[]string) {
			tb.Skip("kubectl not found")
			*trace = append(*trace, "after")
		}, false, nil, true},
		{"Error fails but goes on", func(tb testing.TB, trace *[]string) {
			tb.Error("bad")
			*trace = append(*trace, "after")
		}, false, []string{"after"}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var trace []string
			r := &runner{}
			ok := r.run(func(tb testing.TB) { tc.steps(tb, &trace) })
			r.cleanup()
			if ok != tc.wantOK || r.Failed() != tc.wantFailed {
				t.Errorf("run ok=%v failed=%v, want ok=%v failed=%v", ok, r.Failed(), tc.wantOK, tc.wantFailed)
			}
			if !reflect.DeepEqual(trace, tc.wantTrace) {
				t.Errorf("trace = %q, want %q", trace, tc.wantTrace)
			}
		})
	}
}
