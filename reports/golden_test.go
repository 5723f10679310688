package reports

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// checkGolden compares got with testdata/name, or rewrites the file when
// the -update flag is set.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if d := cmp.Diff(string(want), string(got)); d != "" {
		t.Errorf("%s differs (-want +got); run go test -update if the change is intended:\n%s", path, d)
	}
}

func partialSample() *Summary {
	s := sampleSummary()
	s.Partial = true
	s.Strategies[2].Partial = true
	s.Notes = append(s.Notes, "the run was interrupted during least-inflight+eject(consecutive=5,duration=5s).")
	return s
}

func TestWriteTableGolden(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    *Summary
	}{
		{"table.golden", sampleSummary()},
		{"table_partial.golden", partialSample()},
		{"table_nofault.golden", &Summary{Experiment: "baseline", DurationS: 30, TargetRate: 4000, SlowThresholdMs: 1000,
			Strategies: []Strategy{{Name: "p2c", Requests: 120000, AchievedRate: 4000, LatencyMs: Latency{P50: 10.1, P99: 11}}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := WriteTable(&buf, tc.s); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, tc.name, buf.Bytes())
		})
	}
}
