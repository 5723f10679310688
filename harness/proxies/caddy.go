package proxies

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/lbchaos/lbchaos/harness/transport"
	"github.com/lbchaos/lbchaos/strategies/proxyspec"
)

// caddyConfig is Caddy's JSON configuration for cfg: no admin endpoint, no
// automatic HTTPS, one server on cfg.listen answering readyPath itself and
// proxying everything else with the spec's policy, retries and passive
// health checks, UpstreamHeader on every response (its own errors included), and
// reverse_proxy's debug log, one "upstream roundtrip" line per attempt with
// the request's headers and the upstream, written to upstreamLog: unlike
// the access log, it names the upstream of a request the client gave up
// on.
func caddyConfig(cfg proxyConfig, upstreamLog string) ([]byte, error) {
	ps := cfg.spec
	policy := map[string]any{"policy": ps.Algorithm}
	switch ps.Algorithm {
	case "random_choose":
		policy["choose"] = proxyspec.Int(ps.Params, "choose", 2)
	case "header":
		policy["field"] = "X-Lbchaos-Key"
	}
	lb := map[string]any{"selection_policy": policy}
	caddyRetries(lb, ps.Params)
	var upstreams []map[string]any
	for _, u := range cfg.backends {
		upstreams = append(upstreams, map[string]any{"dial": u.Host})
	}
	setUpstream := map[string]any{"set": map[string][]string{UpstreamHeader: {"{http.reverse_proxy.upstream.hostport}"}}}
	proxy := map[string]any{
		"handler":        "reverse_proxy",
		"upstreams":      upstreams,
		"load_balancing": lb,
		"transport": map[string]any{
			"protocol":      "http",
			"dial_timeout":  "5s",
			"keep_alive":    map[string]any{"max_idle_conns_per_host": 1024, "idle_timeout": "90s"},
			"read_timeout":  OwnTimeout(cfg.timeout).String(),
			"write_timeout": OwnTimeout(cfg.timeout).String(),
		},
		"headers": map[string]any{"response": setUpstream},
	}
	if passive := caddyPassive(ps.Params); passive != nil {
		proxy["health_checks"] = map[string]any{"passive": passive}
	}
	const server = "lbchaos"
	conf := map[string]any{
		"admin": map[string]any{"disabled": true, "config": map[string]any{"persist": false}},
		"logging": map[string]any{"logs": map[string]any{
			"default": map[string]any{"level": "ERROR", "exclude": []string{"http.handlers.reverse_proxy"}},
			"upstreams": map[string]any{
				"level":   "DEBUG",
				"writer":  map[string]any{"output": "file", "filename": upstreamLog, "roll": false},
				"encoder": map[string]any{"format": "json"},
				"include": []string{"http.handlers.reverse_proxy"},
			},
		}},
		"apps": map[string]any{"http": map[string]any{
			"grace_period": "5s",
			"servers": map[string]any{server: map[string]any{
				"listen":          []string{cfg.listen},
				"automatic_https": map[string]any{"disable": true},
				"routes": []any{
					map[string]any{
						"match":    []any{map[string]any{"path": []string{readyPath}}},
						"handle":   []any{map[string]any{"handler": "static_response", "status_code": 204}},
						"terminal": true,
					},
					map[string]any{"handle": []any{proxy}},
				},
				// Caddy's own errors (no upstream reachable) name the
				// upstream it tried.
				"errors": map[string]any{"routes": []any{map[string]any{"handle": []any{
					map[string]any{"handler": "headers", "response": setUpstream},
				}}}},
			}},
		}},
	}
	b, err := json.MarshalIndent(conf, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("caddy configuration: %w", err)
	}
	return b, nil
}

// caddyPassive is the passive health check configuration of a caddy spec's
// parameters, nil without fail_duration (proxyspec.Parse requires it for the
// others).
func caddyPassive(params map[string]string) map[string]any {
	fd, ok := params["fail_duration"]
	if !ok {
		return nil
	}
	p := map[string]any{"fail_duration": fd, "max_fails": proxyspec.Int(params, "max_fails", 1)}
	if v, ok := params["unhealthy_latency"]; ok {
		p["unhealthy_latency"] = v
	}
	if v, ok := params["unhealthy_status"]; ok {
		codes, _ := proxyspec.CaddyStatuses(v)
		p["unhealthy_status"] = codes
	}
	if v, ok := params["unhealthy_request_count"]; ok {
		n, _ := strconv.Atoi(v)
		p["unhealthy_request_count"] = n
	}
	return p
}

// caddyEnv keeps caddy's data and configuration directories (certificates,
// autosave) inside dir.
func caddyEnv(dir string) []string {
	return append(os.Environ(), "HOME="+dir, "XDG_DATA_HOME="+filepath.Join(dir, "data"), "XDG_CONFIG_HOME="+filepath.Join(dir, "config"))
}

// caddyRoundtrip is the part of a reverse_proxy "upstream roundtrip" log
// line that attribution reads.
type caddyRoundtrip struct {
	Msg      string `json:"msg"`
	Upstream string `json:"upstream"`
	Request  struct {
		Headers map[string][]string `json:"headers"`
	} `json:"request"`
}

// caddyAttribution reads caddy's upstream log: for each request sequence
// number the upstream of its last attempt.
func (p *proxyProcess) caddyAttribution() (map[uint64]int, error) {
	f, err := os.Open(p.log)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[uint64]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var rt caddyRoundtrip
		if json.Unmarshal(sc.Bytes(), &rt) != nil || rt.Msg != "upstream roundtrip" {
			continue
		}
		seqs := rt.Request.Headers[transport.SeqHeader]
		if len(seqs) == 0 {
			continue
		}
		seq, err := strconv.ParseUint(seqs[0], 10, 64)
		if err != nil {
			continue
		}
		if id, ok := p.instanceOf(rt.Upstream); ok {
			out[seq] = id
		}
	}
	return out, sc.Err()
}
