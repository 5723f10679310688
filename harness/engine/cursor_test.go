package engine

import "testing"

// TestPoissonCursorMatchesDue: a cursor reads the very arrivals Due gives,
// homogeneous or along a rate curve, and leaves the schedule untouched.
func TestPoissonCursorMatchesDue(t *testing.T) {
	for name, p := range map[string]*PoissonSchedule{
		"constant rate": NewPoissonSchedule(4000, 42),
		"varying rate":  NewVaryingPoissonSchedule(burst(), 7),
	} {
		t.Run(name, func(t *testing.T) {
			c := p.Cursor()
			for k := range uint64(50000) {
				got := c.Next()
				want, ok := p.Due(k)
				if !ok || got != want {
					t.Fatalf("arrival %d: cursor %v, Due %v (%v)", k, got, want, ok)
				}
			}
		})
	}
}
