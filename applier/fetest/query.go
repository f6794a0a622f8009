package fetest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/hmssync/hmssync/change"
	"go.uber.org/zap"
)

// handleQuery is Doris's POST /api/query/{ns}/{db} (reference §2): HTTP 200 with
// an envelope whatever happens.
func (s *Server) handleQuery(w http.ResponseWriter, r *http.Request) {
	if !s.authorised(r) {
		u, _, _ := r.BasicAuth()
		writeEnvelope(w, 401, fmt.Sprintf("Access denied for user '%s'", u))
		return
	}
	if !strings.EqualFold(r.Header.Get("X-Doris-Stream"), "false") {
		// Doris streams its answer unless asked not to; this fake does not
		// implement that form, so it answers with something that is not an
		// envelope, as a client expecting one would see.
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprintln(w, "fetest: streaming answers are not implemented; send X-Doris-Stream: false")
		return
	}
	if db := r.PathValue("db"); db != "information_schema" && db != "mysql" {
		writeEnvelope(w, 1, fmt.Sprintf("Failed to execute sql: errCode = 2, detailMessage = Unknown database '%s'", db))
		return
	}
	var body struct {
		Stmt string `json:"stmt"`
	}
	raw, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		return // the client went away
	}
	if err := json.Unmarshal(raw, &body); err != nil || strings.TrimSpace(body.Stmt) == "" {
		writeEnvelope(w, 403, "Bad request: the body must be {\"stmt\": \"<sql>\"}")
		return
	}
	s.recordStatement(body.Stmt)
	s.log.Debug("fetest: statement", zap.String("fe", s.URL), zap.String("stmt", body.Stmt))

	if f, ok := s.faults.take(false, body.Stmt, statementConcerns(body.Stmt)); ok {
		if !s.delay(r.Context(), f) {
			return
		}
		switch {
		case f.RejectTable != "":
			writeEnvelope(w, 1, orDefault(f.Message, "Failed to execute sql: errCode = 2, detailMessage = "+f.RejectTable+" rejected (injected fault)"))
			return
		case f.Body != "":
			w.WriteHeader(orDefaultInt(f.HTTPStatus, http.StatusOK))
			_, _ = io.WriteString(w, f.Body)
			return
		case f.HTTPStatus != 0:
			http.Error(w, orDefault(f.Message, http.StatusText(f.HTTPStatus)), f.HTTPStatus)
			return
		case f.Code != 0:
			writeEnvelope(w, f.Code, orDefault(f.Message, "Failed to execute sql: errCode = 2, detailMessage = injected fault"))
			return
		case f.NotExist:
			writeEnvelope(w, 1, notExistMessage(body.Stmt))
			return
		}
	}

	if s.answerShow(w, body.Stmt) || s.answerAlter(w, body.Stmt) {
		return
	}
	st, err := ParseStatement(body.Stmt)
	if err != nil {
		writeEnvelope(w, 1, "Failed to execute sql: errCode = 2, detailMessage = Syntax error: "+err.Error())
		return
	}
	if e := s.m.execute(r.Context(), st); e != nil {
		writeEnvelope(w, e.code, e.msg)
		return
	}
	if st.Kind == SelectOne {
		writeJSON(w, http.StatusOK, map[string]any{"msg": "success", "code": 0, "count": 0,
			"data": map[string]any{"type": "result_set", "meta": []map[string]string{{"name": "1", "type": "TINYINT"}},
				"data": [][]int{{1}}, "time": 0}})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"msg": "success", "code": 0, "count": 0,
		"data": map[string]any{"type": "exec_status", "status": map[string]any{}}})
}

// statementConcerns says which object a statement concerns, as a RejectTable
// value: "db.table" for REFRESH TABLE, "db" for REFRESH DATABASE; nil for any
// other statement.
func statementConcerns(stmt string) func(string) bool {
	st, err := ParseStatement(stmt)
	if err != nil {
		return nil
	}
	var object string
	switch st.Kind {
	case RefreshTable:
		object = change.Object{DB: st.DB, Table: st.Table}.String()
	case RefreshDatabase:
		object = change.Object{DB: st.DB}.String()
	default:
		return nil
	}
	return func(o string) bool { return o == object }
}

// writeEnvelope answers an error the way Doris does: HTTP 200, the code in the
// body, the text in data.
func writeEnvelope(w http.ResponseWriter, code int, data string) {
	msg := map[int]string{1: "Error", 401: "Unauthorized", 403: "Bad Request", 500: "Internal Error"}[code]
	if msg == "" {
		msg = "Error"
	}
	writeJSON(w, http.StatusOK, map[string]any{"msg": msg, "code": code, "data": data, "count": 0})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// notExistMessage is Doris's answer for the object a statement names.
func notExistMessage(stmt string) string {
	const prefix = "Failed to execute sql: errCode = 2, detailMessage = "
	st, err := ParseStatement(stmt)
	switch {
	case err != nil:
		return prefix + "Table does not exist."
	case st.Kind == RefreshCatalog:
		return prefix + fmt.Sprintf("Unknown catalog '%s'", st.Catalog)
	case st.Kind == RefreshDatabase:
		return prefix + fmt.Sprintf("Database [%s] does not exist in catalog [%s].", st.DB, st.Catalog)
	}
	return prefix + fmt.Sprintf("Table [%s] does not exist in database [%s].", st.Table, st.DB)
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func orDefaultInt(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}
