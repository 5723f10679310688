package localcluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"
)

// apiClient talks to the apiserver as the admin identity of pkiDir.
func apiClient(pkiDir string) (*http.Client, error) {
	cert, err := tls.LoadX509KeyPair(pkiDir+"/admin.crt", pkiDir+"/admin.key")
	if err != nil {
		return nil, err
	}
	caPEM, err := os.ReadFile(pkiDir + "/ca.crt")
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	return &http.Client{
		Timeout:   5 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}}},
	}, nil
}

// get returns the status code and body of a GET, 0 when the request failed.
func get(ctx context.Context, c *http.Client, url string) (int, []byte) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, nil
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, b
}

// NodeReady reads a Node object's Ready condition.
func NodeReady(nodeJSON []byte) (bool, string) {
	var n struct {
		Status struct {
			Conditions []struct{ Type, Status, Reason, Message string }
		}
	}
	if json.Unmarshal(nodeJSON, &n) != nil {
		return false, "unreadable node object"
	}
	for _, c := range n.Status.Conditions {
		if c.Type == "Ready" {
			return c.Status == "True", c.Reason + ": " + c.Message
		}
	}
	return false, "no Ready condition yet"
}

// errDied is returned by poll when a watched component exits.
type errDied struct{ name string }

func (e errDied) Error() string { return e.name + " exited" }

// watched is a component whose exit ends any wait.
type watched struct {
	name string
	done <-chan struct{}
}

// poll calls check every interval until it returns true, the deadline
// passes (the error says what check last reported) or a watched component
// exits (errDied).
func poll(ctx context.Context, timeout time.Duration, ws []watched, what string, check func() (bool, string)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	last := ""
	for {
		ok, why := check()
		if ok {
			return nil
		}
		last = why
		for _, w := range ws {
			select {
			case <-w.done:
				return errDied{w.name}
			default:
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: not within %s (%s)", what, timeout, last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// portFree reports whether 127.0.0.1:port can be listened on.
func portFree(port int) bool {
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return false
	}
	ln.Close()
	return true
}

// socketAnswers reports whether a unix socket accepts connections.
func socketAnswers(path string) bool {
	c, err := net.DialTimeout("unix", path, time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

func httpClientPlain() *http.Client { return &http.Client{Timeout: 2 * time.Second} }
