package sim

import (
	"github.com/lbchaos/lbchaos/experiments"
)

// protocolNotes say where the simulation of exp's protocol differs from a
// real run. With h2c the simulator runs the same model as with HTTP/1.1:
// strategies, pinned connections (the pinned wrapper's slots, Env.Connections
// of them per replica, exactly as the real engine builds them) and joins
// are the real engine's, but there are no sockets.
func protocolNotes(exp *experiments.Experiment) []string {
	if exp.Protocol != experiments.ProtocolH2C {
		return nil
	}
	return []string{"protocol h2c: the simulator models requests, not sockets. A pinned strategy's connections pin instances as in a real run, " +
		"but opening a connection costs nothing, no stream limit (SETTINGS_MAX_CONCURRENT_STREAMS) holds requests back, " +
		"and a reset with scope connection fails only its own request, not every stream on the connection."}
}
