// Command kapp is Carvel kapp with the CRDUpgradeSafety preflight check
// and `kapp tools crd-upgrade-safety`.
package main

import (
	"fmt"
	"os"

	"github.com/cppforlife/cobrautil"
	uierrs "github.com/cppforlife/go-cli-ui/errors"
	"github.com/cppforlife/go-cli-ui/ui"
	"github.com/crdsafety/kapp/pkg/kapp/cmd"

	// Import to initialize client auth plugins.
	_ "k8s.io/client-go/plugin/pkg/client/auth"
)

func main() {
	os.Exit(cmd.ExitStatus(nonExitingMain()))
}

// nonExitingMain does not use os.Exit to make sure Go runs defers (the UI
// flush prints --json output).
func nonExitingMain() error {
	defer startProfile()()
	confUI := ui.NewConfUI(ui.NewNoopLogger())
	defer confUI.Flush()

	ran, err := cmd.NewDefaultKappCmd(confUI).ExecuteC()
	if err != nil {
		if cmd.PrintedDocument(ran) {
			// Straight to standard error: kapp's UI would first end
			// standard output, which holds the document, with an empty line.
			fmt.Fprintf(os.Stderr, "kapp: Error: %v\n", uierrs.NewMultiLineError(err))
		} else {
			confUI.ErrorLinef("kapp: Error: %v", uierrs.NewMultiLineError(err))
		}
		return err
	}

	// A document on standard output (--output json, sarif, ...) ends
	// with the document.
	if !cobrautil.IsCobraManagedCommand(os.Args) && !cmd.PrintedDocument(ran) {
		confUI.PrintLinef("Succeeded")
	}
	return nil
}
