// Package webhooktest holds what the tests and benchmarks of the admission
// webhook share: a self-signed serving certificate and AdmissionReview
// requests for CRDs.
package webhooktest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// Cert is a self-signed serving certificate written to files.
type Cert struct {
	CertFile, KeyFile string
	// PEM is the certificate, which is its own CA: the caBundle of a
	// webhook configuration, or the root of a client.
	PEM []byte
}

// WriteCert writes a self-signed certificate for 127.0.0.1, ::1 and
// localhost (and the given DNS names) into dir as tls.crt and tls.key.
func WriteCert(dir string, dnsNames ...string) (Cert, error) {
	return writeSelfSigned(dir, "tls", "crd-upgrade-safety-webhook test", x509.ExtKeyUsageServerAuth,
		append([]string{"localhost"}, dnsNames...), []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback})
}

// WriteClientCert writes a self-signed client certificate (its own CA:
// the webhook's --client-ca-file) for commonName and dnsNames into dir as
// client.crt and client.key.
func WriteClientCert(dir, commonName string, dnsNames ...string) (Cert, error) {
	return writeSelfSigned(dir, "client", commonName, x509.ExtKeyUsageClientAuth, dnsNames, nil)
}

func writeSelfSigned(dir, name, commonName string, usage x509.ExtKeyUsage, dnsNames []string, ips []net.IP) (Cert, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Cert{}, err
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		return Cert{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{usage},
		BasicConstraintsValid: true,
		IsCA:                  true,
		DNSNames:              dnsNames,
		IPAddresses:           ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return Cert{}, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return Cert{}, err
	}
	c := Cert{
		CertFile: filepath.Join(dir, name+".crt"),
		KeyFile:  filepath.Join(dir, name+".key"),
		PEM:      pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
	}
	if err := os.WriteFile(c.CertFile, c.PEM, 0o600); err != nil {
		return Cert{}, err
	}
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	if err := os.WriteFile(c.KeyFile, keyPEM, 0o600); err != nil {
		return Cert{}, err
	}
	return c, nil
}

// Request is an AdmissionRequest for a CRD as the apiserver sends it: the
// operation, the CRD as it would be stored (object, nil for a delete) and
// the stored CRD (oldObject, nil for a create).
func Request(op admissionv1.Operation, newCRD, oldCRD *apiextv1.CustomResourceDefinition) (*admissionv1.AdmissionRequest, error) {
	name := ""
	req := &admissionv1.AdmissionRequest{
		UID:         types.UID(fmt.Sprintf("review-%d", time.Now().UnixNano())),
		Kind:        metav1.GroupVersionKind{Group: apiextv1.GroupName, Version: "v1", Kind: "CustomResourceDefinition"},
		Resource:    metav1.GroupVersionResource{Group: apiextv1.GroupName, Version: "v1", Resource: "customresourcedefinitions"},
		RequestKind: &metav1.GroupVersionKind{Group: apiextv1.GroupName, Version: "v1", Kind: "CustomResourceDefinition"},
		Operation:   op,
		UserInfo:    authenticationv1.UserInfo{Username: "test"},
	}
	for _, side := range []struct {
		crd *apiextv1.CustomResourceDefinition
		raw *runtime.RawExtension
	}{{newCRD, &req.Object}, {oldCRD, &req.OldObject}} {
		if side.crd == nil {
			continue
		}
		c := side.crd.DeepCopy()
		c.APIVersion, c.Kind = apiextv1.SchemeGroupVersion.String(), "CustomResourceDefinition"
		data, err := json.Marshal(c)
		if err != nil {
			return nil, err
		}
		side.raw.Raw = data
		name = c.Name
	}
	req.Name = name
	return req, nil
}

// Review is the body the apiserver POSTs for req.
func Review(req *admissionv1.AdmissionRequest) ([]byte, error) {
	return json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "AdmissionReview"},
		Request:  req,
	})
}
