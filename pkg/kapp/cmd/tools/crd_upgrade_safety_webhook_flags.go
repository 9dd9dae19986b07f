package tools

import (
	"fmt"
	"io"
	"net"
	"time"

	"github.com/crdsafety/kapp/pkg/kapp/webhook"
	"github.com/spf13/cobra"
)

// CRDUpgradeSafetyWebhookServingFlags are the serving flags, named as
// Kubernetes components name them.
type CRDUpgradeSafetyWebhookServingFlags struct {
	BindAddress         string
	SecurePort          int
	TLSCertFile         string
	TLSPrivateKeyFile   string
	MaxRequestsInflight int
	ShutdownDelay       time.Duration
	MetricsBindAddress  string
	LogFormat           string
	ClientCAFile        string
	ClientAllowedNames  []string
	HealthBindAddress   string
}

// DefaultWebhookPort is the default of --secure-port.
const DefaultWebhookPort = 9443

func (s *CRDUpgradeSafetyWebhookServingFlags) Set(cmd *cobra.Command) {
	cmd.Flags().StringVar(&s.BindAddress, "bind-address", "0.0.0.0",
		"Set the IP address on which to listen for --secure-port (0.0.0.0 or :: for all interfaces)")
	cmd.Flags().IntVar(&s.SecurePort, "secure-port", DefaultWebhookPort,
		"Set the port on which to serve HTTPS (0: any free port, logged at start)")
	cmd.Flags().StringVar(&s.TLSCertFile, "tls-cert-file", "",
		"Set file containing the x509 serving certificate (PEM, with any intermediates after it); reloaded when it changes")
	cmd.Flags().StringVar(&s.TLSPrivateKeyFile, "tls-private-key-file", "",
		"Set file containing the x509 private key matching --tls-cert-file; reloaded when it changes")
	cmd.Flags().IntVar(&s.MaxRequestsInflight, "max-requests-inflight", 0,
		"Set maximum number of reviews read and evaluated at once; the others wait within their deadline, their bodies unread (0: twice the number of CPUs, at least 4)")
	cmd.Flags().DurationVar(&s.ShutdownDelay, "shutdown-delay-duration", 0,
		"Set time to keep serving after SIGTERM with /readyz failing, so that endpoints stop routing to this replica first")
	cmd.Flags().StringVar(&s.MetricsBindAddress, "metrics-bind-address", "",
		"Set host:port on which to serve Prometheus metrics at /metrics over plain HTTP, apart from the reviews (e.g. :8080; empty: off)")
	cmd.Flags().StringVar(&s.LogFormat, "log-format", webhook.LogFormatText,
		"Set log format: text (a timestamp and key=value fields, one line per review) or json (one JSON object per line)")
	cmd.Flags().StringVar(&s.ClientCAFile, "client-ca-file", "",
		"Set file of CA certificates (PEM): every client must present a certificate signed by one of them, or is refused at the TLS handshake (the apiserver's AdmissionConfiguration, docs/webhook.md); reloaded when it changes; empty: any client")
	cmd.Flags().StringSliceVar(&s.ClientAllowedNames, "client-allowed-names", nil,
		"Set names (common name or DNS name) of which a client certificate must hold one, with --client-ca-file (empty: any certificate of the CA)")
	cmd.Flags().StringVar(&s.HealthBindAddress, "health-probe-bind-address", "",
		"Set host:port on which to serve /healthz and /readyz over plain HTTP as well, for probes that present no client certificate (e.g. :8081; empty: off)")
}

// check checks the serving flags that need nothing read.
func (f CRDUpgradeSafetyWebhookServingFlags) check() error {
	if f.TLSCertFile == "" || f.TLSPrivateKeyFile == "" {
		return fmt.Errorf("expected --tls-cert-file and --tls-private-key-file: the webhook serves TLS only")
	}
	if f.SecurePort < 0 || f.SecurePort > 65535 {
		return fmt.Errorf("expected --secure-port between 0 and 65535, got %d", f.SecurePort)
	}
	if f.MaxRequestsInflight < 0 || f.ShutdownDelay < 0 {
		return fmt.Errorf("expected --max-requests-inflight and --shutdown-delay-duration not to be negative")
	}
	if _, err := webhook.NewLogger(io.Discard, f.LogFormat); err != nil {
		return fmt.Errorf("--log-format: %w", err)
	}
	if f.MetricsBindAddress != "" {
		if _, _, err := net.SplitHostPort(f.MetricsBindAddress); err != nil {
			return fmt.Errorf("expected --metrics-bind-address as host:port: %w", err)
		}
	}
	if f.HealthBindAddress != "" {
		if _, _, err := net.SplitHostPort(f.HealthBindAddress); err != nil {
			return fmt.Errorf("expected --health-probe-bind-address as host:port: %w", err)
		}
	}
	if len(f.ClientAllowedNames) > 0 && f.ClientCAFile == "" {
		return fmt.Errorf("expected --client-ca-file with --client-allowed-names")
	}
	return nil
}
