//! Pod predicates of Karpenter's disruption logic (core: pkg/utils/pod
//! scheduling.go, pkg/utils/disruption): which pods are active, evictable,
//! reschedulable, protected by `karpenter.sh/do-not-disrupt`, and what
//! evicting one costs.
//!
//! karpsim models neither mirror (static) pods nor readiness probes: a pod
//! is Ready when it runs on a node.

use crate::cluster::{OwnerKind, Pod, PodPhase};
use crate::kube::pod::DoNotDisrupt;
use crate::kube::taints::disrupted_no_schedule_taint;
use crate::time::SimTime;

/// Lower and upper clamp of a pod's eviction cost.
pub const EVICTION_COST_BOUNDS: (f64, f64) = (-10.0, 10.0);

/// `pod.namespace/pod.name`, as upstream prints pod keys.
pub fn pod_key(pod: &Pod) -> String {
    format!("{}/{}", pod.spec.namespace, pod.name)
}

/// Succeeded or Failed.
pub fn is_terminal(pod: &Pod) -> bool {
    pod.phase.is_terminal()
}

/// Has a deletion timestamp.
pub fn is_terminating(pod: &Pod) -> bool {
    pod.lifecycle.deleting_since.is_some()
}

/// Neither terminal nor terminating.
pub fn is_active(pod: &Pod) -> bool {
    !is_terminal(pod) && !is_terminating(pod)
}

/// Ready in karpsim's model: running on a node.
pub fn is_ready(pod: &Pod) -> bool {
    pod.phase == PodPhase::Running && pod.node.is_some()
}

/// Whether the pod needs a new home when its node goes: active (or a
/// terminating StatefulSet pod, whose replacement keeps its identity) and
/// not a DaemonSet pod.
pub fn is_reschedulable(pod: &Pod) -> bool {
    let stateful = pod
        .owner
        .as_ref()
        .is_some_and(|o| o.kind == OwnerKind::StatefulSet);
    (is_active(pod) || (stateful && is_terminating(pod))) && !pod.is_daemonset()
}

/// Whether the pod tolerates `karpenter.sh/disrupted:NoSchedule` (then the
/// drain leaves it alone).
pub fn tolerates_disrupted_taint(pod: &Pod) -> bool {
    // Most pods tolerate nothing: the taint is made only for the others.
    !pod.spec.tolerations.is_empty() && {
        let taint = disrupted_no_schedule_taint();
        pod.spec.tolerations.iter().any(|t| t.tolerates(&taint))
    }
}

/// Whether `karpenter.sh/do-not-disrupt` currently protects the pod:
/// `"true"` always; a duration while the pod is younger than it, counted
/// from its start time (unknown start time: protected, as upstream fails
/// safe). A non-positive duration is invalid and ignored.
pub fn is_do_not_disrupt_active(pod: &Pod, now: SimTime) -> bool {
    match pod.spec.do_not_disrupt {
        None => false,
        Some(DoNotDisrupt::Always) => true,
        Some(DoNotDisrupt::For(d)) if d.is_zero() => false,
        Some(DoNotDisrupt::For(d)) => match pod.lifecycle.started_at {
            None => true,
            Some(start) => {
                u128::from(now.saturating_duration_since(start).as_millis()) < d.as_millis()
            }
        },
    }
}

/// When a duration `karpenter.sh/do-not-disrupt` stops protecting the pod
/// ([`is_do_not_disrupt_active`] turns false from this instant on); `None`
/// when its protection never ends on its own (no annotation, `"true"`, an
/// ignored duration, or an unknown start time).
pub fn do_not_disrupt_ends(pod: &Pod) -> Option<SimTime> {
    match pod.spec.do_not_disrupt {
        Some(DoNotDisrupt::For(d)) if !d.is_zero() => {
            let start = pod.lifecycle.started_at?;
            Some(start + crate::time::SimDuration::from_std(d))
        }
        _ => None,
    }
}

/// Whether the drain would call the Eviction API on the pod (and so whether
/// PDBs apply to it).
pub fn is_evictable(pod: &Pod, now: SimTime) -> bool {
    is_active(pod) && !tolerates_disrupted_taint(pod) && !is_do_not_disrupt_active(pod, now)
}

/// Whether the pod lets its node be disrupted voluntarily.
pub fn is_disruptable(pod: &Pod, now: SimTime) -> bool {
    !is_active(pod) || !is_do_not_disrupt_active(pod, now)
}

/// Upstream `EvictionCost`: `1 + deletionCost/2²⁷ + priority/2²⁵`, clamped
/// to [−10, 10].
pub fn eviction_cost(pod: &Pod) -> f64 {
    let cost = 1.0
        + f64::from(pod.spec.deletion_cost) / f64::from(1u32 << 27)
        + f64::from(pod.spec.priority) / f64::from(1u32 << 25);
    cost.clamp(EVICTION_COST_BOUNDS.0, EVICTION_COST_BOUNDS.1)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::cluster::OwnerRef;
    use crate::kube::taints::Toleration;
    use crate::testing::{WithSpec, running_pod};
    use crate::time::SimDuration;

    /// core: pkg/utils/disruption/disruption.go `EvictionCost` (values
    /// derived by hand): deletion cost and priority shift the base cost of
    /// 1, within ±10.
    #[test]
    fn eviction_cost_from_deletion_cost_and_priority() {
        let mut pod = running_pod("a");
        assert_eq!(eviction_cost(&pod), 1.0);
        pod.spec = pod.spec.with(|s| s.deletion_cost = 1 << 27);
        assert_eq!(eviction_cost(&pod), 2.0);
        pod.spec = pod.spec.with(|s| s.priority = -(1 << 26));
        assert_eq!(eviction_cost(&pod), 0.0);
        pod.spec = pod.spec.with(|s| s.priority = 2_000_000_000);
        assert_eq!(eviction_cost(&pod), 10.0);
        pod.spec = pod.spec.with(|s| {
            s.priority = 0;
            s.deletion_cost = i32::MIN;
        });
        assert_eq!(eviction_cost(&pod), -10.0);
    }

    /// core: pkg/utils/pod/scheduling.go `IsDoNotDisruptActive`;
    /// disruption/consolidation_test.go "does not consolidate nodes with pods
    /// that have a duration-based do-not-disrupt annotation that is still
    /// active" and "can consolidate nodes after duration-based do-not-disrupt
    /// annotation expires".
    #[test]
    fn do_not_disrupt_duration_counts_from_start() {
        let mut pod = running_pod("a");
        let now = SimTime::ZERO + SimDuration::from_mins(10);
        assert!(!is_do_not_disrupt_active(&pod, now));
        pod.spec = pod
            .spec
            .with(|s| s.do_not_disrupt = Some(DoNotDisrupt::Always));
        assert!(is_do_not_disrupt_active(&pod, now));
        pod.spec = pod
            .spec
            .with(|s| s.do_not_disrupt = Some(DoNotDisrupt::For(Duration::from_secs(300))));
        pod.lifecycle.started_at = None;
        assert!(
            is_do_not_disrupt_active(&pod, now),
            "unknown start fails safe"
        );
        pod.lifecycle.started_at = Some(SimTime::ZERO + SimDuration::from_mins(6));
        assert!(is_do_not_disrupt_active(&pod, now), "4 minutes old");
        pod.lifecycle.started_at = Some(SimTime::ZERO + SimDuration::from_mins(5));
        assert!(
            !is_do_not_disrupt_active(&pod, now),
            "exactly 5 minutes old"
        );
        pod.spec = pod
            .spec
            .with(|s| s.do_not_disrupt = Some(DoNotDisrupt::For(Duration::ZERO)));
        assert!(
            !is_do_not_disrupt_active(&pod, now),
            "non-positive is invalid"
        );
    }

    /// core: pkg/utils/pod/scheduling.go `IsReschedulable`, `IsEvictable`;
    /// emptiness_test.go "will not consider a node with a terminating
    /// StatefulSet pod as empty".
    #[test]
    fn reschedulable_and_evictable() {
        let mut pod = running_pod("a");
        let now = SimTime::ZERO;
        assert!(is_reschedulable(&pod) && is_evictable(&pod, now));
        pod.owner = Some(OwnerRef {
            kind: OwnerKind::DaemonSet,
            name: "ds".into(),
        });
        assert!(!is_reschedulable(&pod) && is_evictable(&pod, now));
        pod.owner = Some(OwnerRef {
            kind: OwnerKind::StatefulSet,
            name: "db".into(),
        });
        pod.lifecycle.deleting_since = Some(now);
        assert!(
            is_reschedulable(&pod),
            "terminating StatefulSet pods come back"
        );
        assert!(!is_evictable(&pod, now) && is_disruptable(&pod, now));
        pod.lifecycle.deleting_since = None;
        pod.phase = PodPhase::Succeeded;
        assert!(!is_reschedulable(&pod) && !is_evictable(&pod, now));
        pod.phase = PodPhase::Running;
        pod.spec = pod
            .spec
            .with(|s| s.tolerations = vec![Toleration::exists("karpenter.sh/disrupted", None)]);
        assert!(!is_evictable(&pod, now), "tolerates the disrupted taint");
    }
}
