package preflight

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// maxAnswer bounds a Doris answer read by a check: SHOW CATALOGS and SHOW CREATE
// CATALOG are a few kilobytes even on FEs with hundreds of catalogs.
const maxAnswer = 4 << 20

// resultSet is a SHOW statement's answer: rows addressed by column name.
type resultSet struct {
	columns map[string]int
	rows    [][]json.RawMessage
}

// cell returns row i's value in the named column as text ("" when absent).
func (r resultSet) cell(i int, column string) string {
	c, ok := r.columns[strings.ToLower(column)]
	if !ok || c >= len(r.rows[i]) {
		return ""
	}
	var s string
	if json.Unmarshal(r.rows[i][c], &s) == nil {
		return s
	}
	return strings.TrimSpace(string(r.rows[i][c]))
}

// dorisQuery runs one SHOW statement through Doris's SQL-over-HTTP API (the
// endpoint the doris dialect uses) and returns its result set.
func dorisQuery(ctx context.Context, hc *http.Client, fe FE, stmt string) (resultSet, error) {
	body, _ := json.Marshal(map[string]string{"stmt": stmt})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(fe.URL, "/")+"/api/query/default_cluster/information_schema", bytes.NewReader(body))
	if err != nil {
		return resultSet{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Doris-Stream", "false")
	req.SetBasicAuth(fe.User, fe.Password)
	resp, err := hc.Do(req)
	if err != nil {
		return resultSet{}, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	if err != nil {
		return resultSet{}, fmt.Errorf("reading the answer: %w", err)
	}
	if len(raw) > maxAnswer {
		return resultSet{}, fmt.Errorf("answer larger than %d bytes", maxAnswer)
	}
	if resp.StatusCode != http.StatusOK {
		return resultSet{}, fmt.Errorf("HTTP %d: %s", resp.StatusCode, excerpt(raw))
	}
	var env struct {
		Code int             `json:"code"`
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		return resultSet{}, fmt.Errorf("not a Doris answer: %s", excerpt(raw))
	}
	if env.Code != 0 {
		var text string
		if json.Unmarshal(env.Data, &text) != nil {
			text = excerpt(env.Data)
		}
		return resultSet{}, fmt.Errorf("code %d: %s", env.Code, text)
	}
	var data struct {
		Type string `json:"type"`
		Meta []struct {
			Name string `json:"name"`
		} `json:"meta"`
		Data [][]json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(env.Data, &data); err != nil || data.Type != "result_set" {
		return resultSet{}, fmt.Errorf("not a result set: %s", excerpt(env.Data))
	}
	rs := resultSet{columns: map[string]int{}, rows: data.Data}
	for i, m := range data.Meta {
		rs.columns[strings.ToLower(m.Name)] = i
	}
	return rs, nil
}

func excerpt(b []byte) string {
	const n = 200
	s := strings.TrimSpace(string(b))
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
