package reports

import (
	"slices"
	"testing"
)

func TestMergeNotes(t *testing.T) {
	skip := "a real proxy runs only with the real engine (--engine real); it is left out of the simulation."
	tests := []struct {
		name     string
		in, want []string
	}{
		{"none", nil, nil},
		{"distinct kept", []string{"a: x", "b: y"}, []string{"a: x", "b: y"}},
		{"same text merged at the first", []string{"nginx:round_robin: " + skip, "other note", "haproxy:random(2)+observe(error_limit=10,on_error=mark-down): " + skip},
			[]string{"nginx:round_robin, haproxy:random(2)+observe(error_limit=10,on_error=mark-down): " + skip, "other note"}},
		{"a sentence is no name", []string{"The run was interrupted: 2 of 5", "The run was interrupted: 2 of 5"},
			[]string{"The run was interrupted: 2 of 5", "The run was interrupted: 2 of 5"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := MergeNotes(tc.in); !slices.Equal(got, tc.want) {
				t.Errorf("MergeNotes(%q)\n got %q\nwant %q", tc.in, got, tc.want)
			}
		})
	}
}
