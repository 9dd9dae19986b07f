package tools

import (
	"strings"

	"github.com/crdsafety/kapp/pkg/kapp/config"
	"github.com/spf13/cobra"
)

// The flags of `kapp tools crd-upgrade-safety`, as kapp keeps its
// commands' flags (cmd/app/deploy_flags.go): a struct per concern, each
// with its Set. The command checks them in crd_upgrade_safety_inputs.go
// (inputs) and crd_upgrade_safety_output.go (outputs).

// CRDUpgradeSafetyFileFlags are the inputs: old CRDs (--file, or --git-ref,
// optional) and new CRDs (--file2). kapp's tools.FileFlags is not reused:
// its --sort flag means nothing here and its help text does not say which
// side is which.
type CRDUpgradeSafetyFileFlags struct {
	OldFiles []string
	NewFiles []string
	// GitRefs: the old CRDs are the NewFiles paths at each of these git
	// revisions (each a baseline, compared with in turn): at the merge
	// base of the revision and HEAD, or with GitRefTip at the revision.
	GitRefs   []string
	GitRefTip bool
	// GitStaged: the new CRDs are the NewFiles paths as staged in git's
	// index (a pre-commit hook), not as they are on disk.
	GitStaged bool
	// Objects: files or directories of sample custom resources, read as
	// stored objects when there is no cluster.
	Objects []string
}

func (s *CRDUpgradeSafetyFileFlags) Set(cmd *cobra.Command) {
	cmd.Flags().StringSliceVarP(&s.OldFiles, "file", "f", nil,
		"Set file with the old CRDs (format: /tmp/foo, https://..., -) (can repeat); without it (or --git-ref) the old CRDs are read from the cluster")
	cmd.Flags().StringSliceVar(&s.NewFiles, "file2", nil,
		"Set file with the new CRDs and any kapp Config (format: /tmp/foo, https://..., -) (can repeat)")
	// Not a slice flag: a git revision may hold a comma.
	cmd.Flags().StringArrayVar(&s.GitRefs, "git-ref", nil,
		"Set git revision (e.g. origin/main) whose --file2 paths hold the old CRDs, read at its merge base with HEAD (what a pull request changes); "+
			"CRDs whose file moved are found by name (can repeat: each is a baseline compared with, e.g. the last two release tags)")
	cmd.Flags().BoolVar(&s.GitRefTip, "git-ref-tip", false,
		"Read the old CRDs at each --git-ref revision itself, not at its merge base with HEAD (also reports what the revision changed since HEAD branched off it)")
	cmd.Flags().BoolVar(&s.GitStaged, "git-staged", false,
		"Read the new CRDs from the --file2 paths as staged in git's index, not as they are on disk (a pre-commit hook: --git-ref HEAD --git-staged)")
	cmd.Flags().StringSliceVar(&s.Objects, "objects", nil,
		"Set file or directory of sample custom resources (e.g. config/samples/) to read as stored objects, with --file or --git-ref (from the working tree) (can repeat)")
}

// CRDUpgradeSafetyConversionFlags name a conversion webhook the user runs
// (in CI, envtest-style) to probe instead of the one each new CRD names.
type CRDUpgradeSafetyConversionFlags struct {
	// WebhookURL replaces the clientConfig of every new CRD that converts
	// through a webhook; the probe then runs for them (with --objects, or
	// against the cluster's stored objects).
	WebhookURL string
	// WebhookCAFile is the PEM bundle that verifies its certificate.
	WebhookCAFile string
}

func (s *CRDUpgradeSafetyConversionFlags) Set(cmd *cobra.Command) {
	cmd.Flags().StringVar(&s.WebhookURL, "conversion-webhook-url", "",
		"Set conversion webhook to probe with the stored objects (--objects, or the cluster's) instead of the one each new CRD names "+
			"(format: https://127.0.0.1:9443/convert): a webhook run locally, envtest-style")
	cmd.Flags().StringVar(&s.WebhookCAFile, "conversion-webhook-ca-file", "",
		"Set PEM file of the CA that signs the certificate of --conversion-webhook-url")
}

// CRDUpgradeSafetyFlags are the outputs and how the check judges.
type CRDUpgradeSafetyFlags struct {
	// Output is one of table, markdown, github, sarif, json.
	Output string
	// OutputFiles are more outputs of the run, "KIND=PATH" each.
	OutputFiles []string
	// DefaultUpdateStrategy is the update strategy of CRDs without a
	// kapp.k14s.io/update-strategy annotation, as kapp deploy's
	// --apply-default-update-strategy.
	DefaultUpdateStrategy string
	// KubeVersion is the Kubernetes version an offline run judges for
	// (--kube-version: 1.35, 1.36 or 1.37; "" the newest). A run against
	// the cluster judges for the apiserver's version.
	KubeVersion string
}

func (s *CRDUpgradeSafetyFlags) Set(cmd *cobra.Command) {
	cmd.Flags().StringVar(&s.Output, "output", OutputTable,
		"Set output format ("+strings.Join(outputs, ", ")+")")
	cmd.Flags().StringArrayVar(&s.OutputFiles, "output-file", nil,
		"Set another output of the same run, written to a file (format: KIND=PATH, KIND one of "+strings.Join(outputs, ", ")+") (can repeat)")
	cmd.Flags().StringVar(&s.DefaultUpdateStrategy, "apply-default-update-strategy", "",
		"Set the update strategy kapp deploy uses for CRDs without a kapp.k14s.io/update-strategy annotation, as its flag of the same name "+
			"(always-replace and fallback-on-replace delete and recreate CRDs)")
	cmd.Flags().StringVar(&s.KubeVersion, "kube-version", "",
		"Set Kubernetes version to judge for offline, where the verdict depends on it ("+supportedKubeVersions()+"; default "+
			config.DefaultKubeVersion.String()+"); against the cluster, its apiserver's version")
}

// supportedKubeVersions lists the values --kube-version takes.
func supportedKubeVersions() string {
	vs := make([]string, len(config.SupportedKubeVersions))
	for i, v := range config.SupportedKubeVersions {
		vs[i] = v.String()
	}
	return strings.Join(vs, ", ")
}
