package faultyserver

import (
	"strings"
	"testing"
)

// TestIdentity: an instance started Unidentified answers -1 until it is
// named through IdentityPath, then its answers and stats carry the id; a
// second naming with another id is refused and changes nothing.
func TestIdentity(t *testing.T) {
	in := start(t, Config{ID: Unidentified, Workers: 1, Service: Fixed(0)})
	get := func() string {
		r := do(t.Context(), in.client, "GET", in.ts.URL+"/", nil)
		if r.err != nil {
			t.Fatal(r.err)
		}
		return r.header.Get(InstanceHeader)
	}
	if got := get(); got != "-1" {
		t.Fatalf("before identify: %s %q, want -1", InstanceHeader, got)
	}
	put := func(body string) result {
		r := do(t.Context(), in.client, "PUT", in.ts.URL+IdentityPath, strings.NewReader(body))
		if r.err != nil {
			t.Fatal(r.err)
		}
		return r
	}
	if r := put(`{"id": -3}`); r.status != 400 || !strings.Contains(r.body, "id") {
		t.Errorf("PUT id -3: %d %s, want an error", r.status, r.body)
	}
	if r := put(`{"id"`); r.status != 400 || !strings.Contains(r.body, "body") {
		t.Errorf("PUT a cut body: %d %s, want 400 naming the body", r.status, r.body)
	}
	if r := put(`{"id": 7, "seed": 99}`); r.status != 200 {
		t.Fatalf("PUT id 7: %d %s", r.status, r.body)
	}
	if got := get(); got != "7" {
		t.Errorf("after identify: %s %q, want 7", InstanceHeader, got)
	}
	if r := put(`{"id": 7, "seed": 99}`); r.status != 200 {
		t.Errorf("PUT the same identity again: %d %s, want 200", r.status, r.body)
	}
	if r := put(`{"id": 8, "seed": 99}`); r.status != 409 || !strings.Contains(r.body, "already") {
		t.Errorf("PUT another id: %d %s, want 409", r.status, r.body)
	}
	if st := in.s.Stats(); st.ID != 7 {
		t.Errorf("stats id %d, want 7", st.ID)
	}
	if got := in.s.Identity(); got != (Identity{ID: 7, Seed: 99}) {
		t.Errorf("Identity() = %+v", got)
	}
}
