package webhook

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"
)

// ClientAuth makes the server require of every client a certificate signed
// by a CA of CAFile (PEM), refused at the TLS handshake otherwise: only
// the apiserver, configured to present one (its AdmissionConfiguration,
// docs/webhook.md "Client certificates"), can send a review. With
// AllowedNames, the certificate must also name one of them, as its
// subject's common name or a DNS name. CAFile is looked at again, at most
// once per CheckInterval, on the next handshake: a CA bundle that fails to
// load keeps the previous one in use.
type ClientAuth struct {
	CAFile       string
	AllowedNames []string
	// CheckInterval: DefaultCertCheckInterval when zero.
	CheckInterval time.Duration
	Logf          func(format string, args ...any)

	mu       sync.Mutex
	pool     *x509.CertPool
	stamp    fileStamp
	lastLook time.Time
	lastErr  error
}

// ErrClientNotAllowed: a client certificate signed by the CA names none of
// the allowed names.
var ErrClientNotAllowed = errors.New("client certificate not allowed")

// Load loads the CA bundle now; the server calls it before serving so that
// a bad file fails the start.
func (a *ClientAuth) Load() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.reload(time.Now())
}

func (a *ClientAuth) reload(now time.Time) error {
	a.lastLook = now
	stamp, err := stampOf(a.CAFile)
	if err != nil {
		return a.failed(fmt.Errorf("loading the client CA: %w", err))
	}
	if a.pool != nil && stamp == a.stamp {
		return nil
	}
	data, err := os.ReadFile(a.CAFile)
	if err != nil {
		return a.failed(fmt.Errorf("loading the client CA: %w", err))
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return a.failed(fmt.Errorf("loading the client CA: no PEM certificate in %s", a.CAFile))
	}
	reloaded := a.pool != nil
	a.pool, a.stamp, a.lastErr = pool, stamp, nil
	if reloaded && a.Logf != nil {
		a.Logf("client CA reloaded from %s", a.CAFile)
	}
	return nil
}

// failed records err, logged when the last look had none (a failure
// repeated at every look is logged once).
func (a *ClientAuth) failed(err error) error {
	if a.Logf != nil && a.lastErr == nil {
		a.Logf("client CA not (re)loaded, keeping the previous one: %v", err)
	}
	a.lastErr = err
	return err
}

// currentPool is the CA pool, looked at again when CheckInterval passed.
func (a *ClientAuth) currentPool() *x509.CertPool {
	a.mu.Lock()
	defer a.mu.Unlock()
	interval := a.CheckInterval
	if interval == 0 {
		interval = DefaultCertCheckInterval
	}
	if now := time.Now(); a.pool == nil || now.Sub(a.lastLook) >= interval {
		_ = a.reload(now)
	}
	return a.pool
}

// configure makes cfg require and verify client certificates.
func (a *ClientAuth) configure(cfg *tls.Config) *tls.Config {
	base := cfg.Clone()
	base.ClientAuth = tls.RequireAndVerifyClientCert
	base.VerifyConnection = a.verifyNames
	return &tls.Config{
		MinVersion: base.MinVersion,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			c := base.Clone()
			c.ClientCAs = a.currentPool()
			if c.ClientCAs == nil {
				return nil, fmt.Errorf("no client CA: %w", a.lastErr)
			}
			return c, nil
		},
		GetCertificate: base.GetCertificate,
		NextProtos:     base.NextProtos,
	}
}

// verifyNames checks the verified client certificate against
// AllowedNames (none: any certificate the CA signed).
func (a *ClientAuth) verifyNames(cs tls.ConnectionState) error {
	if len(a.AllowedNames) == 0 {
		return nil
	}
	if len(cs.PeerCertificates) == 0 {
		return fmt.Errorf("%w: none presented", ErrClientNotAllowed)
	}
	leaf := cs.PeerCertificates[0]
	if slices.Contains(a.AllowedNames, leaf.Subject.CommonName) {
		return nil
	}
	for _, n := range leaf.DNSNames {
		if slices.Contains(a.AllowedNames, n) {
			return nil
		}
	}
	return fmt.Errorf("%w: common name %q, DNS names %q, none of %q", ErrClientNotAllowed,
		leaf.Subject.CommonName, leaf.DNSNames, a.AllowedNames)
}
