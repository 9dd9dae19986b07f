// Package prooftest holds what the engine's proofs generate and judge by:
// random objects of a schema (ObjGen), mutations of a CRD (MutateCRD), the
// apiserver's own reading of a served version (ServedSchema), and the
// golden cases of pkg/kapp/crdupgradesafety/testdata (GoldenCases).
//
// Files:
//
//	objgen.go   ObjGen: random objects of a structural schema, near its bounds
//	schemas.go  ServedSchema, GoldenCases, MutateCRD and SingleVersion
package prooftest
