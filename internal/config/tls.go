package config

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// HMSTLS is TLS towards a metastore (Hive's hive.metastore.use.SSL): a
// catalog's hms_tls keys, or the --tls* flags of `events tail`.
type HMSTLS struct {
	Enabled            bool   `yaml:"enabled"`
	CAFile             string `yaml:"ca_file"`
	CertFile           string `yaml:"cert_file"`
	KeyFile            string `yaml:"key_file"`
	ServerName         string `yaml:"server_name"`
	InsecureSkipVerify bool   `yaml:"insecure_skip_verify"`
}

// anySet reports whether a key other than enabled is set.
// AnySet reports whether a key other than enabled is set.
func (t HMSTLS) AnySet() bool {
	return t.CAFile != "" || t.CertFile != "" || t.KeyFile != "" || t.ServerName != "" || t.InsecureSkipVerify
}

// ClientConfig reads the files and returns the metastore client's TLS
// configuration, nil when TLS is off. name turns a key (ca_file) into what the
// user wrote (catalogs[0].hms_tls.ca_file, --tls-ca) so that every error names it.
// Reading the files here, at start, turns a wrong path or a bad PEM file into a
// configuration error instead of a handshake failure on every reconnect.
func (t HMSTLS) ClientConfig(name func(key string) string) (*tls.Config, error) {
	if !t.Enabled {
		if t.AnySet() {
			return nil, fmt.Errorf("%s = false: want true, since other %s keys are set; or remove them to connect without TLS",
				name("enabled"), name(""))
		}
		return nil, nil
	}
	var errs []error
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName, InsecureSkipVerify: t.InsecureSkipVerify}
	if t.CAFile != "" {
		if t.InsecureSkipVerify {
			errs = append(errs, fmt.Errorf("%s = true: want false when %s is set (the CA would be ignored)", name("insecure_skip_verify"), name("ca_file")))
		}
		pem, err := os.ReadFile(t.CAFile)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("%s = %q: want a readable PEM file of the CA certificates that signed the metastore's: %v", name("ca_file"), t.CAFile, err))
		default:
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				errs = append(errs, fmt.Errorf("%s = %q: holds no PEM certificate (-----BEGIN CERTIFICATE-----); want the CA certificates that signed the metastore's", name("ca_file"), t.CAFile))
			}
			cfg.RootCAs = pool
		}
	}
	switch {
	case (t.CertFile == "") != (t.KeyFile == ""):
		errs = append(errs, fmt.Errorf("%s = %q, %s = %q: want both (a client certificate and its key) or neither",
			name("cert_file"), t.CertFile, name("key_file"), t.KeyFile))
	case t.CertFile != "":
		pair, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s = %q, %s = %q: want a readable PEM client certificate and its private key: %v",
				name("cert_file"), t.CertFile, name("key_file"), t.KeyFile, err))
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return cfg, nil
}

// CatalogTLSKey names a catalog's hms_tls key in errors.
func CatalogTLSKey(i int) func(string) string {
	return func(key string) string {
		if key == "" {
			return fmt.Sprintf("catalogs[%d].hms_tls", i)
		}
		return fmt.Sprintf("catalogs[%d].hms_tls.%s", i, key)
	}
}
