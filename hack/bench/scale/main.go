// Command scale drives the scale benchmarks of issue 10 (hack/bench-memory.sh,
// hack/bench-deploy.sh, hack/bench-live.sh): it generates inputs from the
// real CRDs of .cache/crds, fills a cluster with custom resources through the
// API, runs the kapp binary and measures it (wall time, peak RSS from the
// kernel's rusage, apiserver request counts from its metrics).
//
//	scale grow -src FILE -size BYTES -out DIR
//	    a CRD grown to about BYTES (copies of ^.spec's schema under new
//	    properties), written as DIR/old.yaml and DIR/new.yaml (a safe change:
//	    a new optional field and a description edit)
//	scale memory [-runs N] -kapp BIN NAME OLD NEW [NAME OLD NEW ...]
//	    runs `kapp tools crd-upgrade-safety -f OLD --file2 NEW` and prints
//	    input bytes, peak RSS and their ratio per input
//	scale deploy ...    see deploy.go
//	scale live ...      see live.go
//	scale offline ...   see offline.go
//	scale webhook ...   see webhook.go
//	scale soak ...      see soak.go (hack/soak-webhook.sh)
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	cmds := map[string]func([]string) error{
		"grow":    grow,
		"change":  change,
		"app":     appCmd,
		"memory":  memory,
		"deploy":  deploy,
		"live":    live,
		"offline": offline,
		"webhook": webhookBench,
		"soak":    soak,
		"list":    listBench,
		// The server of the webhook benchmark, in its own process.
		"webhook-serve": webhookServe,
	}
	cmd, ok := cmds[os.Args[1]]
	if !ok {
		usage()
	}
	if err := cmd(os.Args[2:]); err != nil {
		fmt.Fprintf(os.Stderr, "scale %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: scale grow|change|app|memory|deploy|live|offline|webhook|soak|list [flags] (see hack/bench/scale/main.go)")
	os.Exit(2)
}
