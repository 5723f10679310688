package reports

import (
	"fmt"
	"strings"
)

// subchannelEventPrefix starts the kind of a grpc-go policy's subchannel
// state change (see Event).
const subchannelEventPrefix = "subchannel-"

// subchannelFact sums up a grpc-go policy's subchannel events: how many
// state changes, how many of them transient failures and on how many
// instances; "" when there are none.
func subchannelFact(events []Event) string {
	var n, failures int
	failed := map[int]bool{}
	for _, e := range events {
		if !strings.HasPrefix(e.Kind, subchannelEventPrefix) {
			continue
		}
		n++
		if e.Kind == subchannelEventPrefix+"transient-failure" {
			failures++
			failed[e.Instance] = true
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%d subchannel state changes, %d of them transient failures (on %d instances)", n, failures, len(failed))
}
