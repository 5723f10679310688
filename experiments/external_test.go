package experiments

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestExternalInstances(t *testing.T) {
	const head = "name: t\nduration: 2s\nrate: 10\nstrategies: [round-robin]\n"
	tests := []struct {
		name      string
		instances string
		wantErr   string // "" = loads
		want      []External
		health    string
		modeled   bool
	}{
		{
			name:      "urls",
			instances: "{external: [http://a:1, http://b:2]}",
			want:      []External{{URL: "http://a:1"}, {URL: "http://b:2"}},
			health:    "/",
		},
		{
			name:      "sidecars and health",
			instances: "{health: /ready, external: [{url: http://a:1, sidecar: http://a:9}, http://b:2]}",
			want:      []External{{URL: "http://a:1", Sidecar: "http://a:9"}, {URL: "http://b:2"}},
			health:    "/ready",
		},
		{
			name:      "count agrees",
			instances: "{count: 1, external: [https://a]}",
			want:      []External{{URL: "https://a"}},
			health:    "/",
		},
		{
			name:      "with a model for the simulator",
			instances: "{workers: 4, service: {dist: fixed, value: 5ms}, external: [http://a:1]}",
			want:      []External{{URL: "http://a:1"}},
			health:    "/",
			modeled:   true,
		},
		{
			name:      "count disagrees",
			instances: "{count: 3, external: [http://a:1, http://b:2]}",
			wantErr:   "instances.count: is 3 but instances.external lists 2 instances; leave count out or make them agree",
		},
		{
			name:      "groups disagree",
			instances: "{external: [http://a:1, http://b:2], groups: [{count: 3, service: {dist: fixed, value: 1ms}}]}",
			wantErr:   "instances.count: is 2 but the groups hold 3 instances",
		},
		{
			name:      "not a URL",
			instances: "{external: [http://a:1, 'b:2']}",
			wantErr:   `instances.external[1].url: "b:2" is not an http:// or https:// URL with a host`,
		},
		{
			name:      "no url",
			instances: "{external: [{sidecar: http://a:9}]}",
			wantErr:   "instances.external[0].url: is required",
		},
		{
			name:      "bad sidecar",
			instances: "{external: [{url: http://a:1, sidecar: 'ftp://a'}]}",
			wantErr:   `instances.external[0].sidecar: "ftp://a" is not an http:// or https:// URL`,
		},
		{
			name:      "query in url",
			instances: "{external: ['http://a:1/?x=1']}",
			wantErr:   `instances.external[0].url: "http://a:1/?x=1" has a query or fragment`,
		},
		{
			name:      "health not a path",
			instances: "{health: ready, external: [http://a:1]}",
			wantErr:   `instances.health: must be a path starting with /, got "ready"`,
		},
		{
			name:      "health without external",
			instances: "{count: 1, health: /ready, service: {dist: fixed, value: 1ms}}",
			wantErr:   "instances.health: applies to instances.external only",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := Parse("t.yaml", []byte(head+"instances: "+tt.instances+"\n"))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v\nwant it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, e.Instances.External); diff != "" {
				t.Errorf("external (-want +got):\n%s", diff)
			}
			if e.Instances.Count != len(tt.want) || e.Instances.HealthPath != tt.health || e.Instances.Modeled() != tt.modeled {
				t.Errorf("count %d health %q modeled %v; want %d %q %v",
					e.Instances.Count, e.Instances.HealthPath, e.Instances.Modeled(), len(tt.want), tt.health, tt.modeled)
			}
		})
	}
}

func TestExternalOverrides(t *testing.T) {
	e, err := Parse("t.yaml", []byte(good)) // 3 instances
	if err != nil {
		t.Fatal(err)
	}
	three := []External{{URL: "http://a:1"}, {URL: "http://b:1", Sidecar: "http://b:9"}, {URL: "http://c:1"}}
	tests := []struct {
		name    string
		ov      Overrides
		wantErr string
		health  string
	}{
		{name: "one per instance", ov: Overrides{External: three}, health: DefaultHealthPath},
		{name: "health path", ov: Overrides{External: three, HealthPath: "/up"}, health: "/up"},
		{name: "health without external", ov: Overrides{HealthPath: "/up"}, wantErr: "--health-path: applies to external instances"},
		{name: "bad health", ov: Overrides{External: three, HealthPath: "up"}, wantErr: `instances.health: must be a path starting with /`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := e.Apply(tt.ov)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v\nwant it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(three, got.Instances.External); diff != "" || got.Instances.HealthPath != tt.health {
				t.Errorf("health %q, want %q; external (-want +got):\n%s", got.Instances.HealthPath, tt.health, diff)
			}
			if !got.Instances.Modeled() || len(e.Instances.External) != 0 {
				t.Error("a modeled file stays modeled, and the original unchanged")
			}
		})
	}
}
