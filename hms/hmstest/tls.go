package hmstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"time"
)

// KeyPair is a self-signed certificate with its key. It is its own CA, so a
// pool holding it verifies it: enough for a test server, or a test client
// presenting a certificate to a server that trusts exactly that one.
type KeyPair struct {
	Cert    *x509.Certificate
	TLS     tls.Certificate
	CertPEM []byte
	KeyPEM  []byte
}

// NewKeyPair generates a self-signed ECDSA P-256 certificate, valid for a day,
// for the given host names and IP addresses (also usable as a client
// certificate, whose hosts do not matter).
func NewKeyPair(hosts ...string) (*KeyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating a key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("generating a serial number: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{Organization: []string{"hmstest"}, CommonName: "hmstest"},
		NotBefore:             now.Add(-time.Hour), // tolerate clocks slightly behind
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("creating a certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parsing the new certificate: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encoding the key: %w", err)
	}
	return &KeyPair{
		Cert:    cert,
		TLS:     tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: cert},
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
	}, nil
}

// Pool is a certificate pool trusting only this certificate.
func (k *KeyPair) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(k.Cert)
	return p
}

// WithTLS makes the server speak TLS (hive.metastore.use.SSL), as
// httptest.NewTLSServer does: a self-signed certificate for 127.0.0.1, ::1 and
// localhost is generated at start and kept across Down and Up. Clients trust it
// through CertPool, CertPEM or ClientTLSConfig.
func WithTLS() Option { return func(s *Server) { s.tlsOn = true } }

// WithClientCAs makes the server speak TLS and require a client certificate
// that verifies against pool (mutual TLS).
func WithClientCAs(pool *x509.CertPool) Option {
	return func(s *Server) { s.tlsOn, s.clientCAs = true, pool }
}

// setUpTLS generates the server's certificate; Listen calls it after the options.
func (s *Server) setUpTLS() error {
	if !s.tlsOn {
		return nil
	}
	kp, err := NewKeyPair("127.0.0.1", "::1", "localhost")
	if err != nil {
		return fmt.Errorf("TLS certificate: %w", err)
	}
	s.keyPair = kp
	s.tlsConfig = &tls.Config{Certificates: []tls.Certificate{kp.TLS}, MinVersion: tls.VersionTLS12}
	if s.clientCAs != nil {
		s.tlsConfig.ClientCAs = s.clientCAs
		s.tlsConfig.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return nil
}

// wrapConn returns what serveConn reads: the accepted connection itself, or a
// TLS server connection over it. The handshake runs on the first read.
func (s *Server) wrapConn(nc net.Conn) net.Conn {
	if s.tlsConfig == nil {
		return nc
	}
	return tls.Server(nc, s.tlsConfig)
}

// Certificate is the server's TLS certificate; nil without WithTLS.
func (s *Server) Certificate() *x509.Certificate {
	if s.keyPair == nil {
		return nil
	}
	return s.keyPair.Cert
}

// CertPEM is the server's TLS certificate in PEM, what a client's CA file
// (hms_tls.ca_file) holds; nil without WithTLS.
func (s *Server) CertPEM() []byte {
	if s.keyPair == nil {
		return nil
	}
	return s.keyPair.CertPEM
}

// CertPool is a pool trusting the server's certificate; nil without WithTLS.
func (s *Server) CertPool() *x509.CertPool {
	if s.keyPair == nil {
		return nil
	}
	return s.keyPair.Pool()
}

// ClientTLSConfig is a client TLS configuration trusting the server's
// certificate; nil without WithTLS.
func (s *Server) ClientTLSConfig() *tls.Config {
	if s.keyPair == nil {
		return nil
	}
	return &tls.Config{RootCAs: s.keyPair.Pool(), MinVersion: tls.VersionTLS12}
}
