package tools

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	goruntime "runtime"
	"strings"
	"syscall"

	cmdcore "carvel.dev/kapp/pkg/kapp/cmd/core"
	"github.com/cppforlife/go-cli-ui/ui"
	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/crdsafety/kapp/pkg/kapp/evaluation"
	"github.com/crdsafety/kapp/pkg/kapp/preflight"
	"github.com/crdsafety/kapp/pkg/kapp/webhook"
	"github.com/spf13/cobra"
)

type CRDUpgradeSafetyWebhookOptions struct {
	ui          ui.UI
	depsFactory cmdcore.DepsFactory

	ServingFlags CRDUpgradeSafetyWebhookServingFlags
	// ConfigFile holds the check's settings, as the file of
	// KAPP_CRD_UPGRADE_SAFETY_CONFIG does; "" for the defaults.
	ConfigFile string

	// Cluster reaches the cluster; nil uses kapp's dynamic client (tests
	// set it).
	Cluster func() (evaluation.Cluster, error)
	// Log receives the server's log; nil: standard error.
	Log io.Writer
	// Context ends the server; nil: SIGINT or SIGTERM (tests set it).
	Context context.Context
	// Listening, when set, is told the address once the server listens.
	Listening func(net.Addr)
	// MetricsListening, when set, is told the metrics address once it
	// listens.
	MetricsListening func(net.Addr)
	// HealthListening, when set, is told the probes' address once it
	// listens.
	HealthListening func(net.Addr)
}

func NewCRDUpgradeSafetyWebhookOptions(ui ui.UI, depsFactory cmdcore.DepsFactory) *CRDUpgradeSafetyWebhookOptions {
	return &CRDUpgradeSafetyWebhookOptions{ui: ui, depsFactory: depsFactory}
}

func NewCRDUpgradeSafetyWebhookCmd(o *CRDUpgradeSafetyWebhookOptions, _ cmdcore.FlagsFactory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "crd-upgrade-safety-webhook",
		Short: "Serve the CRDUpgradeSafety check as a validating admission webhook for CRD updates and deletes",
		Long: `Serve the CRDUpgradeSafety check as a validating admission webhook, so that every
writer of CustomResourceDefinitions (kubectl, Helm, Flux, Argo CD, kapp-controller's
stock kapp, this kapp) is held to it.

It serves admission.k8s.io/v1 AdmissionReview requests at /validate over TLS only
(1.2 or newer), and /healthz and /readyz for probes. An UPDATE of a CRD is judged
as the preflight judges it (the stored CRD against the new one, the stored custom
resources against the new schema); a DELETE is refused while the CRD has custom
resources. Error findings deny the request (403 Forbidden) with the findings in
its message; warnings, and every finding in mode warn, come back as admission
warnings, which kubectl prints. CREATE is always allowed: nothing is stored yet.
Dry-run requests are judged the same way.

--config names a file of the check's settings, the same content as the file of
KAPP_CRD_UPGRADE_SAFETY_CONFIG (mode, failMode, checks, waivers, ...). The
waiver annotations crd-upgrade-safety.kapp.k14s.io/waive and waive-reason on the
CRD are honoured as by the preflight. apiserverRejects does not run: the apiserver
validates a request before it calls validating webhooks.

Each review must finish within the timeout the apiserver gives the call (its
?timeout= parameter, timeoutSeconds of the webhook configuration), less 2s, and
within liveChecksTimeout; when the live checks cannot finish, failMode decides:
closed denies, open allows with a warning.

The cluster is reached with kapp's usual kubeconfig flags, or the pod's service
account when run in a pod. Install manifests: examples/webhook; docs/webhook.md.

--client-ca-file makes the server refuse, at the TLS handshake, every client
without a certificate of that CA (--client-allowed-names: and one of these
names): configure the apiserver to present one (docs/webhook.md, "Client
certificates"), and serve the probes on --health-probe-bind-address.

--metrics-bind-address serves Prometheus metrics at /metrics over plain HTTP on an
address of its own (off by default); --log-format json writes the log, one line
per review, as JSON objects.`,
		RunE: func(_ *cobra.Command, _ []string) error { return o.Run() },
		Example: `
  # Serve on all interfaces, port 9443, with the settings of a file
  kapp tools crd-upgrade-safety-webhook --tls-cert-file /certs/tls.crt --tls-private-key-file /certs/tls.key \
    --config /config/settings.yaml`,
	}
	o.ServingFlags.Set(cmd)
	cmd.Flags().StringVar(&o.ConfigFile, "config", "",
		"Set file with the check's settings (as for KAPP_CRD_UPGRADE_SAFETY_CONFIG: mode, failMode, checks, waivers, ...); default: the built-in defaults")
	return cmd
}

// Run checks the flags, reads the settings, reaches the cluster and
// serves until the context ends (SIGINT or SIGTERM).
func (o *CRDUpgradeSafetyWebhookOptions) Run() error {
	if err := o.ServingFlags.check(); err != nil {
		return err
	}
	logger, err := o.logger()
	if err != nil {
		return err
	}
	cfg, err := o.settings()
	if err != nil {
		return err
	}
	cluster, err := o.cluster()
	if err != nil {
		return err
	}
	ctx, stop := o.context()
	defer stop()
	return o.server(&cfg, cluster, logger).Run(ctx)
}

// logger writes the server's log to o.Log (standard error when nil) in
// --log-format.
func (o *CRDUpgradeSafetyWebhookOptions) logger() (*webhook.Logger, error) {
	out := o.Log
	if out == nil {
		out = os.Stderr
	}
	logger, err := webhook.NewLogger(out, o.ServingFlags.LogFormat)
	if err != nil {
		return nil, fmt.Errorf("--log-format: %w", err)
	}
	return logger, nil
}

// settings are the check's settings of --config (the defaults without
// it), as the webhook applies them.
func (o *CRDUpgradeSafetyWebhookOptions) settings() (config.Settings, error) {
	cfg := config.Default()
	if o.ConfigFile != "" {
		var err error
		if cfg, _, err = config.ReadFile(o.ConfigFile); err != nil {
			return config.Settings{}, fmt.Errorf("reading --config: %w", err)
		}
	}
	return webhook.WebhookSettings(cfg), nil
}

func (o *CRDUpgradeSafetyWebhookOptions) cluster() (evaluation.Cluster, error) {
	if o.Cluster != nil {
		return o.Cluster()
	}
	return preflight.ClusterFromDeps(o.depsFactory)()
}

// context ends the server: o.Context, or SIGINT or SIGTERM.
func (o *CRDUpgradeSafetyWebhookOptions) context() (context.Context, context.CancelFunc) {
	if o.Context != nil {
		return o.Context, func() {}
	}
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// server assembles the webhook's server from the serving flags, and logs
// its settings.
func (o *CRDUpgradeSafetyWebhookOptions) server(cfg *config.Settings, cluster evaluation.Cluster, logger *webhook.Logger) *webhook.Server {
	f := o.ServingFlags
	inflight := f.MaxRequestsInflight
	if inflight == 0 {
		inflight = max(4, 2*goruntime.GOMAXPROCS(0))
	}
	logger.Printf("settings: mode %s, failMode %s, %d waivers, liveChecksTimeout %s (config: %s); at most %d reviews at once",
		cfg.Mode, cfg.FailMode, len(cfg.Waivers), cfg.LiveChecksTimeout, orDefault(o.ConfigFile, "built-in defaults"), inflight)

	certs := &webhook.CertReloader{CertFile: f.TLSCertFile, KeyFile: f.TLSPrivateKeyFile, Logf: logger.Printf}
	var metrics *webhook.Metrics
	if f.MetricsBindAddress != "" {
		metrics = webhook.NewMetrics(certs)
	}
	reviewer := &webhook.Reviewer{Settings: cfg, Cluster: cluster, Logf: logger.Printf, LogFields: logger.Fields, Metrics: metrics}
	var clientAuth *webhook.ClientAuth
	if f.ClientCAFile != "" {
		clientAuth = &webhook.ClientAuth{CAFile: f.ClientCAFile, AllowedNames: f.ClientAllowedNames, Logf: logger.Printf}
		logger.Printf("clients must present a certificate of the CA of %s (allowed names: %s)", f.ClientCAFile,
			orDefault(strings.Join(f.ClientAllowedNames, ","), "any"))
	}
	return &webhook.Server{
		ClientAuth:         clientAuth,
		HealthBindAddress:  f.HealthBindAddress,
		HealthListening:    o.HealthListening,
		BindAddress:        f.BindAddress,
		SecurePort:         f.SecurePort,
		Certs:              certs,
		Handler:            webhook.NewHandler(reviewer, inflight),
		ShutdownDelay:      f.ShutdownDelay,
		Logf:               logger.Printf,
		Listening:          o.Listening,
		MetricsBindAddress: f.MetricsBindAddress,
		Metrics:            metrics,
		MetricsListening:   o.MetricsListening,
	}
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
