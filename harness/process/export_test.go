package process

import "github.com/lbchaos/lbchaos/harness/fleet"

// PanicIn has instance id's server of fl (a fleet of this provider) run a
// goroutine of its own (faultyserver.Server.Go) that panics with v, as a
// bug in the server would.
func PanicIn(fl fleet.Fleet, id int, v any) {
	fl.(*processFleet).servers[id].Go("a goroutine of the test", func() { panic(v) })
}
