package process

import "github.com/lbchaos/lbchaos/harness/fleet"

var _ fleet.HostPortProvider = Provider{}

// HostPorts implements fleet.HostPortProvider: every server listens on a
// 127.0.0.1 port of this process, where network faults act.
func (Provider) HostPorts() (bool, string) { return true, "" }
