// Package external is the provider of instances that already run: someone
// else started them, and a run only sends load to them. An instance with an
// lbchaos sidecar in front of it (lbchaos serve --upstream) takes server
// faults through the sidecar's control API, and load goes to the sidecar;
// one without a sidecar takes load and nothing else. No instance takes
// container faults: lbchaos cannot reach their runtime.
package external

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/faultyserver"
	"github.com/lbchaos/lbchaos/harness/fleet"
)

// StartTimeout bounds each instance's health check and sidecar reset in
// Start.
const StartTimeout = 10 * time.Second

// Provider hands back the instances the experiment's Instances.External
// lists (the command line's --backend and --sidecar end up there).
type Provider struct {
	// Token is sent on every control call to the sidecars: the token they
	// were started with (lbchaos serve --token, or LBCHAOS_TOKEN). A
	// sidecar started without one accepts any.
	Token string
}

var _ fleet.Provider = Provider{}

// Name implements fleet.Provider.
func (Provider) Name() string { return "external" }

// Start implements fleet.Provider. It checks that every instance answers
// (its sidecar's health check, or without one a GET of the health path)
// and resets every sidecar, so that each strategy starts from a fresh
// sidecar: no fault, zeroed counters. An instance without a sidecar is
// used as it is. The error names the first instance that does not answer.
func (p Provider) Start(ctx context.Context, spec fleet.Spec) (fleet.Fleet, error) {
	if len(spec.External) == 0 {
		return nil, errors.New("no external instances: give their URLs with --backend or instances.external")
	}
	if len(spec.External) != spec.Count {
		return nil, fmt.Errorf("%d external instances for %d instances", len(spec.External), spec.Count)
	}
	f := &externalFleet{}
	for id, x := range spec.External {
		b, err := backend(id, x, spec.HealthPath, p.Token)
		if err != nil {
			return nil, err
		}
		cctx, cancel := context.WithTimeout(ctx, StartTimeout)
		err = fleet.Healthy(cctx, b)
		if err == nil && b.Control != nil {
			err = b.Control.Reset(cctx)
		}
		cancel()
		var apiErr *faultyserver.APIError
		if errors.As(err, &apiErr) && apiErr.StatusCode == http.StatusUnauthorized {
			return nil, fmt.Errorf("instance %d: sidecar %s refused the run's token: give the token it was started with (lbchaos serve --token or %s) to lbchaos run as --token or %s: %w",
				id, x.Sidecar, faultyserver.TokenEnv, faultyserver.TokenEnv, err)
		}
		if err != nil {
			return nil, fmt.Errorf("instance %d (%s) does not answer: %w", id, describe(x), err)
		}
		f.backends = append(f.backends, b)
	}
	return f, nil
}

// backend is instance id: the sidecar's address and control API when it
// has one, else the instance's own address.
func backend(id int, x experiments.External, health, token string) (fleet.Backend, error) {
	target := x.URL
	if x.Sidecar != "" {
		target = x.Sidecar
	}
	u, err := url.Parse(target)
	if err != nil {
		return fleet.Backend{}, fmt.Errorf("instance %d: %w", id, err)
	}
	b := fleet.Backend{ID: id, URL: u, HealthPath: health}
	if x.Sidecar != "" {
		b.Control = &faultyserver.Client{BaseURL: x.Sidecar, Token: token}
	}
	return b, nil
}

func describe(x experiments.External) string {
	if x.Sidecar != "" {
		return fmt.Sprintf("%s, sidecar %s", x.URL, x.Sidecar)
	}
	return x.URL
}

type externalFleet struct {
	backends []fleet.Backend
	once     sync.Once
	err      error
}

func (f *externalFleet) Backends() []fleet.Backend { return f.backends }

// Close stops nothing: the instances and sidecars are not ours. It resets
// every sidecar, so that no fault outlives the run (a fault whose until is
// the end of the attack is never cleared by the schedule).
func (f *externalFleet) Close() error {
	f.once.Do(func() {
		var errs []error
		for _, b := range f.backends {
			if b.Control == nil {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if err := b.Control.Reset(ctx); err != nil {
				errs = append(errs, fmt.Errorf("reset the sidecar of instance %d (%s): %w", b.ID, b.URL, err))
			}
			cancel()
		}
		f.err = errors.Join(errs...)
	})
	return f.err
}
