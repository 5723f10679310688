package transport

import "testing"

// A connection keeps its number while it is reused; a new connection on a
// port a closed one had gets a number of its own.
func TestConnIDs(t *testing.T) {
	var c connIDs
	a := c.id(40000, false)
	b := c.id(40001, false)
	if a == b {
		t.Fatalf("two new connections got the same id %d", a)
	}
	if got := c.id(40000, true); got != a {
		t.Errorf("a reused connection got id %d, want its own %d", got, a)
	}
	if got := c.id(40000, false); got == a || got == b {
		t.Errorf("a new connection on a port seen before got id %d, one of the earlier ones", got)
	}
	if got := c.id(40002, true); got == a || got == b {
		t.Errorf("a reused connection never seen got an earlier id %d", got)
	}
}
