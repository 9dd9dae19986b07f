package cmd

import (
	"fmt"
	"runtime/debug"

	cmdcore "carvel.dev/kapp/pkg/kapp/cmd/core"
	kappversion "carvel.dev/kapp/pkg/kapp/version"
	"github.com/cppforlife/go-cli-ui/ui"
	"github.com/spf13/cobra"
)

// Version is the version of this distribution. Release builds set it with
//
//	-ldflags "-X github.com/crdsafety/kapp/pkg/kapp/cmd.Version=v1.2.3"
//
// (see hack/build.sh); otherwise it comes from the build info of the main
// module, or is "develop".
var Version = ""

const (
	defaultVersion = "develop"
	// ProductName names our part of the binary in `kapp version`.
	ProductName = "crd-upgrade-safety"
)

// OurVersion returns the version of this distribution.
func OurVersion() string {
	if Version != "" {
		return Version
	}
	if info, ok := debug.ReadBuildInfo(); ok {
		if v := info.Main.Version; v != "" && v != "(devel)" {
			return v
		}
	}
	return defaultVersion
}

// versionText is printed by `kapp version` and `kapp --version`. The first
// line is upstream's, unchanged, for tools that parse it.
func versionText() string {
	return fmt.Sprintf("kapp version %s\n%s version %s\n", kappversion.Version, ProductName, OurVersion())
}

type VersionOptions struct {
	ui ui.UI
}

func NewVersionOptions(ui ui.UI) *VersionOptions {
	return &VersionOptions{ui}
}

func NewVersionCmd(o *VersionOptions, _ cmdcore.FlagsFactory) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print client version",
		RunE:  func(_ *cobra.Command, _ []string) error { return o.Run() },
	}
}

func (o *VersionOptions) Run() error {
	o.ui.PrintBlock([]byte(versionText()))
	return nil
}
