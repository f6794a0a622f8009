package hmstest

import (
	"context"
	"maps"
	"regexp"
	"sync"

	"github.com/hmssync/hmssync/hms/internal/gen/hmsthrift"
)

// DefaultSettings are the fake's answers to get_config_value until changed: a
// metastore set up as hmssync needs (reference hms.md §1), with Hive 3.1's
// defaults for the rest. hive.metastore.alter.notifications.basic (a CDH flag)
// and hive.metastore.notifications.add.thrift.objects are unknown to it, as to
// Apache Hive 2.3.10, 3.1.3 and 4.0.1 (the real-metastore suite reads them).
var DefaultSettings = map[string]string{
	"hive.metastore.transactional.event.listeners":  "org.apache.hive.hcatalog.listener.DbNotificationListener",
	"hive.metastore.event.listeners":                "",
	"hive.metastore.dml.events":                     "true",
	"hive.metastore.event.db.listener.timetolive":   "86400s",
	"hive.metastore.event.db.notification.api.auth": "false",
	"hive.txn.timeout":                              "300s",
}

// readableSetting is which names Hive's get_config_value answers: others are
// refused with a ConfigValSecurityException ("for security reasons", so that
// e.g. the database password cannot be read).
var readableSetting = regexp.MustCompile(`^(hive|hdfs|mapred|metastore)`)

// settings are the fake metastore's configuration (get_config_value).
type settings struct {
	mu sync.Mutex
	// m is nil until changed: DefaultSettings apply.
	m       map[string]string
	refused map[string]bool
}

// SetSetting makes get_config_value answer value for name.
func (s *Server) SetSetting(name, value string) {
	s.settings.mu.Lock()
	defer s.settings.mu.Unlock()
	s.settings.own()[name] = value
}

// UnsetSetting makes the metastore know nothing of name: get_config_value
// answers with the caller's default, as Hive does for a setting its version
// lacks.
func (s *Server) UnsetSetting(name string) {
	s.settings.mu.Lock()
	defer s.settings.mu.Unlock()
	delete(s.settings.own(), name)
}

// RefuseSetting makes get_config_value of name fail with a
// ConfigValSecurityException, as a metastore whose authorization hides it does.
func (s *Server) RefuseSetting(name string) {
	s.settings.mu.Lock()
	defer s.settings.mu.Unlock()
	s.settings.own()
	s.settings.refused[name] = true
}

// own makes m the server's own copy of the defaults; mu is held.
func (st *settings) own() map[string]string {
	if st.m == nil {
		st.m = maps.Clone(DefaultSettings)
		st.refused = map[string]bool{}
	}
	return st.m
}

func (st *settings) get(name string) (value string, known, refused bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	m := st.m
	if m == nil {
		m = DefaultSettings
	}
	if st.refused[name] {
		return "", false, true
	}
	value, known = m[name]
	return value, known, false
}

func (h handler) GetConfigValue(_ context.Context, name, defaultValue string) (string, error) {
	v, known, refused := h.s.settings.get(name)
	if refused || !readableSetting.MatchString(name) {
		return "", &hmsthrift.ConfigValSecurityException{Message: "For security reasons, the config key " + name + " cannot be accessed"}
	}
	if !known {
		return defaultValue, nil
	}
	return v, nil
}
