package x

import apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

// Two schemas' CEL rules compared by content, their messages included:
// the schema's own words are what is judged.
func same(a, b apiextv1.ValidationRule) bool {
	return a.Rule == b.Rule && a.Message == b.Message
}
