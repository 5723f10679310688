package reports

import "testing"

func TestSubchannelFact(t *testing.T) {
	for _, tc := range []struct {
		name   string
		events []Event
		want   string
	}{
		{name: "none", events: []Event{{Kind: "eject"}, {Kind: "readmit"}}, want: ""},
		{name: "changes", events: []Event{
			{Instance: 1, Kind: "subchannel-idle"}, {Instance: 1, Kind: "subchannel-connecting"},
			{Instance: 1, Kind: "subchannel-transient-failure", Detail: "connection refused"},
			{Instance: 2, Kind: "subchannel-transient-failure"}, {Instance: 1, Kind: "subchannel-transient-failure"},
			{Instance: 0, Kind: "eject"},
		}, want: "5 subchannel state changes, 3 of them transient failures (on 2 instances)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := subchannelFact(tc.events); got != tc.want {
				t.Errorf("subchannelFact = %q, want %q", got, tc.want)
			}
		})
	}
}
