//! Drift and expiration (core: nodeclaim/disruption/drift.go,
//! apis/v1/nodepool.go `Hash`, nodeclaim/expiration/controller.go).
//!
//! The NodePool template hash is karpsim's own (FNV-1a over a canonical
//! encoding), not upstream's hashstructure value, but it covers the same
//! fields: template labels, annotations, taints, startup taints,
//! nodeClassRef, expireAfter and terminationGracePeriod. Requirements are
//! left out (a requirement change drifts only the nodes it no longer
//! admits), and so are weight, limits and the disruption block. Taint lists
//! hash as sets, as upstream's `SlicesAsSets`.

use crate::cluster::{ClaimLifecycle, Cluster, Node, NodeId};
use crate::kube::labels::LabelKeySet;
use crate::kube::requirements::Requirements;
use crate::kube::taints::Taint;
use crate::nodepool::NodePool;
use crate::time::{SimDuration, SimTime};

/// Version tag of [`nodepool_hash`], bumped whenever its input changes.
pub const NODEPOOL_HASH_VERSION: &str = "karpsim-v1";

/// Why a NodeClaim drifted (upstream condition reasons).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DriftReason {
    /// The NodePool template hash changed.
    NodePoolDrifted,
    /// The NodePool requirements no longer admit the node's labels.
    RequirementsDrifted,
}

impl DriftReason {
    /// Upstream's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            DriftReason::NodePoolDrifted => "NodePoolDrifted",
            DriftReason::RequirementsDrifted => "RequirementsDrifted",
        }
    }
}

struct Fnv(u64);

impl Fnv {
    fn bytes(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 ^= u64::from(*b);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }

    /// A length-prefixed field, so adjacent fields cannot run together.
    fn field(&mut self, text: &str) {
        self.bytes(&(text.len() as u64).to_le_bytes());
        self.bytes(text.as_bytes());
    }
}

fn taint_set(taints: &[Taint]) -> Vec<(String, String, &'static str)> {
    let mut set: Vec<_> = taints
        .iter()
        .map(|t| (t.key.clone(), t.value.clone(), t.effect.as_str()))
        .collect();
    set.sort();
    set.dedup();
    set
}

/// The NodePool template hash stamped on NodeClaims at launch.
pub fn nodepool_hash(pool: &NodePool) -> String {
    let mut h = Fnv(0xcbf2_9ce4_8422_2325);
    let section = |h: &mut Fnv, name: &str, entries: Vec<String>| {
        h.field(name);
        h.bytes(&(entries.len() as u64).to_le_bytes());
        for e in entries {
            h.field(&e);
        }
    };
    section(
        &mut h,
        "labels",
        pool.labels
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect(),
    );
    section(
        &mut h,
        "annotations",
        pool.annotations
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect(),
    );
    for (name, taints) in [
        ("taints", &pool.taints),
        ("startupTaints", &pool.startup_taints),
    ] {
        let entries = taint_set(taints)
            .into_iter()
            .map(|(k, v, e)| format!("{k}={v}:{e}"))
            .collect();
        section(&mut h, name, entries);
    }
    let r = &pool.node_class_ref;
    section(
        &mut h,
        "nodeClassRef",
        vec![r.group.clone(), r.kind.clone(), r.name.clone()],
    );
    let duration =
        |d: Option<std::time::Duration>| d.map_or("nil".to_string(), |d| d.as_millis().to_string());
    section(&mut h, "expireAfter", vec![duration(pool.expire_after)]);
    section(
        &mut h,
        "terminationGracePeriod",
        vec![duration(pool.termination_grace_period)],
    );
    format!("{:016x}", h.0)
}

/// The NodeClaim fields copied from the NodePool when it is launched: the
/// template hash, `expireAfter`, `terminationGracePeriod`, and the
/// template's annotations, of which disruption reads
/// `karpenter.sh/do-not-disrupt: "true"` (upstream copies
/// `spec.template.metadata.annotations` to the NodeClaim and its Node).
pub fn launch_lifecycle(pool: &NodePool) -> ClaimLifecycle {
    ClaimLifecycle {
        nodepool_hash: Some(nodepool_hash(pool)),
        expire_after: pool.expire_after.map(SimDuration::from_std),
        termination_grace_period: pool.termination_grace_period.map(SimDuration::from_std),
        do_not_disrupt: pool
            .annotations
            .get(crate::kube::pod::DO_NOT_DISRUPT_ANNOTATION)
            .is_some_and(|v| v == "true"),
        ..ClaimLifecycle::default()
    }
}

/// Static drift: the node's stamped hash differs from the pool's current
/// one. A node without a stamped hash never drifts this way (upstream skips
/// NodeClaims missing the annotation).
pub fn nodepool_drifted(pool: &NodePool, node: &Node) -> bool {
    node.claim
        .as_ref()
        .and_then(|c| c.lifecycle.nodepool_hash.as_deref())
        .is_some_and(|stamped| stamped != nodepool_hash(pool))
}

/// Requirements drift: the node's labels are no longer compatible with the
/// pool's requirements (a key the pool requires must be present).
pub fn requirements_drifted(pool: &NodePool, node: &Node) -> bool {
    Requirements::from_labels(&node.labels)
        .compatible(&pool.requirement_set, &LabelKeySet::default())
        .is_err()
}

/// Why the node drifted from its pool, checking the template first.
pub fn drift_reason(pool: &NodePool, node: &Node) -> Option<DriftReason> {
    if nodepool_drifted(pool, node) {
        Some(DriftReason::NodePoolDrifted)
    } else if requirements_drifted(pool, node) {
        Some(DriftReason::RequirementsDrifted)
    } else {
        None
    }
}

/// When the node expires: creation + its NodeClaim's `expireAfter`.
pub fn expiration_time(node: &Node) -> Option<SimTime> {
    let expire_after = node.claim.as_ref()?.lifecycle.expire_after?;
    Some(node.created_at + expire_after)
}

/// Managed nodes not yet being deleted whose age has reached their
/// `expireAfter`, in node order. Expiry ignores budgets, do-not-disrupt and
/// PDBs: the NodeClaim is simply deleted.
pub fn expired_nodes(cluster: &Cluster, now: SimTime) -> Vec<NodeId> {
    cluster
        .nodes()
        .filter(|(_, n)| !n.marked_for_deletion)
        .filter(|(_, n)| expiration_time(n).is_some_and(|t| now >= t))
        .map(|(id, _)| id)
        .collect()
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::kube::requirements::{Operator, Requirement};
    use crate::kube::taints::TaintEffect;
    use crate::testing::{node, pool};

    fn stamped(pool: &NodePool) -> Node {
        let mut n = node("n", &pool.name);
        n.claim.as_mut().unwrap().lifecycle = launch_lifecycle(pool);
        n
    }

    /// core: disruption/consolidation_test.go "considers
    /// karpenter.sh/do-not-disrupt set to true on nodes": the template's
    /// annotation reaches the launched NodeClaim; only the value `"true"`
    /// counts.
    #[test]
    fn template_do_not_disrupt_is_copied_at_launch() {
        let mut p = pool("default");
        assert!(!launch_lifecycle(&p).do_not_disrupt);
        for (value, held) in [("true", true), ("false", false), ("yes", false)] {
            p.annotations
                .insert("karpenter.sh/do-not-disrupt".into(), value.into());
            assert_eq!(launch_lifecycle(&p).do_not_disrupt, held, "{value}");
        }
    }

    /// core: nodeclaim/disruption/drift_test.go "should return drifted only
    /// on NodeClaims that are drifted from an updated nodePool", entries
    /// Annotations, Labels, Taints, StartupTaints, NodeClassRef Name,
    /// ExpireAfter, TerminationGracePeriod.
    #[test]
    fn template_changes_drift() {
        let base = pool("default");
        let n = stamped(&base);
        assert!(!nodepool_drifted(&base, &n));
        type Change = Box<dyn Fn(&mut NodePool)>;
        let changes: Vec<Change> = vec![
            Box::new(|p| {
                p.labels.insert("team".into(), "a".into());
            }),
            Box::new(|p| {
                p.annotations.insert("note".into(), "x".into());
            }),
            Box::new(|p| {
                p.taints
                    .push(Taint::new("gpu", "true", TaintEffect::NoSchedule))
            }),
            Box::new(|p| {
                p.startup_taints
                    .push(Taint::new("init", "", TaintEffect::NoExecute))
            }),
            Box::new(|p| p.node_class_ref.name = "other".into()),
            Box::new(|p| p.expire_after = None),
            Box::new(|p| p.termination_grace_period = Some(Duration::from_secs(60))),
        ];
        for (i, change) in changes.iter().enumerate() {
            let mut changed = base.clone();
            change(&mut changed);
            assert!(nodepool_drifted(&changed, &n), "change {i}");
            assert_eq!(
                drift_reason(&changed, &n),
                Some(DriftReason::NodePoolDrifted)
            );
        }
    }

    /// Reference §4.6 (weight, limits and disruption never drift nodes;
    /// taints hash as a set) and drift_test.go "should not return drifted if
    /// karpenter.sh/nodepool-hash annotation is not present on the
    /// NodeClaim".
    #[test]
    fn behaviour_fields_do_not_drift() {
        let mut base = pool("default");
        base.taints = vec![
            Taint::new("a", "1", TaintEffect::NoSchedule),
            Taint::new("b", "2", TaintEffect::NoSchedule),
        ];
        let n = stamped(&base);
        let mut changed = base.clone();
        changed.weight = Some(50);
        changed
            .limits
            .insert(crate::kube::resources::ResourceKind::Cpu, 1000);
        changed.disruption.consolidate_after = None;
        changed.taints.reverse();
        assert!(!nodepool_drifted(&changed, &n));
        // An unstamped node never drifts statically.
        let mut unstamped = n.clone();
        unstamped.claim.as_mut().unwrap().lifecycle.nodepool_hash = None;
        changed.labels.insert("x".into(), "y".into());
        assert!(!nodepool_drifted(&changed, &unstamped));
    }

    /// core: drift_test.go "should detect node requirement drift before
    /// cloud provider drift" (drift.go `areRequirementsDrifted`).
    #[test]
    fn requirements_drift() {
        let mut p = pool("default");
        let n = stamped(&p);
        let zone = |values: &[&str]| {
            let values: Vec<String> = values.iter().map(|v| v.to_string()).collect();
            Requirement::new("topology.kubernetes.io/zone", Operator::In, &values).unwrap()
        };
        p.requirement_set.add(zone(&["us-east-1a", "us-east-1b"]));
        assert_eq!(drift_reason(&p, &n), None, "requirements are not hashed");
        p.requirement_set = Requirements::new();
        p.requirement_set.add(zone(&["us-east-1b"]));
        assert_eq!(drift_reason(&p, &n), Some(DriftReason::RequirementsDrifted));
        // A required custom label the node lacks drifts it too.
        let mut q = pool("default");
        q.requirement_set
            .add(Requirement::new("team", Operator::In, &["a".to_string()]).unwrap());
        assert!(requirements_drifted(&q, &n));
    }

    /// core: nodeclaim/expiration/suite_test.go "should not remove the
    /// NodeClaims when expiration is disabled", "should not remove
    /// non-expired NodeClaims" and "should delete NodeClaims if the
    /// nodeClaim is expired but the node isn't".
    #[test]
    fn expiration() {
        let mut cluster = Cluster::new();
        let mut p = pool("default");
        p.expire_after = Some(Duration::from_secs(3600));
        let a = cluster.add_node(stamped(&p));
        p.expire_after = None;
        cluster.add_node(stamped(&p));
        let hour = SimTime::ZERO + SimDuration::from_hours(1);
        assert_eq!(expiration_time(cluster.node(a).unwrap()), Some(hour));
        assert!(expired_nodes(&cluster, hour - SimDuration::from_millis(1)).is_empty());
        assert_eq!(expired_nodes(&cluster, hour), vec![a]);
        cluster.node_mut(a).unwrap().marked_for_deletion = true;
        assert!(expired_nodes(&cluster, hour).is_empty());
    }
}
