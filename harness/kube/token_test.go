package kube

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lbchaos/lbchaos/faultyserver"
)

// TestControlTokenInSecret: New keeps the run's control token in a Secret
// of the run's namespace; the server and sidecar containers read it from
// there (env valueFrom secretKeyRef), and the pods as the API server has
// them hold no token anywhere.
func TestControlTokenInSecret(t *testing.T) {
	p := newEnvProvider(t, NetworkPod)
	token := p.opts.Token
	if token == "" {
		t.Fatal("New left the token empty")
	}
	sec, err := typed(t, p).CoreV1().Secrets(p.ns).Get(t.Context(), ControlSecret, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the control Secret: %v", err)
	}
	if got := string(sec.Data[ControlSecretKey]); got != token || sec.Labels[LabelRun] != p.runID {
		t.Errorf("secret %s/%s: key %s holds %d bytes, labels %v; want the provider's token and run %s", p.ns, ControlSecret, ControlSecretKey, len(got), sec.Labels, p.runID)
	}

	fromSecret := func(c corev1.Container) bool {
		for _, e := range c.Env {
			if e.Name == faultyserver.TokenEnv {
				r := e.ValueFrom
				return e.Value == "" && r != nil && r.SecretKeyRef != nil && r.SecretKeyRef.Name == ControlSecret && r.SecretKeyRef.Key == ControlSecretKey
			}
		}
		return false
	}
	noToken := func(what string, pod *corev1.Pod) {
		t.Helper()
		b, err := json.Marshal(pod)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), token) {
			t.Errorf("%s: the pod holds the token: %s", what, b)
		}
	}

	server := createPod(t, p, testSpec(t, 1), &instance{id: 0, name: podName(1, 0), port: podPort})
	noToken("server pod", server)
	if c := server.Spec.Containers[0]; !fromSecret(c) {
		t.Errorf("server container env %+v: want %s from secret %s key %s", c.Env, faultyserver.TokenEnv, ControlSecret, ControlSecretKey)
	}

	spec := appSpec(t, 1, "example:1", ", port_env: PORT")
	in := &instance{id: 0, name: podName(2, 0)}
	if err := p.assignPorts(spec, in, nil); err != nil {
		t.Fatal(err)
	}
	app := createPod(t, p, spec, in)
	noToken("app pod", app)
	for _, c := range app.Spec.Containers {
		if got, want := fromSecret(c), c.Name == sidecarContainer; got != want {
			t.Errorf("container %s reads the token from the Secret: %v, want %v (the sidecar only)", c.Name, got, want)
		}
	}

	// A token given (lbchaos run --token) is the one kept.
	q, err := New(t.Context(), Options{Config: p.cfg, Image: "img:1", DeleteTimeout: -1, Token: "given-token-3"})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close(t.Context())
	sec, err = typed(t, q).CoreV1().Secrets(q.ns).Get(t.Context(), ControlSecret, metav1.GetOptions{})
	if err != nil || string(sec.Data[ControlSecretKey]) != "given-token-3" {
		t.Errorf("secret of a provider given a token: %v; want that token", err)
	}
}

// TestClusterBackendsNeedTheToken: on a real cluster the kubelet hands
// the Secret's token to the server, which refuses a control call without
// it and obeys the fleet's own clients.
func TestClusterBackendsNeedTheToken(t *testing.T) {
	p := newClusterProvider(t, Options{Network: NetworkHost})
	fl, err := p.Start(t.Context(), testSpec(t, 1))
	if err != nil {
		t.Fatal(err)
	}
	defer fl.Close()
	b := fl.Backends()[0]
	anon := &faultyserver.Client{BaseURL: b.URL.String()}
	var apiErr *faultyserver.APIError
	if err := anon.SetFault(t.Context(), faultyserver.Fail{Status: 502}); !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusUnauthorized {
		t.Errorf("set fault without the token: %v, want 401", err)
	}
	if err := b.Control.SetFault(t.Context(), faultyserver.Fail{Status: 502}); err != nil {
		t.Fatalf("set fault through the fleet's client: %v", err)
	}
	resp, err := http.Get(b.URL.String() + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 502 {
		t.Errorf("after the fleet's fault: status %d, want 502", resp.StatusCode)
	}
}
