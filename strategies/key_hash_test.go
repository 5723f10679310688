package strategies

import (
	"math"
	"slices"
	"testing"
)

func TestKeyHash(t *testing.T) {
	tests := []struct {
		name  string
		hosts []int // ascending
		keys  []uint64
		want  []int
	}{
		{"five hosts: key mod 5", seq(5), []uint64{0, 1, 4, 5, 12, 99}, []int{0, 1, 4, 0, 2, 4}},
		{"subset: rank by id", []int{2, 5, 9}, []uint64{0, 1, 2, 3, 7}, []int{2, 5, 9, 2, 5}},
		{"single host", []int{6}, []uint64{0, 1, math.MaxUint64}, []int{6, 6, 6}},
		// MaxUint64 = 18446744073709551615 ≡ 1 (mod 7).
		{"largest key", seq(7), []uint64{math.MaxUint64}, []int{1}},
	}
	for _, tt := range tests {
		for order, hosts := range hostOrders(tt.hosts) {
			t.Run(tt.name+"/"+order, func(t *testing.T) {
				p := hashPicker(t, "key-hash", hashEnv(10, nil))
				for i, k := range tt.keys {
					if got := hashPick(p, k, hosts); got != tt.want[i] {
						t.Errorf("hosts %v, key %d: picked %d, want %d", hosts, k, got, tt.want[i])
					}
				}
			})
		}
	}
}

func TestKeyHashHeterogeneousScenario(t *testing.T) {
	// The scenario sends key = request number mod 100 and expects host
	// key mod N: every host gets the same number of the 100 keys when N
	// divides 100, and they cycle through the hosts in order.
	b, err := New("key-hash", Env{N: 4, Rand: newRand(1)})
	if err != nil {
		t.Fatal(err)
	}
	counts := make([]int, 4)
	for req := range 1000 {
		key := uint64(req % 100)
		ep, done := b.Pick(Request{Key: key, HasKey: true})
		done(ok200)
		if want := int(key % 4); ep != want {
			t.Fatalf("request %d (key %d): picked %d, want %d", req, key, ep, want)
		}
		counts[ep]++
	}
	if !slices.Equal(counts, []int{250, 250, 250, 250}) {
		t.Errorf("counts %v, want 250 each", counts)
	}
}

func TestKeyHashHostChanges(t *testing.T) {
	// A scripted sequence of host sets: the mapping follows the rank of the
	// hosts in each set.
	p := hashPicker(t, "key-hash", hashEnv(8, nil))
	steps := []struct {
		hosts []int
		want  []int // for keys 0..5
	}{
		{seq(4), []int{0, 1, 2, 3, 0, 1}},
		{[]int{0, 1, 3}, []int{0, 1, 3, 0, 1, 3}},
		{[]int{7, 3}, []int{3, 7, 3, 7, 3, 7}},
		{seq(4), []int{0, 1, 2, 3, 0, 1}},
	}
	for i, st := range steps {
		for k, want := range st.want {
			if got := hashPick(p, uint64(k), st.hosts); got != want {
				t.Errorf("step %d, hosts %v, key %d: picked %d, want %d", i, st.hosts, k, got, want)
			}
		}
	}
}
