package proxies

import (
	"bufio"
	"os"
	"strconv"
	"strings"

	"github.com/lbchaos/lbchaos/strategies/proxyspec"
)

// logLine is one line of a request-level access log:
//
//	seq upstreams status [| upstream-statuses]
//
// where upstreams lists every upstream tried, in order: one for HAProxy
// and lbchaos, and for nginx its $upstream_addr ("a, b" after a retry by
// proxy_next_upstream, " : " between upstream groups). What follows "|"
// (nginx's $upstream_status) is not read.
type logLine struct {
	seq       uint64
	upstreams []string // "-" and group separators left out
}

func parseLogLine(text string) (logLine, bool) {
	text, _, _ = strings.Cut(text, " | ")
	fields := strings.Fields(text)
	if len(fields) < 2 {
		return logLine{}, false
	}
	seq, err := strconv.ParseUint(fields[0], 10, 64)
	if err != nil {
		return logLine{}, false
	}
	l := logLine{seq: seq}
	mid := fields[1:]
	if len(mid) > 1 { // the last field is the status
		mid = mid[:len(mid)-1]
	}
	for _, f := range mid {
		f = strings.TrimSuffix(f, ",")
		if f == "" || f == ":" || f == "-" {
			continue
		}
		l.upstreams = append(l.upstreams, f)
	}
	return l, true
}

// readLog calls fn for each request line of the access log.
func (p *proxyProcess) readLog(fn func(logLine)) error {
	f, err := os.Open(p.log)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l, ok := parseLogLine(sc.Text()); ok {
			fn(l)
		}
	}
	return sc.Err()
}

// AttemptsLogged reports whether Attempts counts every attempt: true for
// nginx, whose $upstream_addr lists the upstreams each request tried
// (proxy_next_upstream retries included). HAProxy's log names only the
// last server, Caddy's only the upstream that answered.
func (x *Proxy) AttemptsLogged() bool {
	return x.p.cfg.spec.Kind == proxyspec.Nginx && !x.p.cfg.spec.ConnLevel()
}

// Attempts reads the access log of a stopped proxy (see AttemptsLogged):
// for each instance, how many times a request of the attack was sent to
// it, each retry counted where it went. Requests without a sequence number
// (the readiness check) are not counted.
func (x *Proxy) Attempts() (map[int]int64, error) {
	out := map[int]int64{}
	err := x.p.readLog(func(l logLine) {
		for _, u := range l.upstreams {
			if id, ok := x.p.ids[u]; ok {
				out[id]++
			}
		}
	})
	return out, err
}
