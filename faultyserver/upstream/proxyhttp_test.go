package upstream

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"testing"
)

// inbound is a request as a server hands it to a handler: from
// 127.0.0.1:5555 for http://front.example/a/b?x=1.
func inbound(method string, body io.Reader) *http.Request {
	r := httptest.NewRequest(method, "http://front.example/a/b?x=1", body)
	r.RemoteAddr = "127.0.0.1:5555"
	return r
}

var proxyTarget = &url.URL{Scheme: "http", Host: "10.0.0.1:9000"}

// ProxyRequest forwards the end-to-end headers only and sets the
// X-Forwarded ones.
func TestProxyRequestHeaders(t *testing.T) {
	tests := []struct {
		name  string
		setup func(r *http.Request)
		key   string
		want  []string // nil: absent
	}{
		{"connection dropped", func(r *http.Request) { r.Header.Set("Connection", "keep-alive") }, "Connection", nil},
		{"keep-alive dropped", func(r *http.Request) { r.Header.Set("Keep-Alive", "timeout=5") }, "Keep-Alive", nil},
		{"proxy-connection dropped", func(r *http.Request) { r.Header.Set("Proxy-Connection", "keep-alive") }, "Proxy-Connection", nil},
		{"te other than trailers dropped", func(r *http.Request) { r.Header.Set("Te", "gzip") }, "Te", nil},
		{"te trailers kept", func(r *http.Request) { r.Header.Set("Te", "trailers") }, "Te", []string{"trailers"}},
		{"te trailers among others kept alone", func(r *http.Request) { r.Header.Set("Te", "gzip, Trailers") }, "Te", []string{"trailers"}},
		{"te trailers on a later line", func(r *http.Request) { r.Header["Te"] = []string{"gzip", "trailers"} }, "Te", []string{"trailers"}},
		{"trailer dropped", func(r *http.Request) { r.Header.Set("Trailer", "X-Sum") }, "Trailer", nil},
		{"transfer-encoding dropped", func(r *http.Request) { r.Header.Set("Transfer-Encoding", "chunked") }, "Transfer-Encoding", nil},
		{"upgrade dropped", func(r *http.Request) { r.Header.Set("Upgrade", "websocket") }, "Upgrade", nil},
		{"proxy-authorization dropped", func(r *http.Request) { r.Header.Set("Proxy-Authorization", "Basic eDp5") }, "Proxy-Authorization", nil},
		{"proxy-authenticate dropped", func(r *http.Request) { r.Header.Set("Proxy-Authenticate", "Basic") }, "Proxy-Authenticate", nil},
		{"named by connection dropped", func(r *http.Request) {
			r.Header.Set("Connection", "x-hop, Keep-Alive")
			r.Header.Set("X-Hop", "1")
		}, "X-Hop", nil},
		{"named on a second connection line dropped", func(r *http.Request) {
			r.Header["Connection"] = []string{"close", " X-Other , x-hop"}
			r.Header.Set("X-Hop", "1")
		}, "X-Hop", nil},
		{"end-to-end kept", func(r *http.Request) { r.Header["Accept"] = []string{"text/plain", "application/json"} }, "Accept", []string{"text/plain", "application/json"}},
		{"authorization kept", func(r *http.Request) { r.Header.Set("Authorization", "Bearer t") }, "Authorization", []string{"Bearer t"}},
		{"cookie kept beside a connection list", func(r *http.Request) {
			r.Header.Set("Connection", "X-Hop")
			r.Header.Set("Cookie", "a=1")
		}, "Cookie", []string{"a=1"}},
		{"x-forwarded-for is the client", func(r *http.Request) {}, "X-Forwarded-For", []string{"127.0.0.1"}},
		{"x-forwarded-for appended", func(r *http.Request) { r.Header.Set("X-Forwarded-For", "1.2.3.4") }, "X-Forwarded-For", []string{"1.2.3.4, 127.0.0.1"}},
		{"x-forwarded-for lines joined", func(r *http.Request) { r.Header["X-Forwarded-For"] = []string{"1.2.3.4", "5.6.7.8"} },
			"X-Forwarded-For", []string{"1.2.3.4, 5.6.7.8, 127.0.0.1"}},
		{"x-forwarded-for ipv6 client", func(r *http.Request) { r.RemoteAddr = "[::1]:5555" }, "X-Forwarded-For", []string{"::1"}},
		{"x-forwarded-for without a client address", func(r *http.Request) {
			r.RemoteAddr = "pipe"
			r.Header.Set("X-Forwarded-For", "1.2.3.4")
		}, "X-Forwarded-For", nil},
		{"x-forwarded-host is the host", func(r *http.Request) { r.Header.Set("X-Forwarded-Host", "spoofed") }, "X-Forwarded-Host", []string{"front.example"}},
		{"x-forwarded-proto http", func(r *http.Request) { r.Header.Set("X-Forwarded-Proto", "https") }, "X-Forwarded-Proto", []string{"http"}},
		{"x-forwarded-proto https", func(r *http.Request) { r.TLS = &tls.ConnectionState{} }, "X-Forwarded-Proto", []string{"https"}},
		// An empty User-Agent keeps net/http from writing its own; the
		// request line carries none (see TestProxyRequestThroughSidecar).
		{"no user-agent stays empty", func(r *http.Request) {}, "User-Agent", []string{""}},
		{"user-agent kept", func(r *http.Request) { r.Header.Set("User-Agent", "curl/8") }, "User-Agent", []string{"curl/8"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := inbound(http.MethodGet, nil)
			tt.setup(r)
			out := ProxyRequest(t.Context(), r, proxyTarget)
			got, ok := out.Header[tt.key]
			switch {
			case tt.want == nil && ok:
				t.Errorf("%s: %q, want it absent; headers %v", tt.key, got, out.Header)
			case tt.want != nil && !reflect.DeepEqual(got, tt.want):
				t.Errorf("%s: %q, want %q; headers %v", tt.key, got, tt.want, out.Header)
			}
		})
	}
}

// ProxyRequest aims the request at the target, keeps the rest of it and
// does not modify the inbound request.
func TestProxyRequestTargetAndInbound(t *testing.T) {
	r := inbound(http.MethodPost, strings.NewReader("payload"))
	r.Header["X-Forwarded-For"] = []string{"1.2.3.4"}
	r.Header.Set("Connection", "X-Hop")
	r.Header.Set("X-Hop", "1")
	r.Header.Set("Te", "gzip, trailers")
	r.Trailer = http.Header{"X-Sum": nil}
	r.Close = true
	before := r.Header.Clone()
	inURL, host, uri, body := r.URL.String(), r.Host, r.RequestURI, r.Body
	type key struct{}
	ctx := context.WithValue(t.Context(), key{}, 1)

	out := ProxyRequest(ctx, r, proxyTarget)

	if out.Method != http.MethodPost || out.URL.String() != "http://10.0.0.1:9000/a/b?x=1" || out.Host != "front.example" {
		t.Errorf("out %s %s Host %q, want POST http://10.0.0.1:9000/a/b?x=1 Host front.example", out.Method, out.URL, out.Host)
	}
	if out.RequestURI != "" || out.Close {
		t.Errorf("out RequestURI %q Close %v, want \"\" and false", out.RequestURI, out.Close)
	}
	if out.Context() != ctx {
		t.Error("out is not bound to ctx")
	}
	if out.Body != body || out.ContentLength != 7 {
		t.Errorf("out body %v length %d, want the inbound body of 7 bytes", out.Body, out.ContentLength)
	}
	if !reflect.DeepEqual(out.Trailer, r.Trailer) {
		t.Errorf("out trailer %v, want %v", out.Trailer, r.Trailer)
	}
	// Changing what is out's own leaves r alone (serveHealth rewrites the path).
	out.URL.Path = "/healthz"
	out.Header.Set("X-Added", "1")
	if !reflect.DeepEqual(r.Header, before) {
		t.Errorf("inbound header changed:\n got %v\nwant %v", r.Header, before)
	}
	if r.URL.String() != inURL || r.Host != host || r.RequestURI != uri || r.Body != body || !r.Close || r.Context() == ctx {
		t.Errorf("inbound request changed: %s Host %q URI %q close %v", r.URL, r.Host, r.RequestURI, r.Close)
	}
}

func TestProxyRequestBody(t *testing.T) {
	tests := []struct {
		name    string
		body    io.Reader
		length  int64 // ContentLength set on the inbound request
		wantNil bool
	}{
		{"no body", nil, 0, true},
		{"empty body", strings.NewReader(""), 0, true},
		{"sized body", strings.NewReader("abc"), 3, false},
		{"chunked body", strings.NewReader("abc"), -1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := inbound(http.MethodPost, tt.body)
			r.ContentLength = tt.length
			out := ProxyRequest(t.Context(), r, proxyTarget)
			switch {
			case tt.wantNil && out.Body != nil:
				t.Errorf("out body %v, want nil", out.Body)
			case !tt.wantNil && out.Body != r.Body:
				t.Errorf("out body %v, want the inbound %v", out.Body, r.Body)
			}
			if out.ContentLength != tt.length {
				t.Errorf("out length %d, want %d", out.ContentLength, tt.length)
			}
		})
	}
}

func TestCopyEndToEnd(t *testing.T) {
	tests := []struct {
		name string
		src  http.Header
		want http.Header // beside dst's X-Own
	}{
		{"end-to-end", http.Header{"Content-Type": {"text/plain"}, "X-A": {"1", "2"}},
			http.Header{"Content-Type": {"text/plain"}, "X-A": {"1", "2"}}},
		{"hop-by-hop", http.Header{
			"Connection": {"keep-alive"}, "Keep-Alive": {"timeout=5"}, "Proxy-Connection": {"x"},
			"Proxy-Authenticate": {"Basic"}, "Proxy-Authorization": {"Basic eDp5"}, "Te": {"trailers"},
			"Trailer": {"X-Sum"}, "Transfer-Encoding": {"chunked"}, "Upgrade": {"websocket"}, "Etag": {`"v1"`},
		}, http.Header{"Etag": {`"v1"`}}},
		{"named lower case", http.Header{"Connection": {"x-hop"}, "X-Hop": {"1"}, "X-Keep": {"2"}},
			http.Header{"X-Keep": {"2"}}},
		{"named in a list", http.Header{"Connection": {" X-Hop ,X-Two,, "}, "X-Hop": {"1"}, "X-Two": {"2"}, "X-Keep": {"3"}},
			http.Header{"X-Keep": {"3"}}},
		{"named on several lines", http.Header{"Connection": {"close", "X-Hop", "x-two, keep-alive"}, "X-Hop": {"1"}, "X-Two": {"2"}, "X-Keep": {"3"}},
			http.Header{"X-Keep": {"3"}}},
		{"an end-to-end name made hop-by-hop", http.Header{"Connection": {"Cache-Control"}, "Cache-Control": {"no-cache"}, "X-Keep": {"3"}},
			http.Header{"X-Keep": {"3"}}},
		{"no connection header", http.Header{"X-Hop": {"1"}}, http.Header{"X-Hop": {"1"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := http.Header{"X-Own": {"mine"}}
			CopyEndToEnd(dst, tt.src)
			want := tt.want.Clone()
			want["X-Own"] = []string{"mine"}
			if !reflect.DeepEqual(dst, want) {
				t.Errorf("got %v, want %v", dst, want)
			}
		})
	}
}

func TestIsUpgrade(t *testing.T) {
	tests := []struct {
		name string
		h    http.Header
		want bool
	}{
		{"websocket", http.Header{"Connection": {"Upgrade"}, "Upgrade": {"websocket"}}, true},
		{"lower case", http.Header{"Connection": {"upgrade"}, "Upgrade": {"h2c"}}, true},
		{"in a list", http.Header{"Connection": {"keep-alive, Upgrade"}, "Upgrade": {"websocket"}}, true},
		{"spaced", http.Header{"Connection": {" keep-alive ,  UPGRADE  "}, "Upgrade": {"websocket"}}, true},
		{"second line", http.Header{"Connection": {"keep-alive", "Upgrade"}, "Upgrade": {"websocket"}}, true},
		{"no upgrade header", http.Header{"Connection": {"Upgrade"}}, false},
		{"empty upgrade header", http.Header{"Connection": {"Upgrade"}, "Upgrade": {""}}, false},
		{"no connection header", http.Header{"Upgrade": {"websocket"}}, false},
		{"connection without upgrade", http.Header{"Connection": {"keep-alive"}, "Upgrade": {"websocket"}}, false},
		{"similar token", http.Header{"Connection": {"Upgraded, X-Upgrade"}, "Upgrade": {"websocket"}}, false},
		{"empty", http.Header{}, false},
		{"nil", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IsUpgrade(tt.h); got != tt.want {
				t.Errorf("IsUpgrade(%v) = %v, want %v", tt.h, got, tt.want)
			}
		})
	}
}
