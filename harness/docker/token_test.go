package docker

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/faultyserver"
	"github.com/lbchaos/lbchaos/harness/fleet"
	"github.com/lbchaos/lbchaos/harness/internal/runtest"
)

// newTokenProvider is newTestProvider with a fixed token and network mode.
func newTokenProvider(t *testing.T, token string, hostNetwork bool) *Provider {
	t.Helper()
	requireDocker(t)
	p, err := New(t.Context(), Options{
		Binary:       runtest.Binary(t),
		StartTimeout: 20 * time.Second,
		Log:          testLog{t},
		HostNetwork:  hostNetwork,
		Token:        token,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(context.Background()); err != nil {
			t.Errorf("provider close: %v", err)
		}
		if n := countRun(t, p.RunID()); n != 0 {
			t.Errorf("%d containers or networks of run %s left after Close", n, p.RunID())
		}
	})
	return p
}

// checkLocked checks that b refuses control calls without token and obeys
// its Control, and that container id has the token in its environment and
// not on its command line.
func checkLocked(t *testing.T, b fleet.Backend, id, token string) {
	t.Helper()
	ctx := t.Context()
	anon := &faultyserver.Client{BaseURL: b.URL.String()}
	var apiErr *faultyserver.APIError
	if err := anon.SetFault(ctx, faultyserver.Fail{Status: 502}); !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusUnauthorized {
		t.Errorf("instance %d: set fault without the token: %v, want 401", b.ID, err)
	}
	wrong := &faultyserver.Client{BaseURL: b.URL.String(), Token: token + "x"}
	if _, err := wrong.Stats(ctx); !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusUnauthorized {
		t.Errorf("instance %d: stats with a wrong token: %v, want 401", b.ID, err)
	}
	if code, _, err := get(ctx, b, 2*time.Second); err != nil || code != 200 {
		t.Errorf("instance %d after refused calls: %d %v, want 200 (no fault)", b.ID, code, err)
	}
	if b.Control.Token != token {
		t.Errorf("instance %d: its Control sends token %q, want the provider's", b.ID, b.Control.Token)
	}
	if err := b.Control.SetFault(ctx, faultyserver.Fail{Status: 502}); err != nil {
		t.Errorf("instance %d: set fault through its Control: %v", b.ID, err)
	}
	if code, _, err := get(ctx, b, 2*time.Second); err != nil || code != 502 {
		t.Errorf("instance %d after an authorized fault: %d %v, want 502", b.ID, code, err)
	}
	insp, err := testClient(t).ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := insp.Container.Config
	if strings.Contains(strings.Join(cfg.Cmd, " "), token) {
		t.Errorf("instance %d: the token is on the command line %q", b.ID, cfg.Cmd)
	}
	if !slices.Contains(cfg.Env, faultyserver.TokenEnv+"="+token) {
		t.Errorf("instance %d: %s=<token> not in the container's environment", b.ID, faultyserver.TokenEnv)
	}
}

// TestDockerBackendsNeedTheToken: containers the fleet starts refuse a
// control call without the provider's token, with published ports (the
// server listening on every interface of its container, which lbchaos
// serve allows only with a token) and on the host network.
func TestDockerBackendsNeedTheToken(t *testing.T) {
	for name, host := range map[string]bool{"published": false, "host": true} {
		t.Run(name, func(t *testing.T) {
			const token = "docker-token-5e2"
			p := newTokenProvider(t, token, host)
			fl, err := p.Start(t.Context(), testSpec(1))
			if err != nil {
				t.Fatal(err)
			}
			defer fl.Close()
			checkLocked(t, fl.Backends()[0], fl.(*dockerFleet).insts[0].ctr.GetContainerID(), token)
		})
	}
}

// TestDockerAppSidecarNeedsTheToken: the sidecar in front of the user's
// image (instances.app) refuses a control call without the token.
func TestDockerAppSidecarNeedsTheToken(t *testing.T) {
	const token = "docker-sidecar-token-9"
	p := newTokenProvider(t, token, true)
	img := exampleImage(t)
	app := experiments.App{Image: img, Port: 8080, PortEnv: "PORT", Health: "/healthz"}
	fl, err := p.Start(t.Context(), fleet.Spec{Instances: experiments.Instances{Count: 1, App: &app}, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer fl.Close()
	f := fl.(*dockerFleet)
	checkLocked(t, f.Backends()[0], f.insts[0].side.GetContainerID(), token)
	insp, err := testClient(t).ContainerInspect(t.Context(), f.insts[0].ctr.GetContainerID(), client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range insp.Container.Config.Env {
		if strings.Contains(e, token) {
			t.Errorf("the app's container has the token in its environment (%s): only the sidecar needs it", strings.SplitN(e, "=", 2)[0])
		}
	}
}
