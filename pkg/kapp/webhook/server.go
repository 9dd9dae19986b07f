package webhook

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Server serves a Handler over TLS only.
type Server struct {
	// BindAddress and SecurePort are where to listen (port 0: any free
	// port, see Addr).
	BindAddress string
	SecurePort  int
	Certs       *CertReloader
	// ClientAuth, when set, requires a client certificate of its CA at
	// the TLS handshake (then probes cannot reach the secure port without
	// one: serve them on HealthBindAddress).
	ClientAuth *ClientAuth
	Handler    *Handler
	// ShutdownDelay: on shutdown, /readyz fails at once but reviews are
	// still served for this long, so that endpoints stop routing to the
	// server before it closes (a rolling update, a drained node).
	ShutdownDelay time.Duration
	// Logf gets the server's own messages.
	Logf func(format string, args ...any)

	// Listening, when set, is called with the address once the server
	// listens.
	Listening func(addr net.Addr)

	// HealthBindAddress, when not empty, is the host:port where HealthzPath
	// and ReadyzPath are served over plain HTTP as well (port 0: any free
	// port): for the kubelet's probes, which present no client
	// certificate.
	HealthBindAddress string
	HealthListening   func(addr net.Addr)

	// MetricsBindAddress, when not empty, is the host:port where Metrics
	// are served over plain HTTP at MetricsPath (port 0: any free port).
	MetricsBindAddress string
	Metrics            *Metrics
	// MetricsListening, when set, is called with the metrics address once
	// it listens.
	MetricsListening func(addr net.Addr)
}

// shutdownGrace bounds how long the reviews in flight get to finish on
// shutdown: the longest admission timeout.
const shutdownGrace = MaxAdmissionTimeout

// Run loads the certificate, listens and serves until ctx ends, then shuts
// down gracefully. It returns the error that stopped it (nil after ctx
// ended).
func (s *Server) Run(ctx context.Context) error {
	if err := s.Certs.Load(); err != nil {
		return err
	}
	tlsConfig := s.Certs.TLSConfig()
	if s.ClientAuth != nil {
		if err := s.ClientAuth.Load(); err != nil {
			return err
		}
		tlsConfig = s.ClientAuth.configure(tlsConfig)
	}
	shuttingDown := make(chan struct{})
	s.Handler.Ready = func() error {
		select {
		case <-shuttingDown:
			return errors.New("shutting down")
		default:
		}
		return s.Certs.Ready()
	}
	addr := net.JoinHostPort(s.BindAddress, strconv.Itoa(s.SecurePort))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", addr, err)
	}
	srv := &http.Server{
		Handler:           s.Handler,
		TLSConfig:         tlsConfig,
		ReadHeaderTimeout: 10 * time.Second,
		// A review reads at most MaxRequestBytes and answers within the
		// admission timeout.
		ReadTimeout:    MaxAdmissionTimeout,
		WriteTimeout:   MaxAdmissionTimeout + 5*time.Second,
		IdleTimeout:    90 * time.Second,
		MaxHeaderBytes: 64 << 10,
		// HTTP/1.1 only (see CertReloader.TLSConfig).
		TLSNextProto: map[string]func(*http.Server, *tls.Conn, http.Handler){},
	}
	if s.Logf != nil {
		// TLS handshake errors and the like, through the same log.
		srv.ErrorLog = log.New(logWriter(s.Logf), "", 0)
	}
	var metricsSrv *http.Server
	if s.MetricsBindAddress != "" && s.Metrics != nil {
		mln, err := net.Listen("tcp", s.MetricsBindAddress)
		if err != nil {
			_ = ln.Close()
			return fmt.Errorf("listening on %s for metrics: %w", s.MetricsBindAddress, err)
		}
		mux := http.NewServeMux()
		mux.Handle(MetricsPath, s.Metrics.Handler())
		metricsSrv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
			WriteTimeout: 30 * time.Second, IdleTimeout: 90 * time.Second, MaxHeaderBytes: 64 << 10}
		if s.Logf != nil {
			metricsSrv.ErrorLog = log.New(logWriter(s.Logf), "", 0)
		}
		if s.MetricsListening != nil {
			s.MetricsListening(mln.Addr())
		}
		s.logf("serving metrics on http://%s%s", mln.Addr(), MetricsPath)
		go func() {
			if err := metricsSrv.Serve(mln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				s.logf("serving metrics: %v", err)
			}
		}()
		defer func() { _ = metricsSrv.Close() }()
	}
	if s.HealthBindAddress != "" {
		hln, err := net.Listen("tcp", s.HealthBindAddress)
		if err != nil {
			_ = ln.Close()
			return fmt.Errorf("listening on %s for probes: %w", s.HealthBindAddress, err)
		}
		mux := http.NewServeMux()
		mux.Handle(HealthzPath, s.Handler)
		mux.Handle(ReadyzPath, s.Handler)
		healthSrv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 10 * time.Second,
			WriteTimeout: 10 * time.Second, IdleTimeout: 90 * time.Second, MaxHeaderBytes: 16 << 10}
		if s.HealthListening != nil {
			s.HealthListening(hln.Addr())
		}
		s.logf("serving probes on http://%s%s and %s", hln.Addr(), HealthzPath, ReadyzPath)
		go func() {
			if err := healthSrv.Serve(hln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				s.logf("serving probes: %v", err)
			}
		}()
		defer func() { _ = healthSrv.Close() }()
	}
	if s.Listening != nil {
		s.Listening(ln.Addr())
	}
	s.logf("serving admission reviews on https://%s%s", ln.Addr(), ValidatePath)
	served := make(chan error, 1)
	go func() { served <- srv.ServeTLS(ln, "", "") }()

	select {
	case err := <-served:
		return fmt.Errorf("serving: %w", err)
	case <-ctx.Done():
	}
	close(shuttingDown)
	if s.ShutdownDelay > 0 {
		s.logf("shutting down in %s (not ready meanwhile)", s.ShutdownDelay)
		select {
		case <-time.After(s.ShutdownDelay):
		case err := <-served:
			return fmt.Errorf("serving: %w", err)
		}
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("shutting down: %w", err)
	}
	s.logf("stopped")
	return nil
}

// logWriter writes each write as one log line.
type logWriter func(format string, args ...any)

func (w logWriter) Write(p []byte) (int, error) {
	w("%s", strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func (s *Server) logf(format string, args ...any) {
	if s.Logf != nil {
		s.Logf(format, args...)
	}
}
