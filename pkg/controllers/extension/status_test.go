package extension

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	olmv1 "github.com/olm-apiserver/olm-apiserver/pkg/apis/olm/v1"
	"github.com/olm-apiserver/olm-apiserver/pkg/revision"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func cond(st *olmv1.ClusterExtensionStatus, typ string) metav1.Condition {
	if c := findCondition(st.Conditions, typ); c != nil {
		return *c
	}
	return metav1.Condition{}
}

func TestSetStatusConditionMapping(t *testing.T) {
	installed := &revision.Bundle{Name: "test-operator.1.0.0", Version: "1.0.0", Release: "2"}
	tests := []struct {
		name                string
		o                   outcome
		installedStatus     metav1.ConditionStatus
		installedReason     string
		installedMsg        string
		progressingStatus   metav1.ConditionStatus
		progressingReason   string
		progressingMsg      string
		wantInstallStatusOK bool
	}{
		{"succeeded", outcome{installed: installed, reason: olmv1.ReasonSucceeded},
			metav1.ConditionTrue, olmv1.ReasonSucceeded, "Installed bundle test-operator.1.0.0 (version 1.0.0) successfully",
			metav1.ConditionTrue, olmv1.ReasonSucceeded, "Desired state reached", true},
		{"retrying before the first install", retrying("bundle x (version 1): pulling: timeout"),
			metav1.ConditionFalse, olmv1.ReasonFailed, "No bundle installed: bundle x (version 1): pulling: timeout",
			metav1.ConditionTrue, olmv1.ReasonRetrying, "bundle x (version 1): pulling: timeout", false},
		{"blocked before the first install", blocked("no target cluster configured"),
			metav1.ConditionFalse, olmv1.ReasonFailed, "No bundle installed: no target cluster configured",
			metav1.ConditionFalse, olmv1.ReasonBlocked, "no target cluster configured", false},
		{"upgrade blocked keeps Installed", outcome{installed: installed, reason: olmv1.ReasonBlocked, message: "preflight failed"},
			metav1.ConditionTrue, olmv1.ReasonSucceeded, "Installed bundle test-operator.1.0.0 (version 1.0.0) successfully",
			metav1.ConditionFalse, olmv1.ReasonBlocked, "preflight failed", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var st olmv1.ClusterExtensionStatus
			setStatus(&st, 3, 0, tt.o, t0)
			ic, pc := cond(&st, olmv1.TypeInstalled), cond(&st, olmv1.TypeProgressing)
			if ic.Status != tt.installedStatus || ic.Reason != tt.installedReason || ic.Message != tt.installedMsg {
				t.Errorf("Installed = %s/%s %q, want %s/%s %q", ic.Status, ic.Reason, ic.Message, tt.installedStatus, tt.installedReason, tt.installedMsg)
			}
			if pc.Status != tt.progressingStatus || pc.Reason != tt.progressingReason || pc.Message != tt.progressingMsg {
				t.Errorf("Progressing = %s/%s %q, want %s/%s %q", pc.Status, pc.Reason, pc.Message, tt.progressingStatus, tt.progressingReason, tt.progressingMsg)
			}
			if ic.ObservedGeneration != 3 || pc.ObservedGeneration != 3 {
				t.Errorf("observedGeneration = %d, %d; want 3", ic.ObservedGeneration, pc.ObservedGeneration)
			}
			if tt.wantInstallStatusOK {
				if st.Install == nil || st.Install.Bundle != (olmv1.BundleMetadata{Name: "test-operator.1.0.0", Version: "1.0.0", Release: "2"}) {
					t.Errorf("status.install = %+v", st.Install)
				}
			} else if st.Install != nil {
				t.Errorf("status.install = %+v, want nil", st.Install)
			}
		})
	}
}

func TestSetStatusDeprecationConditions(t *testing.T) {
	var st olmv1.ClusterExtensionStatus
	dep := deprecationUnknown("catalog unavailable")
	setStatus(&st, 1, 0, outcome{reason: olmv1.ReasonRetrying, message: "x", deprecation: dep}, t0)
	for _, typ := range []string{olmv1.TypeDeprecated, olmv1.TypePackageDeprecated, olmv1.TypeChannelDeprecated, olmv1.TypeBundleDeprecated} {
		c := cond(&st, typ)
		if c.Status != metav1.ConditionUnknown || c.Reason != olmv1.ReasonDeprecationStatusUnknown || c.ObservedGeneration != 1 {
			t.Errorf("%s = %+v", typ, c)
		}
	}
	// A pass without resolution keeps them.
	setStatus(&st, 1, 0, blocked("y"), t0)
	if len(st.Conditions) != 6 {
		t.Errorf("%d conditions, want 6", len(st.Conditions))
	}
}

func TestSetStatusLastTransitionTime(t *testing.T) {
	var st olmv1.ClusterExtensionStatus
	setStatus(&st, 1, 0, retrying("a"), t0)
	setStatus(&st, 1, 0, retrying("b"), t0.Add(time.Minute))
	if got := cond(&st, olmv1.TypeProgressing); !got.LastTransitionTime.Time.Equal(t0) || got.Message != "b" {
		t.Errorf("same reason: %+v, want time kept and message b", got)
	}
	setStatus(&st, 1, 0, blocked("c"), t0.Add(2*time.Minute))
	if got := cond(&st, olmv1.TypeProgressing); !got.LastTransitionTime.Time.Equal(t0.Add(2 * time.Minute)) {
		t.Errorf("reason change: time %v, want moved", got.LastTransitionTime)
	}
}

func TestProgressDeadline(t *testing.T) {
	const minutes = 10
	var st olmv1.ClusterExtensionStatus
	d := setStatus(&st, 1, minutes, retrying("pull failed"), t0)
	if !d.Equal(t0.Add(10 * time.Minute)) {
		t.Errorf("first deadline %v, want t0+10m", d)
	}
	d = setStatus(&st, 1, minutes, retrying("pull failed again"), t0.Add(9*time.Minute))
	if c := cond(&st, olmv1.TypeProgressing); c.Reason != olmv1.ReasonRetrying || !d.Equal(t0.Add(10*time.Minute)) {
		t.Errorf("before the deadline: %s, deadline %v", c.Reason, d)
	}
	setStatus(&st, 1, minutes, retrying("pull failed once more"), t0.Add(10*time.Minute))
	c := cond(&st, olmv1.TypeProgressing)
	if c.Status != metav1.ConditionFalse || c.Reason != olmv1.ReasonProgressDeadlineExceeded || !strings.Contains(c.Message, "pull failed once more") {
		t.Errorf("at the deadline: %+v", c)
	}
	// Still failing: stays exceeded.
	setStatus(&st, 1, minutes, retrying("still"), t0.Add(20*time.Minute))
	if c := cond(&st, olmv1.TypeProgressing); c.Reason != olmv1.ReasonProgressDeadlineExceeded {
		t.Errorf("after the deadline: %s", c.Reason)
	}
	// A spec change (new generation) restarts the clock.
	d = setStatus(&st, 2, minutes, retrying("x"), t0.Add(21*time.Minute))
	if c := cond(&st, olmv1.TypeProgressing); c.Reason != olmv1.ReasonRetrying || !d.Equal(t0.Add(31*time.Minute)) {
		t.Errorf("new generation: %s, deadline %v", c.Reason, d)
	}
	// Success clears it.
	setStatus(&st, 2, minutes, outcome{installed: &revision.Bundle{Name: "b", Version: "1"}, reason: olmv1.ReasonSucceeded}, t0.Add(40*time.Minute))
	if c := cond(&st, olmv1.TypeProgressing); c.Reason != olmv1.ReasonSucceeded {
		t.Errorf("after success: %s", c.Reason)
	}
	// No deadline set: never exceeded.
	var st2 olmv1.ClusterExtensionStatus
	setStatus(&st2, 1, 0, retrying("a"), t0)
	if d := setStatus(&st2, 1, 0, retrying("a"), t0.Add(1000*time.Hour)); !d.IsZero() || cond(&st2, olmv1.TypeProgressing).Reason != olmv1.ReasonRetrying {
		t.Errorf("without deadline: %v %s", d, cond(&st2, olmv1.TypeProgressing).Reason)
	}
}
