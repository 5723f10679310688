package live

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/lbchaos/lbchaos/harness/internal/runtest"
	"github.com/lbchaos/lbchaos/harness/proxies"
	"github.com/lbchaos/lbchaos/reports"
	"github.com/lbchaos/lbchaos/strategies/proxyspec"
)

// A real nginx in front of four real instances, one failing fast with
// 503. With http_503 in proxy_next_upstream (and max_fails=0, so nginx
// never stops trying it) every request that meets the faulty instance is
// retried on another: the faulty instance answers nothing, yet a quarter
// of the attempts go to it. The attempts, counted from $upstream_addr,
// must show that; requests keeps counting the instance that answered.
func TestNginxRetriesCountAsAttempts(t *testing.T) {
	if testing.Short() {
		t.Skip("real load through a real nginx")
	}
	runtest.Need(t, proxies.Installed(proxyspec.Nginx, "unused"))
	const retrying = "nginx:round_robin(max_fails=0,next_upstream=error|timeout|http_503)"
	exp := runtest.MustExperiment(t, "nginx-retries", `
seed: 3
duration: 2s
rate: 300
timeout: 5s
instances: {count: 4, workers: 4, service: {dist: fixed, value: 2ms}}
faults:
  - {instance: 0, at: 0s, fault: {mode: fail, status: 503, delay: 1ms}}
strategies:
  - nginx:round_robin
  - "`+retrying+`"
`)
	sum, err := run(context.Background(), exp, Options{})
	if err != nil {
		t.Fatal(err)
	}
	plain, retried := runtest.StrategyByName(t, sum, "nginx:round_robin"), runtest.StrategyByName(t, sum, retrying)
	for _, st := range []reports.Strategy{plain, retried} {
		runtest.CheckAccounting(t, st)
		if st.EjectionsSeen() {
			t.Errorf("%s: ejections observed; a proxy's are not", st.Name)
		}
		for _, in := range st.Instances {
			if in.Attempts == nil {
				t.Fatalf("%s: instance %d has no attempts; nginx logs every upstream tried", st.Name, in.ID)
			}
		}
	}
	// Without retries every attempt is an answer.
	for _, in := range plain.Instances {
		if *in.Attempts != in.Requests {
			t.Errorf("nginx:round_robin: instance %d: %d attempts, %d requests; want equal without retries", in.ID, *in.Attempts, in.Requests)
		}
	}
	bad := retried.Instances[0]
	if bad.Requests > retried.Requests/100 || retried.ErrorRatio > 0.01 {
		t.Errorf("retrying nginx: faulty instance answered %d of %d requests, error ratio %.3f; want about none", bad.Requests, retried.Requests, retried.ErrorRatio)
	}
	if share := float64(*bad.Attempts) / float64(retried.Requests); share < 0.15 || share > 0.35 {
		t.Errorf("retrying nginx: %d attempts on the faulty instance for %d requests (%.2f); want about a quarter under round robin",
			*bad.Attempts, retried.Requests, share)
	}
	t.Logf("%s: faulty instance: %d attempts, %d answers of %d requests; faulty share %.4f",
		retried.Name, *bad.Attempts, bad.Requests, retried.Requests, retried.FaultyShare)

	// The report shows the attempts beside the answers and n/a for the
	// ejections.
	var md bytes.Buffer
	if err := reports.WriteMarkdown(&md, sum, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "| requests | attempts |") || !strings.Contains(md.String(), "| n/a |") {
		t.Errorf("report.md lacks the attempts column or n/a ejections:\n%s", md.String())
	}
}
