package experiments

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestAppInstances(t *testing.T) {
	const head = "name: t\nduration: 2s\nrate: 10\nstrategies: [round-robin]\n"
	tests := []struct {
		name      string
		instances string
		wantErr   string // "" = loads
		want      *App
		count     int
		modeled   bool
	}{
		{
			name:      "full",
			instances: "{count: 5, app: {image: 'myteam/api:1.4', port: 8080, port_env: PORT, health: /healthz, env: {LOG_LEVEL: warn}, args: [--x], restart: true}}",
			want:      &App{Image: "myteam/api:1.4", Port: 8080, PortEnv: "PORT", Health: "/healthz", Env: map[string]string{"LOG_LEVEL": "warn"}, Args: []string{"--x"}, Restart: true},
			count:     5,
		},
		{
			name:      "health defaults to /",
			instances: "{count: 2, app: {image: api, port: 80}}",
			want:      &App{Image: "api", Port: 80, Health: "/"},
			count:     2,
		},
		{
			name:      "service as the simulator's model",
			instances: "{count: 3, service: {dist: fixed, value: 5ms}, app: {image: api, port: 80, port_env: PORT}}",
			want:      &App{Image: "api", Port: 80, PortEnv: "PORT", Health: "/"},
			count:     3,
			modeled:   true,
		},
		{
			name:      "groups with weights",
			instances: "{app: {image: api, port: 80}, groups: [{count: 2, weight: 2}, {count: 1}]}",
			want:      &App{Image: "api", Port: 80, Health: "/"},
			count:     3,
		},
		{
			name:      "workers",
			instances: "{count: 2, workers: 4, app: {image: api, port: 80}}",
			wantErr:   "t.yaml: line 5: instances.workers: does not apply with instances.app (instances.app runs your own service, which has its own workers); leave it out",
		},
		{
			name:      "queue limit, even 0",
			instances: "{count: 2, queue_limit: 0, app: {image: api, port: 80}}",
			wantErr:   "instances.queue_limit: does not apply with instances.app",
		},
		{
			name:      "keep abandoned",
			instances: "{count: 2, keep_abandoned: true, app: {image: api, port: 80}}",
			wantErr:   "instances.keep_abandoned: does not apply with instances.app",
		},
		{
			name:      "group workers",
			instances: "{app: {image: api, port: 80}, groups: [{count: 2, workers: 3}]}",
			wantErr:   "instances.groups[0].workers: does not apply with instances.app",
		},
		{
			name:      "with external",
			instances: "{app: {image: api, port: 80}, external: [http://a:1]}",
			wantErr:   "instances.app: and instances.external both say where the instances come from; keep one",
		},
		{
			name:      "no image",
			instances: "{count: 2, app: {port: 80}}",
			wantErr:   "instances.app.image: is required: a local image such as myteam/api:1.4 (lbchaos never pulls)",
		},
		{
			name:      "no port",
			instances: "{count: 2, app: {image: api}}",
			wantErr:   "instances.app.port: is required: the service's HTTP port, 1..65535, got 0",
		},
		{
			name:      "port out of range",
			instances: "{count: 2, app: {image: api, port: 70000}}",
			wantErr:   "instances.app.port: is required: the service's HTTP port, 1..65535, got 70000",
		},
		{
			name:      "bad port_env",
			instances: "{count: 2, app: {image: api, port: 80, port_env: 1PORT}}",
			wantErr:   `instances.app.port_env: "1PORT" is not an environment variable name`,
		},
		{
			name:      "health not a path",
			instances: "{count: 2, app: {image: api, port: 80, health: healthz}}",
			wantErr:   `instances.app.health: must be a path starting with /, got "healthz"`,
		},
		{
			name:      "bad env name",
			instances: "{count: 2, app: {image: api, port: 80, env: {'A-B': x}}}",
			wantErr:   `instances.app.env: "A-B" is not an environment variable name`,
		},
		{
			name:      "port_env in env",
			instances: "{count: 2, app: {image: api, port: 80, port_env: PORT, env: {PORT: '1'}}}",
			wantErr:   "instances.app.env.PORT: is port_env, whose value lbchaos assigns to each instance; leave it out of env",
		},
		{
			name:      "instances.health is external's",
			instances: "{count: 2, health: /up, app: {image: api, port: 80}}",
			wantErr:   "instances.health: applies to instances.external only",
		},
		{
			name:      "unknown field",
			instances: "{count: 2, app: {image: api, port: 80, pull: always}}",
			wantErr:   `unknown field "pull"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := Parse("t.yaml", []byte(head+"instances: "+tt.instances+"\n"))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(msg(err, tt.wantErr), tt.wantErr) {
					t.Fatalf("err = %v\nwant it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, e.Instances.App); diff != "" {
				t.Errorf("app (-want +got):\n%s", diff)
			}
			if e.Instances.Count != tt.count || e.Instances.Modeled() != tt.modeled || !e.Instances.Foreign() {
				t.Errorf("count %d modeled %v foreign %v; want %d %v true", e.Instances.Count, e.Instances.Modeled(), e.Instances.Foreign(), tt.count, tt.modeled)
			}
		})
	}
}

// An app's file pointed at instances that already run is refused: the
// two say differently where the instances come from.
func TestAppWithBackendOverride(t *testing.T) {
	e, err := Parse("t.yaml", []byte("name: t\nduration: 2s\nrate: 10\nstrategies: [round-robin]\ninstances: {count: 1, app: {image: api, port: 80}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.Apply(Overrides{External: []External{{URL: "http://a:1"}}})
	if want := "after command-line overrides: instances.app: and instances.external (or --backend) both say"; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v\nwant it to contain %q", err, want)
	}
}
