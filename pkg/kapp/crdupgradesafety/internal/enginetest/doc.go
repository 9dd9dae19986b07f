// Package enginetest holds the engine tests' fixtures, shared by the
// engine's rooms: CRDs built from a few lines (NewCRD, TestVersion, With),
// stored objects (Widget), real CRDs from .cache/crds, and findings
// rendered as report.Message words them (Render, GoldenText).
//
// Files:
//
//	enginetest.go  the fixtures
package enginetest
