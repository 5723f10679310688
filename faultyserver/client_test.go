package faultyserver

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestClient(t *testing.T) {
	in := start(t, Config{ID: 9, Workers: 1, Service: Fixed(0)})
	c := &Client{BaseURL: in.ts.URL + "/", HTTP: in.client}
	ctx := t.Context()

	if err := c.Healthy(ctx); err != nil {
		t.Fatalf("Healthy: %v", err)
	}
	want := Fail{Status: 500, Delay: 0, Health: Health{Status: 503}}
	if err := c.SetFault(ctx, want); err != nil {
		t.Fatalf("SetFault: %v", err)
	}
	got, err := c.Fault(ctx)
	if err != nil {
		t.Fatalf("Fault: %v", err)
	}
	if diff := cmp.Diff(Fault(want), got); diff != "" {
		t.Errorf("Fault mismatch (-want +got):\n%s", diff)
	}
	err = c.Healthy(ctx)
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("Healthy under health_status 503: %v, want an *APIError with 503", err)
	}

	in.get(ctx, "/")
	st, err := c.Stats(ctx)
	if err != nil {
		t.Fatalf("Stats: %v", err)
	}
	if st.ID != 9 || st.Failed != 1 || string(st.Fault) == "" {
		t.Errorf("Stats = %+v, want id 9, failed 1 and the fault", st)
	}

	// A fault the instance rejects: its message comes back in the error.
	err = c.SetFault(ctx, ErrorRate{P: 2, Status: 503})
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest ||
		!strings.Contains(apiErr.Message, "p: must be within [0,1], got 2") ||
		!strings.Contains(err.Error(), "p: must be within [0,1]") {
		t.Errorf("SetFault(p=2): %v, want a 400 *APIError naming p", err)
	}
	if _, ok := in.s.Fault().(Fail); !ok {
		t.Errorf("fault after rejected SetFault = %v, want the earlier fail", in.s.Fault())
	}

	if err := c.ClearFault(ctx); err != nil {
		t.Fatalf("ClearFault: %v", err)
	}
	if f, err := c.Fault(ctx); err != nil || f != nil {
		t.Errorf("Fault after ClearFault = %v, %v; want nil", f, err)
	}
	mustSetFault(t, in.s, Hang{})
	if err := c.Reset(ctx); err != nil {
		t.Fatalf("Reset: %v", err)
	}
	if st := in.s.Stats(); st.Failed != 0 || st.Fault != nil {
		t.Errorf("stats after Reset %+v, want zeroed without fault", st)
	}
}

func TestClientErrors(t *testing.T) {
	in := start(t, Config{Service: Fixed(0)})
	ctx := t.Context()

	var apiErr *APIError
	c := &Client{BaseURL: in.ts.URL + "/nowhere", HTTP: in.client}
	if err := c.Reset(ctx); !errors.As(err, &apiErr) {
		t.Errorf("Reset on a wrong base URL: %v, want an *APIError", err)
	}

	canceled, cancel := context.WithCancel(ctx)
	cancel()
	c = &Client{BaseURL: in.ts.URL} // default HTTP client
	if err := c.Healthy(canceled); !errors.Is(err, context.Canceled) {
		t.Errorf("Healthy with a canceled context: %v, want context.Canceled", err)
	}
	if err := c.Healthy(ctx); err != nil {
		t.Errorf("Healthy with the default client: %v", err)
	}
	if err := c.SetFault(ctx, nil); err == nil {
		t.Errorf("SetFault(nil): want an error")
	}
}
