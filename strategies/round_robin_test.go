package strategies

import (
	"slices"
	"testing"
)

func TestRoundRobin(t *testing.T) {
	type step struct {
		hosts []int
		want  []int // successive picks from hosts
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"cycles from 0", []step{{[]int{0, 1, 2}, []int{0, 1, 2, 0, 1, 2, 0}}}},
		{"single host", []step{{[]int{4}, []int{4, 4, 4}}}},
		{"starts at smallest id", []step{{[]int{3, 5, 8}, []int{3, 5, 8, 3}}}},
		{"host ejected ahead continues after last pick", []step{
			{[]int{0, 1, 2, 3}, []int{0, 1}},
			{[]int{0, 1, 3}, []int{3, 0, 1, 3}},
		}},
		{"last pick ejected continues with next id", []step{
			{[]int{0, 1, 2, 3}, []int{0, 1}},
			{[]int{0, 2, 3}, []int{2, 3, 0, 2}},
		}},
		{"re-admitted host joins in id order without a burst", []step{
			{[]int{0, 1, 2, 3}, []int{0}},
			{[]int{0, 2, 3}, []int{2}},
			{[]int{0, 1, 2, 3}, []int{3, 0, 1, 2, 3}},
		}},
		{"wraps when the last pick was the largest id", []step{
			{[]int{0, 1, 2}, []int{0, 1, 2}},
			{[]int{0, 1}, []int{0, 1, 0}},
		}},
		{"last pick beyond every remaining id wraps", []step{
			{[]int{0, 1, 2, 3}, []int{0, 1, 2, 3}},
			{[]int{1, 2}, []int{1, 2, 1}},
		}},
		{"new slice with same length", []step{
			{[]int{0, 1, 2, 3}, []int{0, 1}},
			{[]int{0, 2, 3, 4}, []int{2, 3, 4, 0}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rr := newRoundRobin()
			for i, s := range tt.steps {
				var got []int
				for range s.want {
					ep, done := rr.Pick(Request{}, s.hosts)
					done(Outcome{Status: 200})
					got = append(got, ep)
				}
				if !slices.Equal(got, s.want) {
					t.Errorf("step %d, hosts %v: picks %v, want %v", i, s.hosts, got, s.want)
				}
			}
		})
	}
}

func TestRoundRobinEvenShares(t *testing.T) {
	rr := newRoundRobin()
	hosts := seq(7)
	counts := make([]int, 7)
	for range 7 * 100 {
		ep, _ := rr.Pick(Request{}, hosts)
		counts[ep]++
	}
	for ep, c := range counts {
		if c != 100 {
			t.Errorf("endpoint %d picked %d times, want 100 (counts %v)", ep, c, counts)
		}
	}
}
