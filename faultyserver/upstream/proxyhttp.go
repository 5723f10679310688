package upstream

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"strings"
	"sync"
)

// The reverse-proxy step shared by the fault sidecar and lbchaos proxy.
// httputil.ReverseProxy does the same job but costs a 32 KiB copy buffer,
// two request clones and a header clone per request; at a few thousand
// requests per second on two cores that garbage alone doubled what a
// forwarded request cost (BenchmarkSidecarThroughput). These helpers copy
// what a request needs once, share what they can with the inbound request,
// and copy bodies through pooled buffers.

// hopHeaders are the hop-by-hop headers a proxy does not forward (RFC 9110,
// section 7.6.1), beside those the Connection header names.
var hopHeaders = [...]string{"Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authenticate", "Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// copyBuffers are the buffers proxied bodies are copied through.
var copyBuffers = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// isHop reports whether the header key k (canonical) is hop-by-hop for a
// message whose Connection header is conn.
func isHop(k string, conn []string) bool {
	for _, h := range hopHeaders {
		if k == h {
			return true
		}
	}
	for _, v := range conn {
		for tok := range strings.SplitSeq(v, ",") {
			if tok = textproto.TrimString(tok); tok != "" && textproto.CanonicalMIMEHeaderKey(tok) == k {
				return true
			}
		}
	}
	return false
}

// CopyEndToEnd adds src's end-to-end headers to dst: every header but the
// hop-by-hop ones and those src's Connection header names. Value slices are
// shared, not copied.
func CopyEndToEnd(dst, src http.Header) {
	conn := src["Connection"]
	for k, vs := range src {
		if !isHop(k, conn) {
			dst[k] = vs
		}
	}
}

// ProxyRequest returns the request a reverse proxy sends upstream for the
// inbound r, bound to ctx: r's method, path, query, body, trailers, Host and
// end-to-end headers, sent to target's scheme and host, with
// X-Forwarded-For (after any the client sent), X-Forwarded-Host and
// X-Forwarded-Proto set, "Te: trailers" kept, and no User-Agent added where
// the client sent none. It shares r's body and header values and does not
// modify r.
func ProxyRequest(ctx context.Context, r *http.Request, target *url.URL) *http.Request {
	out := r.WithContext(ctx)
	u := *r.URL
	u.Scheme, u.Host = target.Scheme, target.Host
	out.URL, out.RequestURI, out.Close = &u, "", false
	if r.ContentLength == 0 {
		out.Body = nil // no body, not an empty chunked one
	}
	h := make(http.Header, len(r.Header)+4)
	CopyEndToEnd(h, r.Header)
	for _, v := range r.Header["Te"] {
		if strings.Contains(strings.ToLower(v), "trailers") {
			h["Te"] = teTrailers
			break
		}
	}
	if _, ok := h["User-Agent"]; !ok {
		h["User-Agent"] = emptyValue // keep net/http from adding its own
	}
	if ip, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		if prior := r.Header["X-Forwarded-For"]; len(prior) > 0 {
			ip = strings.Join(prior, ", ") + ", " + ip
		}
		h["X-Forwarded-For"] = []string{ip}
	} else {
		delete(h, "X-Forwarded-For")
	}
	h["X-Forwarded-Host"] = []string{r.Host}
	if r.TLS != nil {
		h["X-Forwarded-Proto"] = protoHTTPS
	} else {
		h["X-Forwarded-Proto"] = protoHTTP
	}
	out.Header = h
	return out
}

// Shared, never modified header values.
var (
	teTrailers = []string{"trailers"}
	emptyValue = []string{""}
	protoHTTP  = []string{"http"}
	protoHTTPS = []string{"https"}
)

// TrailerKeys returns the trailers resp announced, nil when none. Take them
// before anything reads resp.Body: reading it to its end fills
// resp.Trailer.
func TrailerKeys(resp *http.Response) []string {
	if len(resp.Trailer) == 0 {
		return nil
	}
	keys := make([]string, 0, len(resp.Trailer))
	for k := range resp.Trailer {
		keys = append(keys, k)
	}
	return keys
}

// SendProxied writes resp's status to w (after the headers the caller set
// in w.Header(), and a Trailer header announcing trailers, from
// TrailerKeys), then body — resp.Body when body is nil — each chunk
// written and flushed as it arrives, then resp's trailers. A non-nil error
// means the answer was cut short (the upstream's body failed, the client
// went away): the caller should then end its handler with
// panic(http.ErrAbortHandler), so that the client sees a broken answer
// rather than a complete short one.
func SendProxied(w http.ResponseWriter, resp *http.Response, body io.Reader, trailers []string) error {
	if body == nil {
		body = resp.Body
	}
	h := w.Header()
	for _, k := range trailers {
		h.Add("Trailer", k) // announced, for HTTP/1.1 chunked answers
	}
	w.WriteHeader(resp.StatusCode)
	f, _ := w.(http.Flusher)
	err := Relay(w, body, func(more bool) {
		if more && f != nil {
			// More may follow, later: let the client have this now (a
			// failed flush shows at the next write). At the end the
			// server flushes anyway, with the last chunk.
			f.Flush()
		}
	})
	if err != nil {
		return err
	}
	for k, vs := range resp.Trailer {
		h[http.TrailerPrefix+k] = vs
	}
	return nil
}

// Relay writes body to w as it arrives, chunk by chunk, through a pooled
// buffer. After writing each chunk it calls flush, with more false when
// body ended with that chunk. It returns nil once body ends, else the
// first error of a read or a write: the answer was cut short.
func Relay(w io.Writer, body io.Reader, flush func(more bool)) error {
	buf := copyBuffers.Get().(*[]byte)
	defer copyBuffers.Put(buf)
	for {
		n, rerr := body.Read(*buf)
		if n > 0 {
			if _, err := w.Write((*buf)[:n]); err != nil {
				return err
			}
			flush(rerr == nil)
		}
		if rerr == io.EOF {
			return nil
		}
		if rerr != nil {
			return rerr
		}
	}
}

// IsUpgrade reports whether h asks for a protocol upgrade (WebSocket,
// h2c): a Connection header naming "upgrade" and an Upgrade header.
func IsUpgrade(h http.Header) bool {
	if h.Get("Upgrade") == "" {
		return false
	}
	for _, v := range h["Connection"] {
		for tok := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(textproto.TrimString(tok), "upgrade") {
				return true
			}
		}
	}
	return false
}
