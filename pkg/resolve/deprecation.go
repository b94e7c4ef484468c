package resolve

import (
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Deprecation condition types and reasons on a ClusterExtension (seed 000
// ClusterExtensionStatus.conditions).
const (
	ConditionDeprecated        = "Deprecated"
	ConditionPackageDeprecated = "PackageDeprecated"
	ConditionChannelDeprecated = "ChannelDeprecated"
	ConditionBundleDeprecated  = "BundleDeprecated"

	ReasonDeprecated               = "Deprecated"
	ReasonNotDeprecated            = "NotDeprecated"
	ReasonDeprecationStatusUnknown = "DeprecationStatusUnknown"
	ReasonAbsent                   = "Absent"
)

// deprecationConditions computes the four deprecation conditions from the
// olm.deprecations data of the package in the given catalogs (seed 001
// olm.deprecations; seed 000 ClusterExtensionStatus):
//
//   - PackageDeprecated: True/Deprecated when a package reference exists,
//     else False/NotDeprecated.
//   - ChannelDeprecated: True/Deprecated when a requested channel is
//     referenced (any channel of the package when none is requested), else
//     False/NotDeprecated.
//   - BundleDeprecated: True/Deprecated when the installed bundle is
//     referenced, else False/NotDeprecated; Unknown/Absent when nothing is
//     installed.
//   - Deprecated: the roll-up, True/Deprecated with the True conditions'
//     messages joined by newlines, else False/NotDeprecated.
//
// With no data (len(data) == 0: no selected catalog could be read or has the
// package) all four are Unknown/DeprecationStatusUnknown. With data from
// several catalogs (resolution failed before choosing one) a reference in any
// of them counts. The order is Deprecated, PackageDeprecated,
// ChannelDeprecated, BundleDeprecated.
func deprecationConditions(data []*packageData, pkg string, channels []string, installed *InstalledBundle) []metav1.Condition {
	cond := func(t string, s metav1.ConditionStatus, reason, msg string) metav1.Condition {
		return metav1.Condition{Type: t, Status: s, Reason: reason, Message: msg}
	}
	if len(data) == 0 {
		msg := fmt.Sprintf("no catalog data for package %s is available", pkg)
		return []metav1.Condition{
			cond(ConditionDeprecated, metav1.ConditionUnknown, ReasonDeprecationStatusUnknown, msg),
			cond(ConditionPackageDeprecated, metav1.ConditionUnknown, ReasonDeprecationStatusUnknown, msg),
			cond(ConditionChannelDeprecated, metav1.ConditionUnknown, ReasonDeprecationStatusUnknown, msg),
			cond(ConditionBundleDeprecated, metav1.ConditionUnknown, ReasonDeprecationStatusUnknown, msg),
		}
	}

	var pkgMsgs, chMsgs, bundleMsgs []string
	for _, p := range data {
		if p.depr.pkg != "" {
			pkgMsgs = append(pkgMsgs, p.depr.pkg)
		}
		chans := channels
		if len(chans) == 0 {
			chans = make([]string, 0, len(p.depr.channels))
			for name := range p.depr.channels {
				chans = append(chans, name)
			}
			sort.Strings(chans)
		}
		for _, name := range chans {
			if m, ok := p.depr.channels[name]; ok {
				chMsgs = append(chMsgs, m)
			}
		}
		if installed != nil {
			if m, ok := p.depr.bundles[installed.Name]; ok {
				bundleMsgs = append(bundleMsgs, m)
			}
		}
	}

	var rollup []string
	one := func(t string, msgs []string, falseMsg string) metav1.Condition {
		msgs = uniqueInOrder(msgs)
		if len(msgs) == 0 {
			return cond(t, metav1.ConditionFalse, ReasonNotDeprecated, falseMsg)
		}
		m := strings.Join(msgs, "\n")
		rollup = append(rollup, m)
		return cond(t, metav1.ConditionTrue, ReasonDeprecated, m)
	}
	pc := one(ConditionPackageDeprecated, pkgMsgs, fmt.Sprintf("package %s is not deprecated", pkg))
	chWhat := "no channel of the package is deprecated"
	if len(channels) > 0 {
		chWhat = fmt.Sprintf("channels %v are not deprecated", channels)
	}
	cc := one(ConditionChannelDeprecated, chMsgs, chWhat)
	var bc metav1.Condition
	if installed == nil {
		bc = cond(ConditionBundleDeprecated, metav1.ConditionUnknown, ReasonAbsent, "no bundle is installed")
	} else {
		bc = one(ConditionBundleDeprecated, bundleMsgs, fmt.Sprintf("installed bundle %s is not deprecated", installed.Name))
	}
	var dc metav1.Condition
	if len(rollup) == 0 {
		dc = cond(ConditionDeprecated, metav1.ConditionFalse, ReasonNotDeprecated, "no deprecation applies")
	} else {
		dc = cond(ConditionDeprecated, metav1.ConditionTrue, ReasonDeprecated, strings.Join(rollup, "\n"))
	}
	return []metav1.Condition{dc, pc, cc, bc}
}

// uniqueInOrder trims messages and drops empty and repeated ones.
func uniqueInOrder(msgs []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, m := range msgs {
		m = strings.TrimSpace(m)
		if m == "" || seen[m] {
			continue
		}
		seen[m] = true
		out = append(out, m)
	}
	return out
}
