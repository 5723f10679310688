package proxies

import (
	"context"
	"flag"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lbchaos/lbchaos/harness/internal/runtest"
	"github.com/lbchaos/lbchaos/harness/proxies/lbproxy"
	"github.com/lbchaos/lbchaos/strategies/proxyspec"
)

func TestGeneratedConfigs(t *testing.T) {
	b0, _ := url.Parse("http://127.0.0.1:9001")
	b1, _ := url.Parse("http://127.0.0.1:9002")
	cfg := func(spec string) proxyConfig {
		ps, err := proxyspec.Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		return proxyConfig{spec: ps, listen: "127.0.0.1:8000", backends: []*url.URL{b0, b1}, timeout: 30 * time.Second, dir: "/d"}
	}
	for _, tt := range []struct {
		spec string
		want []string
	}{
		{"nginx:round_robin", []string{"server 127.0.0.1:9001 max_fails=1 fail_timeout=10s;", "proxy_next_upstream error timeout;", "keepalive 1024;", "proxy_read_timeout 35000ms;"}},
		{"nginx:least_conn(max_fails=3,fail_timeout=5s,next_upstream=error|http_503)", []string{"least_conn;", "server 127.0.0.1:9002 max_fails=3 fail_timeout=5s;", "proxy_next_upstream error http_503;"}},
		{"nginx:random_two", []string{"random two least_conn;"}},
		{"nginx:hash", []string{"hash $http_x_lbchaos_key consistent;"}},
		{"haproxy:roundrobin", []string{"balance roundrobin", "server i0 127.0.0.1:9001\n", "server i1 127.0.0.1:9002\n"}},
		{"haproxy:random(3)", []string{"balance random(3)"}},
		{"haproxy:leastconn+observe", []string{"server i0 127.0.0.1:9001 check inter 2s fall 3 rise 2 observe layer7 error-limit 10 on-error fail-check"}},
		{"haproxy:leastconn+check(inter=500ms,fall=2,rise=1)", []string{"server i1 127.0.0.1:9002 check inter 500ms fall 2 rise 1\n"}},
	} {
		t.Run(tt.spec, func(t *testing.T) {
			c := cfg(tt.spec)
			var text string
			if c.spec.Kind == proxyspec.Nginx {
				text = nginxConfig(c, "/d/access.log")
			} else {
				text = haproxyConfig(c)
			}
			for _, w := range tt.want {
				if !strings.Contains(text, w) {
					t.Errorf("config lacks %q:\n%s", w, text)
				}
			}
		})
	}
}

func TestProxyStartErrors(t *testing.T) {
	runtest.Need(t, Installed(proxyspec.Nginx, "unused"))
	runtest.Need(t, Installed(proxyspec.HAProxy, "unused"))
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer backend.Close()
	u, _ := url.Parse(backend.URL)
	backends := []*url.URL{u}
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()

	for _, tt := range []struct {
		name, spec, listen, want string
	}{
		{"nginx port taken", "nginx:round_robin", taken.Addr().String(), "Address already in use"},
		{"haproxy port taken", "haproxy:roundrobin", taken.Addr().String(), "cannot bind socket"},
		{"nginx rejects its configuration", "nginx:round_robin", "127.0.0.1:99999", "nginx rejected its generated configuration"},
		{"haproxy rejects its configuration", "haproxy:roundrobin", "127.0.0.1:99999", "haproxy rejected its generated configuration"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ps, err := proxyspec.Parse(tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			_, err = startProxy(context.Background(), proxyConfig{spec: ps, listen: tt.listen, backends: backends, timeout: time.Second, dir: t.TempDir()})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
			if left := runtest.ProxyLeftovers(t); len(left) > 0 {
				t.Errorf("processes left behind: %q", left)
			}
		})
	}

	// A file the proxy's own check rejects: its message is quoted, with
	// the file and where its lines are in the generated configuration.
	for _, tt := range []struct {
		name, spec, text string
		want             []string
	}{
		{"nginx rejects a file", "nginx:file(path=u.conf)", "least_conn;\nleast_connections;\n{{servers}}\n",
			[]string{"nginx rejected the configuration generated from ", "u.conf (its lines start at line 16 of the generated file)", `unknown directive "least_connections"`}},
		{"haproxy rejects a file", "haproxy:file(path=b.cfg)", "balance leastconnections\n{{servers}}\n",
			[]string{"haproxy rejected the configuration generated from ", "b.cfg (its lines start at line 30 of the generated file)", ".cfg:30] : balance only supports"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ps, err := proxyspec.Parse(tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), ps.Params["path"])
			if err := os.WriteFile(path, []byte(tt.text), 0o644); err != nil {
				t.Fatal(err)
			}
			tmpl, err := readTemplate(ps.Kind, path)
			if err != nil {
				t.Fatal(err)
			}
			listen, err := freeLoopbackAddr()
			if err != nil {
				t.Fatal(err)
			}
			_, err = startProxy(context.Background(), proxyConfig{spec: ps, listen: listen, backends: backends, timeout: time.Second, dir: t.TempDir(), file: tmpl})
			// Check, which runs before any backend starts, says the same.
			cerr := Check(tt.spec, path, "")
			for _, w := range tt.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("error %v, want one containing %q", err, w)
				}
				if cerr == nil || !strings.Contains(cerr.Error(), w) {
					t.Errorf("Check: error %v, want one containing %q", cerr, w)
				}
			}
			if dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "lbchaos-*-check-*")); len(dirs) > 0 {
				t.Errorf("Check left directories behind: %v", dirs)
			}
			if left := runtest.ProxyLeftovers(t); len(left) > 0 {
				t.Errorf("processes left behind: %q", left)
			}
		})
	}

	t.Run("not installed", func(t *testing.T) {
		t.Setenv("PATH", t.TempDir())
		old := sbinDir
		sbinDir = t.TempDir()
		defer func() { sbinDir = old }()
		err := Check("nginx:least_conn", "", "")
		if err == nil || !strings.Contains(err.Error(), "nginx is not installed: run `make deps`") {
			t.Errorf("error %v, want one saying how to install nginx", err)
		}
	})
}

// TestLbchaosProxyCommandLine: lbchaos: strategies run `lbchaos proxy` with
// the experiment's seed, a timeout beyond the client's, one thread for Go
// code, and every backend in instance order, as the command parses it.
func TestLbchaosProxyCommandLine(t *testing.T) {
	b0, _ := url.Parse("http://127.0.0.1:9001")
	b1, _ := url.Parse("http://127.0.0.1:9002")
	ps, err := proxyspec.Parse("lbchaos:p2c+eject")
	if err != nil {
		t.Fatal(err)
	}
	args := lbchaosArgs(proxyConfig{spec: ps, listen: "127.0.0.1:8000", backends: []*url.URL{b0, b1}, timeout: time.Second, seed: 42}, "/d/access.log")
	if args[0] != "proxy" {
		t.Fatalf("args %q do not start with the proxy command", args)
	}
	got := lbproxy.DefaultFlags
	fs := flag.NewFlagSet("proxy", flag.ContinueOnError)
	got.Bind(fs)
	if err := fs.Parse(args[1:]); err != nil {
		t.Fatal(err)
	}
	want := lbproxy.Flags{Listen: "127.0.0.1:8000", Strategy: "p2c+eject", Backends: []string{b0.String(), b1.String()},
		Timeout: OwnTimeout(time.Second), AccessLog: "/d/access.log", Seed: 42, Procs: 1}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("parsed %+v\nwant   %+v", got, want)
	}
}

func TestFileTemplates(t *testing.T) {
	for _, tt := range []struct {
		name, kind, text string
		want             fileTemplate // path is "f"
		err              string
	}{
		{name: "nginx", kind: "nginx", text: "least_conn;\n{{servers}}\n",
			want: fileTemplate{path: "f", before: "least_conn;\n"}},
		{name: "nginx options and keepalive", kind: "nginx", text: "  # ours\n  least_conn;\n  {{servers}} max_fails=3 fail_timeout=10s;  # each\n  keepalive 32;",
			want: fileTemplate{path: "f", before: "  # ours\n  least_conn;\n", options: "max_fails=3 fail_timeout=10s", after: "  keepalive 32;\n", keepalive: true}},
		{name: "haproxy", kind: "haproxy", text: "balance leastconn\noption httpchk GET /healthz\ndefault-server inter 1s\n{{servers}} check\n",
			want: fileTemplate{path: "f", before: "balance leastconn\noption httpchk GET /healthz\ndefault-server inter 1s\n", options: "check"}},
		{name: "no placeholder", kind: "nginx", text: "least_conn;\n", err: "nginx:file: f has no {{servers}} line: put {{servers}} on a line of its own"},
		{name: "placeholder only in a comment", kind: "haproxy", text: "balance leastconn # {{servers}}\n", err: "haproxy:file: f has no {{servers}} line"},
		{name: "placeholder twice", kind: "nginx", text: "{{servers}}\nleast_conn;\n{{servers}}\n", err: "nginx:file: f:3: {{servers}} again (first on line 1); it must appear once"},
		{name: "placeholder mid-line", kind: "haproxy", text: "balance leastconn\n  x {{servers}}\n", err: "haproxy:file: f:2: {{servers}} must start its line"},
		{name: "nginx server of its own", kind: "nginx", text: "least_conn;\nserver 10.0.0.1:80;\n{{servers}}\n", err: "nginx:file: f:2: a server line of its own: lbchaos writes the servers at {{servers}}"},
		{name: "nginx server after a directive on the line", kind: "nginx", text: "{{servers}}\nleast_conn; server 10.0.0.1:80;\n", err: "f:2: a server line of its own"},
		{name: "nginx brace", kind: "nginx", text: "{{servers}}\n}\nserver { listen 80; }\n", err: `nginx:file: f:2: "}": the file is the body of one upstream block`},
		{name: "nginx directives after the options", kind: "nginx", text: "{{servers}} max_fails=3; least_conn;\n", err: "f:1: the server options after {{servers}} end at the line's end"},
		{name: "haproxy server of its own", kind: "haproxy", text: "{{servers}}\nserver extra 10.0.0.1:80\n", err: "haproxy:file: f:2: a server line of its own"},
		{name: "haproxy server-template", kind: "haproxy", text: "{{servers}}\nserver-template web 3 _web._tcp.local\n", err: "f:2: a server-template line of its own"},
		{name: "haproxy new section", kind: "haproxy", text: "{{servers}}\nfrontend other\n", err: `haproxy:file: f:2: "frontend" starts a new section`},
		{name: "attribution header", kind: "haproxy", text: "{{servers}}\nhttp-response del-header X-Lbchaos-Upstream\n", err: "f:2: mentions X-Lbchaos-Upstream, the header lbchaos attributes responses by"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseTemplate(tt.kind, "f", tt.text)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if *got != tt.want {
				t.Errorf("got  %+v\nwant %+v", *got, tt.want)
			}
		})
	}
	t.Run("missing file", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "upstream.conf")
		_, err := readTemplate("nginx", p)
		if want := "nginx:file: cannot read " + p + ": no such file or directory"; err == nil || err.Error() != want {
			t.Errorf("error %v, want %q", err, want)
		}
	})
}

// TestGeneratedFileConfigs: a file spec's configuration holds the file's
// section verbatim, the servers at its placeholder with its options, and
// everything of lbchaos's own around it.
func TestGeneratedFileConfigs(t *testing.T) {
	b0, _ := url.Parse("http://127.0.0.1:9001")
	b1, _ := url.Parse("http://127.0.0.1:9002")
	attribution := map[string][]string{
		"nginx":   {"listen 127.0.0.1:8000;", "log_format lbchaos '$http_x_vegeta_seq $upstream_addr $status | $upstream_status';", "add_header X-Lbchaos-Upstream $upstream_addr always;", "location = /_lbchaos/ready", "proxy_read_timeout 35000ms;"},
		"haproxy": {"bind 127.0.0.1:8000", "capture request header X-Vegeta-Seq len 20", "http-after-response set-header X-Lbchaos-Upstream %s", "http-request return status 204 if { path /_lbchaos/ready }", "timeout server 35000ms"},
	}
	for _, tt := range []struct {
		name, spec, text string
		want, not        []string
	}{
		{"nginx least_conn", "nginx:file(path=u.conf)", "least_conn;\n{{servers}}\n",
			[]string{"least_conn;\n        server 127.0.0.1:9001;\n        server 127.0.0.1:9002;\n        keepalive 1024;\n    }"}, nil},
		{"nginx options and own keepalive", "nginx:file(path=u.conf)", "    hash $http_x_lbchaos_key consistent;\n    {{servers}} max_fails=3 fail_timeout=5s;\n    keepalive 32;\n",
			[]string{"    hash $http_x_lbchaos_key consistent;\n        server 127.0.0.1:9001 max_fails=3 fail_timeout=5s;\n        server 127.0.0.1:9002 max_fails=3 fail_timeout=5s;\n    keepalive 32;\n    }"},
			[]string{"keepalive 1024;"}},
		{"haproxy leastconn", "haproxy:file(path=b.cfg)", "balance leastconn\noption httpchk GET /healthz\n{{servers}} check inter 1s\n",
			[]string{"backend lbchaos_backends\n# lbchaos: from /d/f ({{servers}} replaced by the servers)\nbalance leastconn\noption httpchk GET /healthz\n    server i0 127.0.0.1:9001 check inter 1s\n    server i1 127.0.0.1:9002 check inter 1s\n"},
			[]string{"balance roundrobin"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ps, err := proxyspec.Parse(tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			tmpl, err := parseTemplate(ps.Kind, "/d/f", tt.text)
			if err != nil {
				t.Fatal(err)
			}
			c := proxyConfig{spec: ps, listen: "127.0.0.1:8000", backends: []*url.URL{b0, b1}, timeout: 30 * time.Second, dir: "/d", file: tmpl}
			var text string
			if ps.Kind == proxyspec.Nginx {
				text = nginxConfig(c, "/d/access.log")
			} else {
				text = haproxyConfig(c)
			}
			for _, w := range append(tt.want, attribution[ps.Kind]...) {
				if !strings.Contains(text, w) {
					t.Errorf("config lacks %q:\n%s", w, text)
				}
			}
			for _, w := range tt.not {
				if strings.Contains(text, w) {
					t.Errorf("config has %q:\n%s", w, text)
				}
			}
		})
	}
}
