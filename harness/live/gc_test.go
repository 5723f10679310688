package live

import (
	"runtime/debug"
	"testing"
)

func TestLessGC(t *testing.T) {
	t.Setenv("GOGC", "")
	before := debug.SetGCPercent(150)
	defer debug.SetGCPercent(before)
	restore := lessGC()
	if got := debug.SetGCPercent(attackGCPercent); got != attackGCPercent {
		t.Errorf("during an attack the GC percent is %d, want %d", got, attackGCPercent)
	}
	restore()
	if got := debug.SetGCPercent(150); got != 150 {
		t.Errorf("after the attack the GC percent is %d, want the 150 from before", got)
	}

	t.Setenv("GOGC", "50")
	restore = lessGC()
	if got := debug.SetGCPercent(150); got != 150 {
		t.Errorf("with GOGC set, the attack changed the GC percent to %d", got)
	}
	restore()
}
