package inputs

import ctlres "carvel.dev/kapp/pkg/kapp/resources"

// DecodeDoc decodes one document, for the external tests (package
// inputs_test), which compare it with packages that may not be imported
// here.
func DecodeDoc(origin string, data []byte) ([]CRD, []ctlres.Resource, error) {
	return decodeDoc(rawDoc{origin: origin, data: data})
}
