package faultyserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// MaxControlBody is the largest control request body accepted.
const MaxControlBody = 64 << 10

// Control API paths.
const (
	FaultPath = ControlPrefix + "fault"
	StatsPath = ControlPrefix + "stats"
	ResetPath = ControlPrefix + "reset"
)

// errorBody is the JSON body of every control API error.
type errorBody struct {
	Error string `json:"error"`
}

// controlled is what the control API acts on: a Server or a Sidecar.
type controlled interface {
	Fault() Fault
	SetFault(Fault) error
	ClearFault()
	Stats() Stats
	Reset()
	executedList() []byte // ExecutedPath's answer (executed.go)
	Identity() Identity
	identify(Identity) error // identity.go
	controlToken() string    // "" = the control API is open (auth.go)
}

func (s *Server) control(w http.ResponseWriter, r *http.Request) { serveControl(s, w, r) }

// serveControl serves the control API of s to a request that carries its
// token (authorize); any other gets 401 and changes nothing. Over HTTP/1
// every answer closes its connection (Connection: close): a connection
// whose first request is a control one is exempt from the connection
// faults for its life (ConnFault), so it must carry nothing else. An
// HTTP/2 connection is never exempt, and is left open.
func serveControl(s controlled, w http.ResponseWriter, r *http.Request) {
	if r.ProtoMajor == 1 {
		w.Header().Set("Connection", "close")
	}
	if !authorize(s.controlToken(), w, r) {
		return
	}
	switch r.URL.Path {
	case FaultPath:
		switch r.Method {
		case http.MethodGet:
			writeJSON(w, http.StatusOK, faultJSON(s.Fault()))
		case http.MethodPut:
			putFault(s, w, r)
		case http.MethodDelete:
			s.ClearFault()
			w.WriteHeader(http.StatusNoContent)
		default:
			methodNotAllowed(w, "GET, PUT, DELETE")
		}
	case StatsPath:
		if r.Method != http.MethodGet {
			methodNotAllowed(w, "GET")
			return
		}
		writeJSON(w, http.StatusOK, s.Stats())
	case ResetPath:
		if r.Method != http.MethodPost {
			methodNotAllowed(w, "POST")
			return
		}
		s.Reset()
		w.WriteHeader(http.StatusNoContent)
	case ExecutedPath:
		serveExecuted(s, w, r)
	case IdentityPath:
		serveIdentity(s, w, r)
	default:
		writeError(w, http.StatusNotFound, fmt.Sprintf("no control endpoint %s (have %s, %s, %s, %s, %s)", r.URL.Path, FaultPath, StatsPath, ResetPath, ExecutedPath, IdentityPath))
	}
}

// putFault replaces the fault with the request body; on any error the
// current fault is left as it was.
func putFault(s controlled, w http.ResponseWriter, r *http.Request) {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxControlBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("body: larger than %d bytes", tooBig.Limit))
			return
		}
		writeError(w, http.StatusBadRequest, "body: "+err.Error())
		return
	}
	f, err := ParseFault(data)
	if err == nil {
		err = s.SetFault(f)
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, faultJSON(f))
}

// faultJSON is f as MarshalFault writes it, or null.
func faultJSON(f Fault) json.RawMessage {
	if f == nil {
		return json.RawMessage("null")
	}
	b, err := MarshalFault(f)
	if err != nil {
		return json.RawMessage("null")
	}
	return b
}

func methodNotAllowed(w http.ResponseWriter, allow string) {
	w.Header().Set("Allow", allow)
	writeError(w, http.StatusMethodNotAllowed, "method not allowed; allowed: "+allow)
}

// WriteError and WriteJSON answer as the control API does, for another
// API that works as it does (a load generator's endpoints API).
func WriteError(w http.ResponseWriter, status int, msg string) { writeError(w, status, msg) }

// WriteJSON: see WriteError.
func WriteJSON(w http.ResponseWriter, status int, v any) { writeJSON(w, status, v) }

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, errorBody{Error: msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b, _ = json.Marshal(errorBody{Error: err.Error()})
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
