package faultyserver

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func (in *instance) call(t *testing.T, method, path, body string) result {
	t.Helper()
	r := do(t.Context(), in.client, method, in.ts.URL+path, strings.NewReader(body))
	if r.err != nil {
		t.Fatalf("%s %s: %v", method, path, r.err)
	}
	if r.header.Get(InstanceHeader) != "4" {
		t.Errorf("%s %s: answer lacks %s", method, path, InstanceHeader)
	}
	return r
}

func TestControlAPI(t *testing.T) {
	in := start(t, Config{ID: 4, Workers: 1, Service: Fixed(0)})

	if r := in.call(t, "GET", FaultPath, ""); r.status != 200 || r.body != "null\n" {
		t.Errorf("GET fault with none: %d %q, want 200 null", r.status, r.body)
	}
	const fault = `{"mode":"error-rate","p":0.5,"status":500,"delay":"0s"}`
	if r := in.call(t, "PUT", FaultPath, `{"mode":"error-rate","p":0.5,"status":500,"delay":"0s"}`); r.status != 200 || strings.TrimSpace(r.body) != fault {
		t.Errorf("PUT fault: %d %q, want 200 %s", r.status, r.body, fault)
	}
	if r := in.call(t, "GET", FaultPath, ""); r.status != 200 || strings.TrimSpace(r.body) != fault {
		t.Errorf("GET fault: %d %q, want 200 %s", r.status, r.body, fault)
	}
	if diff := cmp.Diff(Fault(ErrorRate{P: 0.5, Status: 500}), in.s.Fault()); diff != "" {
		t.Errorf("Server.Fault() mismatch (-want +got):\n%s", diff)
	}

	for range 10 {
		in.get(t.Context(), "/")
	}
	r := in.call(t, "GET", StatsPath, "")
	if r.status != 200 || r.header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET stats: %d %s", r.status, r.header.Get("Content-Type"))
	}
	var st Stats
	if err := json.Unmarshal([]byte(r.body), &st); err != nil {
		t.Fatalf("stats body %q: %v", r.body, err)
	}
	if st.ID != 4 || st.Served+st.Failed != 10 || st.Failed == 0 || string(st.Fault) != fault {
		t.Errorf("stats %+v, want id 4, 10 answers some failed, fault %s", st, fault)
	}

	if r := in.call(t, "DELETE", FaultPath, ""); r.status != http.StatusNoContent {
		t.Errorf("DELETE fault: %d, want 204", r.status)
	}
	if in.s.Fault() != nil {
		t.Errorf("fault still set after DELETE: %v", in.s.Fault())
	}

	mustSetFault(t, in.s, Hang{})
	if r := in.call(t, "POST", ResetPath, ""); r.status != http.StatusNoContent {
		t.Errorf("POST reset: %d, want 204", r.status)
	}
	want := Stats{ID: 4, Fault: nil}
	got := in.s.Stats()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("stats after reset mismatch (-want +got):\n%s", diff)
	}
	var raw map[string]any
	if err := json.Unmarshal([]byte(in.call(t, "GET", StatsPath, "").body), &raw); err != nil || raw["fault"] != nil {
		t.Errorf("stats JSON after reset: %v %v, want fault null", raw, err)
	}
	if _, ok := raw["in_flight"]; !ok {
		t.Errorf("stats JSON lacks in_flight: %v", raw)
	}
}

func TestControlMethodsAndPaths(t *testing.T) {
	tests := []struct {
		method, path string
		status       int
		allow        string
	}{
		{"POST", FaultPath, 405, "GET, PUT, DELETE"},
		{"PATCH", FaultPath, 405, "GET, PUT, DELETE"},
		{"PUT", StatsPath, 405, "GET"},
		{"DELETE", StatsPath, 405, "GET"},
		{"GET", ResetPath, 405, "POST"},
		{"POST", HealthPath, 405, "GET, HEAD"},
		{"GET", ControlPrefix, 404, ""},
		{"GET", ControlPrefix + "faults", 404, ""},
		{"GET", ControlPrefix + "fault/x", 404, ""},
		{"HEAD", HealthPath, 200, ""},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			in := start(t, Config{ID: 4, Service: Fixed(0)})
			r := in.call(t, tt.method, tt.path, "")
			if r.status != tt.status {
				t.Fatalf("status %d, want %d (body %q)", r.status, tt.status, r.body)
			}
			if got := r.header.Get("Allow"); got != tt.allow {
				t.Errorf("Allow %q, want %q", got, tt.allow)
			}
			if tt.status >= 400 && tt.path != HealthPath {
				var eb struct{ Error string }
				if err := json.Unmarshal([]byte(r.body), &eb); err != nil || eb.Error == "" {
					t.Errorf("error body %q is not {\"error\": ...}", r.body)
				}
			}
			if st := in.s.Stats(); st.Served+st.Failed+st.Dropped != 0 {
				t.Errorf("control request was counted: %+v", st)
			}
		})
	}
}

func TestControlRejectsBadFault(t *testing.T) {
	in := start(t, Config{ID: 4, Service: Fixed(0)})
	initial := Slow{Factor: 2}
	mustSetFault(t, in.s, initial)
	before := in.call(t, "GET", FaultPath, "").body

	for _, tt := range badFaults {
		t.Run(tt.name, func(t *testing.T) {
			r := in.call(t, "PUT", FaultPath, tt.body)
			if r.status != http.StatusBadRequest {
				t.Fatalf("PUT %s: %d, want 400", tt.body, r.status)
			}
			var eb struct {
				Error string `json:"error"`
			}
			if err := json.Unmarshal([]byte(r.body), &eb); err != nil {
				t.Fatalf("error body %q: %v", r.body, err)
			}
			if !strings.Contains(eb.Error, tt.want) {
				t.Errorf("error %q, want it to contain %q", eb.Error, tt.want)
			}
			if after := in.call(t, "GET", FaultPath, "").body; after != before {
				t.Errorf("fault changed by a rejected PUT: %s, was %s", after, before)
			}
		})
	}

	t.Run("body too large", func(t *testing.T) {
		big := `{"mode":"hang","pad":"` + strings.Repeat("x", MaxControlBody) + `"}`
		r := in.call(t, "PUT", FaultPath, big)
		if r.status != http.StatusRequestEntityTooLarge || !strings.Contains(r.body, "body: larger than") {
			t.Errorf("oversized PUT: %d %q, want 413 naming the body", r.status, r.body)
		}
	})
	if diff := cmp.Diff(Fault(initial), in.s.Fault()); diff != "" {
		t.Errorf("fault after rejected PUTs (-want +got):\n%s", diff)
	}
}

func TestSetFaultValidates(t *testing.T) {
	s, err := New(Config{Service: Fixed(0)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	mustSetFault(t, s, Hang{})
	if err := s.SetFault(Fail{Status: 200}); err == nil || !strings.Contains(err.Error(), "status:") {
		t.Errorf("SetFault(status 200): %v, want an error naming status", err)
	}
	if err := s.SetFault(nil); err == nil {
		t.Errorf("SetFault(nil): want an error")
	}
	if _, ok := s.Fault().(Hang); !ok {
		t.Errorf("fault after rejected SetFault = %v, want hang", s.Fault())
	}
}
