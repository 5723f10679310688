package faultyserver

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
)

// Unidentified is the ID of an instance started without an identity: a
// pod of a Kubernetes Deployment, whose template every pod shares. It
// answers with InstanceHeader -1 until the harness gives it an id and a
// seed through IdentityPath, once; until then it must get no traffic (the
// harness keeps its pod out of the Service with a readiness gate).
const Unidentified = -1

// IdentityPath is the control endpoint that names an unidentified
// instance: PUT {"id": N, "seed": S}; GET returns the current identity.
const IdentityPath = ControlPrefix + "identity"

// identity is an instance's id and seed; replaced whole, at most once
// (from Unidentified to an id).
type identity struct {
	num    int
	str    string   // num in decimal, for InstanceHeader
	header []string // {str}, shared by every answer's header map; never modified
	seed   uint64
}

func newIdentity(id int, seed uint64) *identity {
	s := strconv.Itoa(id)
	return &identity{num: id, str: s, header: []string{s}, seed: seed}
}

// Identity is the body of IdentityPath.
type Identity struct {
	ID   int    `json:"id"`
	Seed uint64 `json:"seed"`
}

// ident returns the instance's identity.
func (s *instanceState) ident() *identity { return s.identity.Load() }

// identify gives an unidentified instance id and seed; naming an
// identified instance again with its own id is a no-op, with another an
// error that changes nothing.
func (s *instanceState) identify(id Identity) error {
	if id.ID < 0 {
		return fmt.Errorf("id: must be >= 0, got %d", id.ID)
	}
	next := newIdentity(id.ID, id.Seed)
	for {
		cur := s.ident()
		switch {
		case cur.num == id.ID && cur.seed == id.Seed:
			return nil
		case cur.num != Unidentified:
			return fmt.Errorf("id: the instance is %d already; an identity is given once", cur.num)
		}
		if s.identity.CompareAndSwap(cur, next) {
			break
		}
	}
	s.randMu.Lock()
	s.src.Seed(id.Seed, pcgStream)
	s.randMu.Unlock()
	return nil
}

// Identity returns the instance's id and seed.
func (s *instanceState) Identity() Identity {
	cur := s.ident()
	return Identity{ID: cur.num, Seed: cur.seed}
}

// serveIdentity answers IdentityPath.
func serveIdentity(s controlled, w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
		writeJSON(w, http.StatusOK, s.Identity())
	case http.MethodPut:
		data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxControlBody))
		if err != nil {
			writeError(w, http.StatusBadRequest, "body: "+err.Error())
			return
		}
		var id Identity
		if err := json.Unmarshal(data, &id); err != nil {
			writeError(w, http.StatusBadRequest, "body: want {\"id\": N, \"seed\": S}: "+err.Error())
			return
		}
		if id.ID < 0 {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("id: must be >= 0, got %d", id.ID))
			return
		}
		if err := s.identify(id); err != nil {
			writeError(w, http.StatusConflict, err.Error())
			return
		}
		writeJSON(w, http.StatusOK, s.Identity())
	default:
		methodNotAllowed(w, "GET, PUT")
	}
}
