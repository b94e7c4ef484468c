package extension

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	olmv1 "github.com/olm-apiserver/olm-apiserver/pkg/apis/olm/v1"
	"github.com/olm-apiserver/olm-apiserver/pkg/resolve"
	"github.com/olm-apiserver/olm-apiserver/pkg/revision"
)

// outcome is what one reconcile found; setStatus turns it into status.
type outcome struct {
	// installed is the bundle installed on the cluster after this pass (nil:
	// none).
	installed *revision.Bundle
	// reason is Succeeded, Retrying or Blocked; message says why.
	reason  string
	message string
	// deprecation are the four deprecation conditions from resolution (nil
	// when resolution did not run).
	deprecation []metav1.Condition
	// event, when set, is the reason ("Installed", "Upgraded") of a Normal
	// event; eventMessage its message.
	event, eventMessage string
}

func retrying(format string, a ...any) outcome {
	return outcome{reason: olmv1.ReasonRetrying, message: fmt.Sprintf(format, a...)}
}

func blocked(format string, a ...any) outcome {
	return outcome{reason: olmv1.ReasonBlocked, message: fmt.Sprintf(format, a...)}
}

// bundleLabel names a bundle in messages: "test-operator.1.0.0 (version 1.0.0)".
func bundleLabel(name, version string) string {
	return fmt.Sprintf("%s (version %s)", name, version)
}

// setStatus writes o into st as the conditions of the OLM v1 reference
// (seed 000, ClusterExtensionStatus), for an object of the given generation
// and progressDeadlineMinutes, at time now:
//
//   - Installed: True/Succeeded naming the installed bundle and version;
//     False/Failed otherwise, with the cause while nothing is installed;
//   - Progressing: True/Succeeded "Desired state reached"; True/Retrying with
//     the cause; False/Blocked with what needs a human; and, when the
//     deadline is set and Progressing has been Retrying for this generation
//     for longer than it, False/ProgressDeadlineExceeded (kept, with the
//     latest cause, until the extension succeeds, is blocked or its spec
//     changes);
//   - the four deprecation conditions, when resolution ran (otherwise any
//     previous ones are kept);
//   - status.install.bundle from the installed bundle.
//
// A condition's lastTransitionTime changes when its status or reason
// changes. It returns when the deadline will pass (zero when it does not
// apply), so the caller can look again then.
func setStatus(st *olmv1.ClusterExtensionStatus, generation int64, deadlineMinutes int32, o outcome, now time.Time) (deadline time.Time) {
	t := metav1.NewTime(now)
	if o.installed != nil {
		b := o.installed
		setCondition(st, metav1.Condition{Type: olmv1.TypeInstalled, Status: metav1.ConditionTrue, Reason: olmv1.ReasonSucceeded,
			Message: "Installed bundle " + bundleLabel(b.Name, b.Version) + " successfully"}, generation, t)
		st.Install = &olmv1.ClusterExtensionInstallStatus{Bundle: olmv1.BundleMetadata{Name: b.Name, Version: b.Version, Release: b.Release}}
	} else {
		msg := "No bundle installed"
		if o.reason != olmv1.ReasonSucceeded && o.message != "" {
			msg += ": " + o.message
		}
		setCondition(st, metav1.Condition{Type: olmv1.TypeInstalled, Status: metav1.ConditionFalse, Reason: olmv1.ReasonFailed, Message: msg}, generation, t)
		st.Install = nil
	}

	prog := metav1.Condition{Type: olmv1.TypeProgressing, Reason: o.reason, Message: o.message}
	switch o.reason {
	case olmv1.ReasonSucceeded:
		prog.Status = metav1.ConditionTrue
		prog.Message = "Desired state reached"
	case olmv1.ReasonBlocked:
		prog.Status = metav1.ConditionFalse
	default:
		prog.Status = metav1.ConditionTrue
		prog.Reason = olmv1.ReasonRetrying
		if deadlineMinutes > 0 {
			limit := time.Duration(deadlineMinutes) * time.Minute
			prev := findCondition(st.Conditions, olmv1.TypeProgressing)
			switch {
			case prev != nil && prev.ObservedGeneration == generation && prev.Reason == olmv1.ReasonProgressDeadlineExceeded:
				prog.Status, prog.Reason = metav1.ConditionFalse, olmv1.ReasonProgressDeadlineExceeded
			case prev != nil && prev.ObservedGeneration == generation && prev.Reason == olmv1.ReasonRetrying:
				deadline = prev.LastTransitionTime.Add(limit)
				if !now.Before(deadline) {
					prog.Status, prog.Reason = metav1.ConditionFalse, olmv1.ReasonProgressDeadlineExceeded
					deadline = time.Time{}
				}
			default:
				deadline = now.Add(limit)
			}
			if prog.Reason == olmv1.ReasonProgressDeadlineExceeded {
				prog.Message = fmt.Sprintf("Not installed within progressDeadlineMinutes (%d): %s", deadlineMinutes, o.message)
			}
		}
	}
	setCondition(st, prog, generation, t)

	for _, c := range o.deprecation {
		setCondition(st, c, generation, t)
	}
	return deadline
}

// setCondition sets c (with observedGeneration) in st, keeping the previous
// lastTransitionTime when neither status nor reason changed.
func setCondition(st *olmv1.ClusterExtensionStatus, c metav1.Condition, generation int64, now metav1.Time) {
	c.ObservedGeneration = generation
	c.LastTransitionTime = now
	for i := range st.Conditions {
		old := &st.Conditions[i]
		if old.Type != c.Type {
			continue
		}
		if old.Status == c.Status && old.Reason == c.Reason {
			c.LastTransitionTime = old.LastTransitionTime
		}
		*old = c
		return
	}
	st.Conditions = append(st.Conditions, c)
}

func findCondition(conds []metav1.Condition, typ string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == typ {
			return &conds[i]
		}
	}
	return nil
}

// deprecationUnknown are the deprecation conditions when catalog data could
// not be read.
func deprecationUnknown(msg string) []metav1.Condition {
	var out []metav1.Condition
	for _, typ := range []string{resolve.ConditionDeprecated, resolve.ConditionPackageDeprecated, resolve.ConditionChannelDeprecated, resolve.ConditionBundleDeprecated} {
		out = append(out, metav1.Condition{Type: typ, Status: metav1.ConditionUnknown, Reason: resolve.ReasonDeprecationStatusUnknown, Message: msg})
	}
	return out
}
