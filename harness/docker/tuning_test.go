package docker

import (
	"maps"
	"slices"
	"testing"

	"github.com/moby/moby/client"

	"github.com/lbchaos/lbchaos/faultyserver"
)

// TestServeEnv: a server's environment holds the token and the runtime
// tuning, and Options.Env overrides the tuning.
func TestServeEnv(t *testing.T) {
	p := &Provider{opts: Options{Token: "tok"}}
	want := map[string]string{faultyserver.TokenEnv: "tok", "GOMAXPROCS": "1", "GODEBUG": "schedtrace=2147483647"}
	if got := p.serveEnv(); !maps.Equal(got, want) {
		t.Errorf("serveEnv() = %v, want %v", got, want)
	}
	p.opts.Env = map[string]string{"GOMAXPROCS": "2", "GOGC": "100"}
	want["GOMAXPROCS"], want["GOGC"] = "2", "100"
	if got := p.serveEnv(); !maps.Equal(got, want) {
		t.Errorf("with Options.Env: serveEnv() = %v, want %v", got, want)
	}
	if serveTuning["GOMAXPROCS"] != "1" {
		t.Errorf("serveEnv changed serveTuning: %v", serveTuning)
	}
}

// TestDockerBackendsRuntimeTuning: a backend container runs with the
// runtime tuning in its environment, and answers.
func TestDockerBackendsRuntimeTuning(t *testing.T) {
	p := newTokenProvider(t, "tuning-token", true)
	fl, err := p.Start(t.Context(), testSpec(1))
	if err != nil {
		t.Fatal(err)
	}
	defer fl.Close()
	b := fl.Backends()[0]
	if _, err := b.Control.Stats(t.Context()); err != nil {
		t.Fatalf("stats: %v", err)
	}
	id := fl.(*dockerFleet).insts[0].ctr.GetContainerID()
	insp, err := testClient(t).ContainerInspect(t.Context(), id, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range serveTuning {
		if !slices.Contains(insp.Container.Config.Env, k+"="+v) {
			t.Errorf("%s=%s not in the container's environment %q", k, v, insp.Container.Config.Env)
		}
	}
}
