package main

import (
	"os"

	"carvel.dev/kapp/pkg/kapp/cmd"
	cmdapp "carvel.dev/kapp/pkg/kapp/cmd/app"
	"github.com/cppforlife/go-cli-ui/ui"
	_ "github.com/spf13/cobra"
	_ "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	_ "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	_ "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	_ "k8s.io/client-go/dynamic"
	_ "k8s.io/client-go/plugin/pkg/client/auth"
	_ "sigs.k8s.io/yaml"
	_ "github.com/stretchr/testify/require"
)

func main() {
	confUI := ui.NewConfUI(ui.NewNoopLogger())
	defer confUI.Flush()
	if err := cmd.NewDefaultKappCmd(confUI).Execute(); err != nil {
		if e, ok := err.(cmdapp.ExitStatus); ok {
			os.Exit(e.ExitStatus())
		}
		os.Exit(1)
	}
}
