package config

import (
	"fmt"
	"strconv"
	"strings"
)

// KubeVersion is the Kubernetes version (major.minor) whose apiserver the
// check judges for, where its judgement differs by version (Kubernetes
// 1.37's validation enforces the ranges of the numeric formats, 1.35's
// ignores them). A live run (a deploy, the tools command against the
// cluster, the webhook) takes it from the apiserver's version; an offline
// run from --kube-version. The zero value is DefaultKubeVersion.
type KubeVersion struct {
	Major, Minor int
}

// SupportedKubeVersions are the versions --kube-version accepts, oldest
// first: those the community supports.
var SupportedKubeVersions = []KubeVersion{{1, 35}, {1, 36}, {1, 37}}

// DefaultKubeVersion is the newest supported version: what an offline run
// judges for unless told otherwise.
var DefaultKubeVersion = SupportedKubeVersions[len(SupportedKubeVersions)-1]

// KubeVersionEnforcingNumericFormats is the first version whose
// validation enforces the int32, int64, float and double ranges.
var KubeVersionEnforcingNumericFormats = KubeVersion{1, 37}

// KubeVersionCELListSemantics is the first version whose CEL rules compare
// (==) and add (+) lists of x-kubernetes-list-type set and map with the
// semantics of kubernetes#140293 (equality counts duplicates, + merges by
// key); older apiservers evaluate stored objects' rules otherwise.
var KubeVersionCELListSemantics = KubeVersion{1, 37}

// KubeVersionKeepingManagedFields is the first version whose apiserver
// keeps an object's managedFields on a write while the CRD's conversion
// webhook is down; older ones drop them all when the entries name two or
// more versions (kubernetes#136919).
var KubeVersionKeepingManagedFields = KubeVersion{1, 37}

// OrDefault is v, or DefaultKubeVersion when v is the zero value.
func (v KubeVersion) OrDefault() KubeVersion {
	if v == (KubeVersion{}) {
		return DefaultKubeVersion
	}
	return v
}

// AtLeast reports whether v (or the default, for the zero value) is o or
// newer.
func (v KubeVersion) AtLeast(o KubeVersion) bool {
	v = v.OrDefault()
	return v.Major > o.Major || v.Major == o.Major && v.Minor >= o.Minor
}

func (v KubeVersion) String() string {
	v = v.OrDefault()
	return fmt.Sprintf("%d.%d", v.Major, v.Minor)
}

// ErrUnsupportedKubeVersion is returned by ParseKubeVersion for a version
// it does not accept.
var ErrUnsupportedKubeVersion = fmt.Errorf("unsupported Kubernetes version")

// ParseKubeVersion reads a supported version as --kube-version takes it
// ("1.37", also "v1.37"); any other value is an error naming the allowed
// ones.
func ParseKubeVersion(s string) (KubeVersion, error) {
	allowed := make([]string, len(SupportedKubeVersions))
	for i, v := range SupportedKubeVersions {
		allowed[i] = v.String()
		if strings.TrimPrefix(s, "v") == allowed[i] {
			return v, nil
		}
	}
	return KubeVersion{}, fmt.Errorf("%w %q: expected one of %s", ErrUnsupportedKubeVersion, s, strings.Join(allowed, ", "))
}

// KubeVersionOfServer reads the version an apiserver reports (the major
// and minor of its /version; providers append "+" to the minor, "28+"),
// whatever it is: a newer apiserver judges as the newest rules known, an
// older one as the oldest.
func KubeVersionOfServer(major, minor string) (KubeVersion, error) {
	ma, err1 := strconv.Atoi(strings.TrimSuffix(major, "+"))
	mi, err2 := strconv.Atoi(strings.TrimRight(minor, "+"))
	if err1 != nil || err2 != nil || ma < 1 || mi < 0 {
		return KubeVersion{}, fmt.Errorf("%w: the apiserver reports major %q, minor %q", ErrUnsupportedKubeVersion, major, minor)
	}
	return KubeVersion{ma, mi}, nil
}
