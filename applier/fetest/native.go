package fetest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/hmssync/hmssync/change"
	"go.uber.org/zap"
)

// nativePrefix is version 1 of the native protocol (docs/fe-protocol.md). The
// fake does not import the applier, so that the two sides of the protocol are
// written independently and a test between them means something.
const nativePrefix = "/api/hmssync/v1"

func (s *Server) nativeDenied(w http.ResponseWriter, r *http.Request) bool {
	if s.authorised(r) {
		return false
	}
	w.Header().Set("WWW-Authenticate", `Basic realm="hmssync"`)
	writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "wrong user or password"})
	return true
}

// nativeFault applies an injected fault; true if it answered the request.
// changes are the batch's descriptors (nil for a request without a batch).
func (s *Server) nativeFault(w http.ResponseWriter, r *http.Request, changes []change.Descriptor) bool {
	var concerns func(string) bool
	if len(changes) > 0 {
		concerns = func(object string) bool { return len(rejectedItems(changes, object)) > 0 }
	}
	f, ok := s.faults.take(true, r.URL.Path, concerns)
	if !ok {
		return false
	}
	if !s.delay(r.Context(), f) {
		return true
	}
	if f.RejectTable != "" {
		msg := orDefault(f.Message, fmt.Sprintf("%s rejected (injected fault)", f.RejectTable))
		var rejected []map[string]any
		for _, i := range rejectedItems(changes, f.RejectTable) {
			rejected = append(rejected, map[string]any{"index": i, "error": msg})
		}
		writeJSON(w, orDefaultInt(f.HTTPStatus, http.StatusBadRequest), map[string]any{"error": msg, "rejected": rejected})
		return true
	}
	if f.Body != "" {
		w.WriteHeader(orDefaultInt(f.HTTPStatus, http.StatusOK))
		_, _ = io.WriteString(w, f.Body)
		return true
	}
	status := f.HTTPStatus
	if status == 0 && f.Code != 0 {
		switch f.Code {
		case 401, 403, 500, 503:
			status = f.Code
		default:
			status = http.StatusBadRequest
		}
	}
	if status == 0 {
		return false // a delay only
	}
	writeJSON(w, status, map[string]string{"error": orDefault(f.Message, "injected fault")})
	return true
}

// rejectedItems returns the indexes of the changes whose objects include
// object ("db.table" or "db").
func rejectedItems(changes []change.Descriptor, object string) []int {
	var out []int
	for i, d := range changes {
		for _, o := range d.Objects() {
			if o.String() == object {
				out = append(out, i)
				break
			}
		}
	}
	return out
}

func (s *Server) handlePing(w http.ResponseWriter, r *http.Request) {
	if s.nativeDenied(w, r) || s.nativeFault(w, r, nil) {
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"protocol": "hmssync-fe", "versions": []int{1}})
}

func (s *Server) handleState(w http.ResponseWriter, r *http.Request) {
	if s.nativeDenied(w, r) || s.nativeFault(w, r, nil) {
		return
	}
	c := r.PathValue("catalog")
	if !s.declared(c) {
		writeJSON(w, http.StatusNotFound, map[string]any{"error": fmt.Sprintf("unknown catalog %q", c)})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"catalog": c, "applied_event_id": s.m.appliedEventID(c)})
}

// batchBody is the request body; pointers tell a missing key from zero.
type batchBody struct {
	From        *int64              `json:"from_event_id"`
	To          *int64              `json:"to_event_id"`
	FullRefresh bool                `json:"full_refresh"`
	Changes     []change.Descriptor `json:"changes"`
}

func (s *Server) handleChanges(w http.ResponseWriter, r *http.Request) {
	if s.nativeDenied(w, r) {
		return
	}
	catalog := r.PathValue("catalog")
	raw, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		return
	}
	var body batchBody
	if err := json.Unmarshal(raw, &body); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "malformed JSON: " + err.Error()})
		return
	}
	if body.From == nil || body.To == nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "from_event_id and to_event_id are required"})
		return
	}
	b := change.Batch{Catalog: catalog, From: *body.From, To: *body.To, FullRefresh: body.FullRefresh, Changes: body.Changes}
	s.m.recordBatch(ReceivedBatch{Catalog: catalog, Batch: b})
	s.log.Debug("fetest: batch", zap.String("fe", s.URL), zap.String("catalog", catalog),
		zap.Int64("from", b.From), zap.Int64("to", b.To), zap.Bool("full_refresh", b.FullRefresh), zap.Int("changes", len(b.Changes)))
	var changes []change.Descriptor
	if !b.FullRefresh {
		changes = b.Changes
	}
	if s.nativeFault(w, r, changes) {
		return
	}
	if !b.FullRefresh {
		if b.From > b.To {
			writeJSON(w, http.StatusUnprocessableEntity, map[string]string{"error": fmt.Sprintf("from_event_id %d is after to_event_id %d", b.From, b.To)})
			return
		}
		for _, d := range b.Changes {
			if err := d.Validate(); err != nil {
				writeJSON(w, http.StatusUnprocessableEntity, map[string]string{"error": err.Error()})
				return
			}
		}
	}
	applied, id, e := s.m.applyBatch(r.Context(), catalog, b)
	if e != nil {
		status := http.StatusServiceUnavailable // the FE could not reach its metastore
		if e.code == 1 && isUnknownCatalog(e.msg) {
			status = http.StatusNotFound
		}
		writeJSON(w, status, map[string]string{"error": e.msg})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"catalog": catalog, "applied_event_id": id, "applied": applied})
}
