package webhook

import (
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"reflect"
	"sync"
	"time"
)

// CertReloader serves the key pair of two files and loads it again when
// either file changes (its modification time or size), without a restart:
// a renewed Secret (cert-manager, a mounted volume updated by the kubelet)
// takes effect on the next TLS handshake. The files are looked at, at
// most, once per CheckInterval. A pair that fails to load (half written,
// not matching) keeps the previous one in use and is tried again on the
// next look.
type CertReloader struct {
	CertFile, KeyFile string
	// CheckInterval is the least time between two looks at the files;
	// DefaultCertCheckInterval when zero.
	CheckInterval time.Duration
	// Logf, when set, is told of every reload and failed reload.
	Logf func(format string, args ...any)

	mu        sync.Mutex
	cert      *tls.Certificate
	certStamp fileStamp
	keyStamp  fileStamp
	lastLook  time.Time
	lastErr   error
}

// DefaultCertCheckInterval is how often the certificate files are looked at.
const DefaultCertCheckInterval = time.Second

type fileStamp struct {
	mod  time.Time
	size int64
}

func stampOf(path string) (fileStamp, error) {
	st, err := os.Stat(path)
	if err != nil {
		return fileStamp{}, err
	}
	return fileStamp{mod: st.ModTime(), size: st.Size()}, nil
}

// Load loads the key pair now; the server calls it once before serving so
// that bad files fail the start.
func (c *CertReloader) Load() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reload(time.Now())
}

// Ready reports whether a key pair is loaded.
func (c *CertReloader) Ready() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cert == nil {
		if c.lastErr != nil {
			return c.lastErr
		}
		return errors.New("no serving certificate loaded")
	}
	return nil
}

// NotAfter is the end of validity of the certificate served (the first
// of the chain); zero when none is loaded.
func (c *CertReloader) NotAfter() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cert == nil || c.cert.Leaf == nil {
		return time.Time{}
	}
	return c.cert.Leaf.NotAfter
}

// GetCertificate is tls.Config.GetCertificate.
func (c *CertReloader) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	interval := c.CheckInterval
	if interval == 0 {
		interval = DefaultCertCheckInterval
	}
	if now := time.Now(); c.cert == nil || now.Sub(c.lastLook) >= interval {
		_ = c.reload(now) // on failure the previous pair stays in use
	}
	if c.cert == nil {
		return nil, fmt.Errorf("no serving certificate: %w", c.lastErr)
	}
	return c.cert, nil
}

// reload loads the pair when the files changed since the last load.
func (c *CertReloader) reload(now time.Time) error {
	c.lastLook = now
	certStamp, err := stampOf(c.CertFile)
	if err != nil {
		return c.failed(err)
	}
	keyStamp, err := stampOf(c.KeyFile)
	if err != nil {
		return c.failed(err)
	}
	if c.cert != nil && certStamp == c.certStamp && keyStamp == c.keyStamp {
		return nil
	}
	pair, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
	if err != nil {
		return c.failed(fmt.Errorf("loading the serving certificate: %w", err))
	}
	reloaded := c.cert != nil
	c.cert, c.certStamp, c.keyStamp, c.lastErr = &pair, certStamp, keyStamp, nil
	if c.Logf != nil && reloaded {
		c.Logf("serving certificate reloaded from %s and %s", c.CertFile, c.KeyFile)
	}
	return nil
}

func (c *CertReloader) failed(err error) error {
	// Logged once per failure: a new one is an error value that differs
	// (its type or fields) from the last.
	if c.Logf != nil && (c.lastErr == nil || !reflect.DeepEqual(c.lastErr, err)) {
		c.Logf("serving certificate not (re)loaded, keeping the previous one: %v", err)
	}
	c.lastErr = err
	return err
}

// TLSConfig is the server's TLS configuration: TLS 1.2 or newer, the
// certificate from c, HTTP/1.1 only. The apiserver calls webhooks behind a
// Service over HTTP/1.1 (one connection per request in flight, which
// spreads them over the replicas); HTTP/2 would only add its attack surface
// (rapid reset, CVE-2023-44487) and its shared flow-control window, which
// starves some of many large reviews sent at once on one connection.
func (c *CertReloader) TLSConfig() *tls.Config {
	return &tls.Config{
		MinVersion:     tls.VersionTLS12,
		GetCertificate: c.GetCertificate,
		NextProtos:     []string{"http/1.1"},
	}
}
