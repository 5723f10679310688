package strategies

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestEjectConfigParams(t *testing.T) {
	def := defaultEjectConfig()
	tests := []struct {
		name string
		spec string
		want func(c *ejectConfig)
	}{
		{"defaults are Envoy's", "p2c+eject", func(*ejectConfig) {}},
		{"experiment files", "p2c+eject(consecutive=5,duration=5s,max=0.2)", func(c *ejectConfig) {
			c.duration, c.maxShare = 5*time.Second, 0.2
		}},
		{"consecutive detectors off", "p2c+eject(consecutive=0,consecutive_local=0)", func(c *ejectConfig) {
			c.consecutive, c.consecutiveLocal = 0, 0
		}},
		{"max_duration follows a long duration", "p2c+eject(duration=10m)", func(c *ejectConfig) {
			c.duration, c.maxDuration = 10*time.Minute, 10*time.Minute
		}},
		{"every parameter", "p2c+eject(consecutive=3,duration=1s,max=1,split_local=true,consecutive_local=4," +
			"interval=2s,max_duration=9s,panic=0.5,success_rate=off,sr_min_hosts=3,sr_volume=20,sr_factor=1," +
			"failure_percentage=on,fp_threshold=0.5,fp_min_hosts=2,fp_volume=10)", func(c *ejectConfig) {
			*c = ejectConfig{
				consecutive: 3, duration: time.Second, maxShare: 1, splitLocal: true, consecutiveLocal: 4,
				interval: 2 * time.Second, maxDuration: 9 * time.Second, panicShare: 0.5,
				successRate: false, srMinHosts: 3, srVolume: 20, srFactor: 1,
				failurePct: true, fpThreshold: 0.5, fpMinHosts: 2, fpVolume: 10,
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Parse(tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			got, err := parseEjectConfig(s.Wrappers[0].Params)
			if err != nil {
				t.Fatal(err)
			}
			want := def
			tt.want(&want)
			if got != want {
				t.Errorf("config\n got %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestEjectConfigErrors(t *testing.T) {
	tests := []struct {
		name, spec, want string
	}{
		{"max_duration below duration", "p2c+eject(duration=5s,max_duration=1s)", `eject: max_duration: want a duration >= duration (5s), got "1s"`},
		{"max_duration below the default duration", "p2c+eject(max_duration=10s)", `eject: max_duration: want a duration >= duration (30s), got "10s"`},
		{"zero interval", "p2c+eject(interval=0s)", `eject: interval: want a duration > 0, got "0s"`},
		{"panic above one", "p2c+eject(panic=1.5)", `eject: panic: want a number in [0, 1], got "1.5"`},
		{"panic percent", "p2c+eject(panic=50%)", `eject: panic: want a number in [0, 1], got "50%"`},
		{"negative sr_factor", "p2c+eject(sr_factor=-1)", `eject: sr_factor: want a number in [0, 100], got "-1"`},
		{"fp_threshold percent", "p2c+eject(fp_threshold=85)", `eject: fp_threshold: want a number in [0, 1], got "85"`},
		{"zero sr_volume", "p2c+eject(sr_volume=0)", `eject: sr_volume: want an integer >= 1, got "0"`},
		{"zero fp_min_hosts", "p2c+eject(fp_min_hosts=0)", `eject: fp_min_hosts: want an integer >= 1, got "0"`},
		{"negative consecutive", "p2c+eject(consecutive=-1)", `eject: consecutive: want an integer >= 0, got "-1"`},
		{"negative consecutive_local", "p2c+eject(consecutive_local=-1)", `eject: consecutive_local: want an integer >= 0, got "-1"`},
		{"split_local not a bool", "p2c+eject(split_local=maybe)", `eject: split_local: want true or false, got "maybe"`},
		{"success_rate not a bool", "p2c+eject(success_rate=2)", `eject: success_rate: want true or false, got "2"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.spec)
			if err == nil || err.Error() != tt.want {
				t.Errorf("Parse(%q) error:\n got %v\nwant %s", tt.spec, err, tt.want)
			}
		})
	}
}

func TestEjectConfigDefaults(t *testing.T) {
	tests := []struct {
		name   string
		params map[string]string
	}{
		{"none given", nil},
		{"every default written out", map[string]string{
			"consecutive": "5", "duration": "30s", "max": "0.1", "split_local": "false",
			"consecutive_local": "5", "interval": "10s", "max_duration": "300s", "panic": "0",
			"success_rate": "true", "sr_min_hosts": "5", "sr_volume": "100", "sr_factor": "1.9",
			"failure_percentage": "false", "fp_threshold": "0.85", "fp_min_hosts": "5", "fp_volume": "50",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseEjectConfig(tt.params)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(defaultEjectConfig(), got, cmp.AllowUnexported(ejectConfig{})); diff != "" {
				t.Errorf("config (-defaults +got):\n%s", diff)
			}
		})
	}
	for _, key := range ejectParams {
		if _, ok := tests[1].params[key]; !ok {
			t.Errorf("parameter %q is missing from the defaults written out", key)
		}
	}
}
