package crdupgradesafety_test

import (
	"github.com/crdsafety/kapp/pkg/kapp/crdupgradesafety"
	"github.com/crdsafety/kapp/pkg/kapp/report"
)

// The engine records facts; its tests read findings as the outputs word
// them, through the one function that does (report.Message).
func init() { crdupgradesafety.SetRenderMessage(report.Message) }
