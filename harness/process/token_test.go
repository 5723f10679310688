package process_test

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"

	"github.com/lbchaos/lbchaos/faultyserver"
	"github.com/lbchaos/lbchaos/harness"
	"github.com/lbchaos/lbchaos/harness/fleet"
	"github.com/lbchaos/lbchaos/harness/internal/runtest"
	"github.com/lbchaos/lbchaos/harness/live"
	"github.com/lbchaos/lbchaos/harness/process"
)

// refusedWithoutToken reports whether b's control API refuses a fault
// and a reset sent without a token, and kept its fault through both.
func refusedWithoutToken(ctx context.Context, b fleet.Backend) error {
	anon := &faultyserver.Client{BaseURL: b.URL.String()}
	before, err := b.Control.Fault(ctx)
	if err != nil {
		return err
	}
	for op, call := range map[string]func() error{
		"set fault": func() error { return anon.SetFault(ctx, faultyserver.Hang{}) },
		"reset":     func() error { return anon.Reset(ctx) },
		"stats":     func() error { _, err := anon.Stats(ctx); return err },
	} {
		var apiErr *faultyserver.APIError
		if err := call(); !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusUnauthorized {
			return errors.New(op + " without the token: not refused with 401")
		}
	}
	after, err := b.Control.Fault(ctx)
	if err != nil {
		return err
	}
	if after != before {
		return errors.New("a refused call changed the fault")
	}
	return nil
}

// TestBackendsNeedTheToken: a fleet's backends refuse control calls
// without the provider's token; its own clients carry it. Without a
// token each fleet gets a fresh random one.
func TestBackendsNeedTheToken(t *testing.T) {
	exp := runtest.MustExperiment(t, "token", `
duration: 1s
rate: 10
instances: {count: 2, service: {dist: fixed, value: 1ms}}
strategies: [round-robin]
`)
	spec := fleet.Spec{Instances: exp.Instances, Seed: 1}
	fl, err := process.Provider{Token: "fixed-token"}.Start(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	defer fl.Close()
	for _, b := range fl.Backends() {
		if err := refusedWithoutToken(t.Context(), b); err != nil {
			t.Errorf("instance %d: %v", b.ID, err)
		}
		own := &faultyserver.Client{BaseURL: b.URL.String(), Token: "fixed-token"}
		if err := own.SetFault(t.Context(), faultyserver.Fail{Status: 502}); err != nil {
			t.Errorf("instance %d with the token: %v", b.ID, err)
		}
		if err := b.Control.Reset(t.Context()); err != nil {
			t.Errorf("instance %d through its Control: %v", b.ID, err)
		}
	}

	var tokens []string
	for range 2 {
		fl, err := process.Provider{}.Start(t.Context(), spec)
		if err != nil {
			t.Fatal(err)
		}
		b := fl.Backends()[0]
		if err := refusedWithoutToken(t.Context(), b); err != nil {
			t.Errorf("a fleet with a generated token: %v", err)
		}
		tokens = append(tokens, b.Control.Token)
		fl.Close()
	}
	if tokens[0] == "" || tokens[0] == tokens[1] {
		t.Errorf("generated tokens %q: want a fresh one per fleet", tokens)
	}
}

// probing is the process provider, which checks as each fleet starts that
// its backends refuse a control call without the run's token.
type probing struct {
	process.Provider
	mu      sync.Mutex
	checked int
	errs    []error
}

func (p *probing) Start(ctx context.Context, spec fleet.Spec) (fleet.Fleet, error) {
	fl, err := p.Provider.Start(ctx, spec)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, b := range fl.Backends() {
		p.checked++
		if err := refusedWithoutToken(ctx, b); err != nil {
			p.errs = append(p.errs, err)
		}
	}
	return fl, nil
}

// TestRunControlsWithItsToken: in a whole run on process backends, every
// backend refuses a control call without the run's token, and the run's
// own fault schedule, sent with it, takes effect.
func TestRunControlsWithItsToken(t *testing.T) {
	if testing.Short() {
		t.Skip("real load for a second")
	}
	exp := runtest.MustExperiment(t, "run-token", `
duration: 1s
rate: 100
instances: {count: 2, service: {dist: fixed, value: 1ms}}
faults: [{instance: 1, at: 0s, fault: {mode: fail, status: 503}}]
strategies: [round-robin]
`)
	p := &probing{Provider: process.Provider{Token: faultyserver.NewToken()}}
	sum, err := harness.Run(t.Context(), exp, harness.Options{Engine: live.New(live.Options{Provider: p})})
	if err != nil {
		t.Fatal(err)
	}
	if p.checked != 2 || len(p.errs) > 0 {
		t.Errorf("%d backends checked, refusals missing: %v", p.checked, p.errs)
	}
	in := sum.Strategies[0].Instances
	if in[1].Requests == 0 || in[1].Errors != in[1].Requests || in[0].Errors != 0 {
		t.Errorf("instances %+v\nwant instance 1 failing by the run's fault, instance 0 not", in)
	}
}
