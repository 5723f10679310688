package live

import (
	"context"
	"strings"
	"testing"

	"github.com/lbchaos/lbchaos/harness/internal/runtest"
	"github.com/lbchaos/lbchaos/harness/proxies"
	"github.com/lbchaos/lbchaos/reports"
	"github.com/lbchaos/lbchaos/strategies/proxyspec"
)

// The proxy retry tests run a real proxy in front of four real instances,
// one of them failing at once, for a couple of seconds: without retries a
// quarter of the requests fail; with the proxy's retries they do not, the
// faulty instance still receives about a quarter of the first attempts,
// and each retry of a request it had read is a duplicate execution. The
// attempts come from what the instances counted themselves.

const proxyRetryBase = `
seed: 3
duration: 2s
rate: 300
timeout: 5s
instances: {count: 4, workers: 4, service: {dist: fixed, value: 2ms}}
`

// runProxyRetries runs exp and returns its summary.
func runProxyRetries(t *testing.T, kind, name, body string) *reports.Summary {
	t.Helper()
	if testing.Short() {
		t.Skip("real load through a real proxy")
	}
	runtest.Need(t, proxies.Installed(kind, "unused"))
	sum, err := run(context.Background(), runtest.MustExperiment(t, name, proxyRetryBase+body), Options{})
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

// checkExecuted checks what every strategy of sum must show: the
// accounting, attempts and duplicate_executions for every instance, and
// no disagreement between a proxy's log and the instances.
func checkExecuted(t *testing.T, sum *reports.Summary) {
	t.Helper()
	for _, st := range sum.Strategies {
		runtest.CheckAccounting(t, st)
		if st.DuplicateExecutions == nil {
			t.Fatalf("%s: no duplicate_executions; the instances count them", st.Name)
		}
		for _, in := range st.Instances {
			if in.Attempts == nil {
				t.Fatalf("%s: instance %d has no attempts", st.Name, in.ID)
			}
		}
	}
	for _, n := range sum.Notes {
		if strings.Contains(n, "count different attempts") || strings.Contains(n, "could not be read") {
			t.Errorf("note: %s", n)
		}
	}
}

// attemptsOf sums st's attempts at its instances.
func attemptsOf(st reports.Strategy) int64 {
	var n int64
	for _, in := range st.Instances {
		n += *in.Attempts
	}
	return n
}

// checkRetried checks a strategy whose proxy retried the requests the
// faulty instance 0 failed: hardly any errors, about a quarter of the
// attempts on instance 0 (a round robin that counts the retries' picks
// too gives it a third of the requests), and about as many duplicates as attempts
// there (each of those requests was read by instance 0 and then by
// another; a retry that lands on instance 0 again, as a round robin shared
// by concurrent requests may make it, is an attempt there more for the
// same duplicate).
func checkRetried(t *testing.T, st reports.Strategy) {
	t.Helper()
	bad := st.Instances[0]
	if st.ErrorRatio > 0.02 {
		t.Errorf("%s: error ratio %.3f; want about none, every failure retried", st.Name, st.ErrorRatio)
	}
	all := attemptsOf(st)
	if share := float64(*bad.Attempts) / float64(all); share < 0.15 || share > 0.35 {
		t.Errorf("%s: %d of %d attempts on the faulty instance (%.2f); want about a quarter", st.Name, *bad.Attempts, all, share)
	}
	if d := *bad.Attempts - *st.DuplicateExecutions; d < 0 || d > st.Requests*3/100 {
		t.Errorf("%s: %d duplicate executions, %d attempts on the faulty instance; want about as many", st.Name, *st.DuplicateExecutions, *bad.Attempts)
	}
	// Every attempt beyond a request's first is an execution more of a
	// duplicated request: at least one per duplicate, rarely two.
	if least := st.Requests + *st.DuplicateExecutions; all < least || all > least+st.Requests*3/100 {
		t.Errorf("%s: %d attempts in all; want the requests plus the duplicates, %d, or a few more", st.Name, all, least)
	}
	t.Logf("%s: error ratio %.4f, faulty instance %d attempts of %d requests, %d duplicate executions",
		st.Name, st.ErrorRatio, *bad.Attempts, st.Requests, *st.DuplicateExecutions)
}

// checkPerRequest checks the attempts per request of a proxy whose
// instances counted them: all the attempts over the requests.
func checkPerRequest(t *testing.T, st reports.Strategy) {
	t.Helper()
	want := float64(attemptsOf(st)) / float64(st.Requests)
	if a := st.AttemptsPerRequest; a == nil || a.Mean < want-0.001 || a.Mean > want+0.001 || a.Max < 2 {
		t.Errorf("%s: attempts per request %+v; want a mean of %.3f, some requests tried twice", st.Name, a, want)
	}
}

// checkNotRetried checks a strategy whose failures were not retried: about
// a quarter of the requests failed, each executed once.
func checkNotRetried(t *testing.T, st reports.Strategy) {
	t.Helper()
	if st.ErrorRatio < 0.15 || st.ErrorRatio > 0.35 {
		t.Errorf("%s: error ratio %.3f; want about a quarter, nothing retried", st.Name, st.ErrorRatio)
	}
	if *st.DuplicateExecutions != 0 {
		t.Errorf("%s: %d duplicate executions; want none without retries", st.Name, *st.DuplicateExecutions)
	}
	for _, in := range st.Instances {
		if *in.Attempts != in.Requests {
			t.Errorf("%s: instance %d: %d attempts, %d requests; want equal without retries", st.Name, in.ID, *in.Attempts, in.Requests)
		}
	}
	t.Logf("%s: error ratio %.4f, %d duplicate executions", st.Name, st.ErrorRatio, *st.DuplicateExecutions)
}

// HAProxy retries a 503 (retry-on 503), on another server with
// redispatch; with no retry-on it retries only connections that failed.
func TestHAProxyRetriesOn503(t *testing.T) {
	const retrying = "haproxy:roundrobin(retries=1,retry_on=503,redispatch=true)"
	sum := runProxyRetries(t, proxyspec.HAProxy, "haproxy-retries", `
faults:
  - {instance: 0, at: 0s, fault: {mode: fail, status: 503, delay: 1ms}}
strategies:
  - haproxy:roundrobin
  - "`+retrying+`"
`)
	checkExecuted(t, sum)
	checkNotRetried(t, runtest.StrategyByName(t, sum, "haproxy:roundrobin"))
	checkRetried(t, runtest.StrategyByName(t, sum, retrying))
	checkPerRequest(t, runtest.StrategyByName(t, sum, retrying))
}

// nginx passes a 503 on to the next server with http_503 in
// proxy_next_upstream, but a POST, which is not idempotent, only with
// non_idempotent too. Its attempts are its log's, which must agree with
// what the instances counted (checkExecuted).
func TestNginxRetriesPOSTOnlyWhenNonIdempotent(t *testing.T) {
	const (
		idempotentOnly = "nginx:round_robin(max_fails=0,next_upstream=error|timeout|http_503,tries=2)"
		anyMethod      = "nginx:round_robin(max_fails=0,next_upstream=error|timeout|http_503|non_idempotent,tries=2,next_upstream_timeout=2s)"
	)
	sum := runProxyRetries(t, proxyspec.Nginx, "nginx-post-retries", `
requests:
  list:
    - {method: POST, path: /orders, body: '{"item": 1}'}
faults:
  - {instance: 0, at: 0s, fault: {mode: fail, status: 503, delay: 1ms}}
strategies:
  - "`+idempotentOnly+`"
  - "`+anyMethod+`"
`)
	checkExecuted(t, sum)
	checkNotRetried(t, runtest.StrategyByName(t, sum, idempotentOnly))
	checkRetried(t, runtest.StrategyByName(t, sum, anyMethod))
	checkPerRequest(t, runtest.StrategyByName(t, sum, anyMethod))
}

// Caddy 2.6 retries a round trip that failed, never an answer: an
// instance that resets its requests is retried on the next upstream
// (a GET: the connection was made, and Caddy retries only a GET then),
// one that answers 503 is not, whatever lb_retries says.
func TestCaddyRetriesResetsNot503(t *testing.T) {
	const retrying = "caddy:round_robin(lb_retries=2)"
	reset := runProxyRetries(t, proxyspec.Caddy, "caddy-retries-reset", `
faults:
  - {instance: 0, at: 0s, fault: {mode: reset}}
strategies:
  - "`+retrying+`"
`)
	checkExecuted(t, reset)
	checkRetried(t, runtest.StrategyByName(t, reset, retrying))
	checkPerRequest(t, runtest.StrategyByName(t, reset, retrying))

	fail := runProxyRetries(t, proxyspec.Caddy, "caddy-retries-503", `
faults:
  - {instance: 0, at: 0s, fault: {mode: fail, status: 503, delay: 1ms}}
strategies:
  - "`+retrying+`"
`)
	checkExecuted(t, fail)
	checkNotRetried(t, runtest.StrategyByName(t, fail, retrying))
}
