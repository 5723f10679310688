package fleet_test

import (
	"context"
	"strings"
	"testing"

	"github.com/lbchaos/lbchaos/experiments"
	"github.com/lbchaos/lbchaos/harness/fleet"
)

// noProvider is a provider that starts lbchaos's own instances.
type noProvider struct{}

func (noProvider) Name() string { return "process" }
func (noProvider) Start(context.Context, fleet.Spec) (fleet.Fleet, error) {
	panic("not started")
}

// TestCheckNeedsAServiceTime: instances lbchaos starts serve with the
// file's service time; a file that gives only a count runs against
// external instances alone.
func TestCheckNeedsAServiceTime(t *testing.T) {
	e, err := experiments.Parse("x.yaml", []byte("name: x\nduration: 1s\nrate: 10\ninstances: {count: 2}\nstrategies: [p2c]\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := "x.yaml: instances.service: is required for the instances process backends start"
	if err := fleet.Check(e, noProvider{}); err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("err = %v, want one starting %q", err, want)
	}
	ext, err := e.Apply(experiments.Overrides{External: []experiments.External{{URL: "http://a:1"}, {URL: "http://b:1"}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := fleet.Check(ext, noProvider{}); err != nil {
		t.Errorf("external instances: %v", err)
	}
}
