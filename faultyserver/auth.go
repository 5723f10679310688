package faultyserver

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
)

// The control API is a remote control of the instance: whoever reaches it
// can make it fail, hang or reset. An instance given a token (Config.Token,
// SidecarConfig.Token) therefore answers every request under ControlPrefix
// with 401 and changes nothing unless the request carries the token as a
// bearer credential (RFC 6750 §2.1):
//
//	Authorization: Bearer <token>
//
// An instance without a token leaves its control API open; `lbchaos serve`
// allows that only on a loopback address (CheckControlListen). A token in
// the query string (RFC 6750 §2.3) is refused in either case: URLs end up
// in logs, histories and proxies. HealthPath needs no token: balancers and
// orchestrators probe it.

// TokenEnv is the environment variable `lbchaos serve` and `lbchaos run`
// read the control token from when --token is not given. Providers pass a
// run's token to the instances they start in it, never on a command line.
const TokenEnv = "LBCHAOS_TOKEN"

// NewToken returns a fresh random control token (128 bits from
// crypto/rand, in base32).
func NewToken() string { return rand.Text() }

// CheckToken reports why token cannot be a control token: it must travel
// in an Authorization header as it is.
func CheckToken(token string) error {
	for _, c := range []byte(token) {
		if c <= ' ' || c >= 0x7f {
			return fmt.Errorf("must be printable ASCII without spaces (it is sent as Authorization: Bearer <token>), got a byte %#x", c)
		}
	}
	return nil
}

// queryTokenKeys are the query parameters a token could be mistakenly sent
// in; "access_token" is RFC 6750's.
var queryTokenKeys = []string{"access_token", "token"}

// Authorize is authorize for another API that takes the run's token the
// same way (a load generator's endpoints API).
func Authorize(token string, w http.ResponseWriter, r *http.Request) bool {
	return authorize(token, w, r)
}

// authorize reports whether r may use the control API of an instance whose
// token is token ("" = open). When it may not, it has answered 401 with
// WWW-Authenticate: Bearer and an error body saying what is missing.
func authorize(token string, w http.ResponseWriter, r *http.Request) bool {
	q := r.URL.Query()
	for _, k := range queryTokenKeys {
		if q.Has(k) {
			unauthorized(w, `Bearer realm="lbchaos", error="invalid_request"`,
				fmt.Sprintf("token in the query string (%s): refused, URLs are logged; send it in the header Authorization: Bearer <token>", k))
			return false
		}
	}
	if token == "" {
		return true
	}
	h := r.Header.Get("Authorization")
	if h == "" {
		unauthorized(w, `Bearer realm="lbchaos"`,
			"missing token: this instance's control API needs the header Authorization: Bearer <token> (the token of lbchaos serve --token or "+TokenEnv+")")
		return false
	}
	scheme, cred, _ := strings.Cut(h, " ")
	if !strings.EqualFold(scheme, "Bearer") {
		unauthorized(w, `Bearer realm="lbchaos", error="invalid_request"`,
			fmt.Sprintf("Authorization: scheme %q, want Bearer (Authorization: Bearer <token>)", scheme))
		return false
	}
	if !tokenEqual(strings.TrimSpace(cred), token) {
		unauthorized(w, `Bearer realm="lbchaos", error="invalid_token"`,
			"wrong token: the Authorization header's bearer token is not this instance's")
		return false
	}
	return true
}

// tokenEqual compares in constant time. Hashing first makes the time
// independent of the lengths too, which ConstantTimeCompare alone is not.
func tokenEqual(got, want string) bool {
	g, w := sha256.Sum256([]byte(got)), sha256.Sum256([]byte(want))
	return subtle.ConstantTimeCompare(g[:], w[:]) == 1
}

func unauthorized(w http.ResponseWriter, challenge, msg string) {
	w.Header().Set("WWW-Authenticate", challenge)
	writeError(w, http.StatusUnauthorized, msg)
}

// ErrOpenControl is wrapped by CheckControlListen's error.
var ErrOpenControl = errors.New("the control API would be open to the network")

// CheckControlListen refuses to serve an open control API (no token)
// beyond this machine: listen must then be a loopback address (127.0.0.1,
// [::1], localhost), unless insecure (--insecure-control) says the network
// is trusted. An empty host (":8080") listens on every interface.
func CheckControlListen(listen, token string, insecure bool) error {
	if token != "" || insecure {
		return nil
	}
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return fmt.Errorf("--listen: %w", err)
	}
	if loopbackHost(host) {
		return nil
	}
	return fmt.Errorf("--listen %s: %w: without a token anyone who reaches %s can set faults and reset the instance; give --token T (or %s) and send Authorization: Bearer T, or listen on 127.0.0.1, or give --insecure-control if the network is trusted",
		listen, ErrOpenControl, listen, TokenEnv)
}

func loopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
