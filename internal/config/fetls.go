package config

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/hmssync/hmssync/internal/redact"
)

// FETLS is TLS towards the FE (fe.tls), used when fe.url is https://.
// Without ca_file the system's roots verify the FE.
type FETLS struct {
	CAFile             string `yaml:"ca_file"`
	CertFile           string `yaml:"cert_file"`
	KeyFile            string `yaml:"key_file"`
	ServerName         string `yaml:"server_name"`
	InsecureSkipVerify bool   `yaml:"insecure_skip_verify"`
}

func (t FETLS) anySet() bool {
	return t.CAFile != "" || t.CertFile != "" || t.KeyFile != "" || t.ServerName != "" || t.InsecureSkipVerify
}

// feTLSKey names an fe.tls key in errors.
func feTLSKey(key string) string {
	if key == "" {
		return "fe.tls"
	}
	return "fe.tls." + key
}

// FEHTTPClient is the HTTP client of the applier: for an https:// fe.url it
// verifies the FE as fe.tls says (read here, so a wrong file is a start-up
// error), for http:// it refuses fe.tls keys, which would be ignored.
func FEHTTPClient(f FE) (*http.Client, error) {
	u, err := url.Parse(f.URL)
	if err != nil {
		// Not err itself: url.Parse's error repeats the URL, password and all.
		return nil, fmt.Errorf("fe.url %q: want http://host:port or https://host:port", redact.URL(f.URL))
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if u.Scheme != "https" {
		if f.TLS.anySet() {
			return nil, errors.New("fe.tls is set but fe.url is not https://: want an https:// fe.url, or remove fe.tls")
		}
		return &http.Client{Transport: tr}, nil
	}
	hc := HMSTLS{Enabled: true, CAFile: f.TLS.CAFile, CertFile: f.TLS.CertFile, KeyFile: f.TLS.KeyFile,
		ServerName: f.TLS.ServerName, InsecureSkipVerify: f.TLS.InsecureSkipVerify}
	cfg, err := hc.ClientConfig(feTLSKey)
	if err != nil {
		return nil, err
	}
	tr.TLSClientConfig = cfg
	return &http.Client{Transport: tr}, nil
}
