//! Tests of disruption candidate selection and its rejection reasons.

use std::collections::BTreeMap;
use std::time::Duration;

use super::*;
use crate::cluster::{OwnerKind, PodPhase};
use crate::kube::labels::LABEL_TOPOLOGY_ZONE;
use crate::kube::pod::DoNotDisrupt;
use crate::kube::workload::IntOrPercent;
use crate::pdb::ControllerScales;
use crate::testing::{WithSpec, node, pdb, pod_of, pool};

struct World {
    cluster: Cluster,
    pools: BTreeMap<String, NodePool>,
    scales: ControllerScales,
    in_flight: BTreeSet<NodeId>,
}

impl World {
    /// One node "n0" of pool "default" with `pods` web pods (Deployment
    /// "web", 3 replicas).
    fn new(pods: usize) -> World {
        let mut cluster = Cluster::new();
        cluster.add_node(node("n0", "default"));
        for i in 0..pods {
            cluster.add_pod(pod_of(
                &format!("web-{i}"),
                "web",
                OwnerKind::Deployment,
                "web",
            ));
        }
        let mut scales = ControllerScales::default();
        scales.insert("default", OwnerKind::Deployment, "web", 3);
        World {
            cluster,
            pools: [("default".to_string(), pool("default"))].into(),
            scales,
            in_flight: BTreeSet::new(),
        }
    }

    /// Calls `f` with this world's candidate inputs at `now`.
    fn with_inputs<T>(
        &self,
        now: SimTime,
        cache: Option<&CandidateCache>,
        f: impl FnOnce(&CandidateInputs<'_>) -> T,
    ) -> T {
        let pdbs = PdbLimits::from_cluster(&self.cluster, &self.scales);
        let pools: NodePoolsByName<'_> = self.pools.iter().map(|(k, v)| (k.as_str(), v)).collect();
        f(&CandidateInputs {
            cluster: &self.cluster,
            pools: &pools,
            pdbs: &pdbs,
            in_flight: &self.in_flight,
            now,
            cache,
            horizon: None,
        })
    }

    fn check(&self, class: DisruptionClass, now: SimTime) -> Result<Candidate, Rejection> {
        self.with_inputs(now, None, |inputs| new_candidate(inputs, NodeId(0), class))
    }

    /// Every node's verdict, through `cache` when given.
    fn evaluate(
        &self,
        cache: Option<&CandidateCache>,
    ) -> Vec<(NodeId, Result<Candidate, Rejection>)> {
        self.with_inputs(SimTime::ZERO, cache, |inputs| {
            evaluate_nodes(inputs, DisruptionClass::Graceful)
        })
    }

    fn reason(&self) -> String {
        self.check(DisruptionClass::Graceful, SimTime::ZERO)
            .unwrap_err()
            .to_string()
    }

    fn node(&mut self) -> &mut Node {
        self.cluster.node_mut(NodeId(0)).unwrap()
    }

    fn claim(&mut self) -> &mut NodeClaimInfo {
        self.node().claim.as_mut().unwrap()
    }
}

/// core: disruption/suite_test.go "should not consider candidates that are
/// nominated", "... that are deleting", "... that have do-not-disrupt on
/// nodes"; the other messages are `ValidateNodeDisruptable` /
/// `NewCandidate`'s.
#[test]
fn node_level_rejections() {
    let mut w = World::new(0);
    assert!(w.check(DisruptionClass::Graceful, SimTime::ZERO).is_ok());
    w.in_flight.insert(NodeId(0));
    assert_eq!(w.reason(), "candidate is already being disrupted");
    w.in_flight.clear();
    w.node().initialized = false;
    assert_eq!(w.reason(), "node isn't initialized");
    w.node().registered = false;
    assert_eq!(w.reason(), "nodeclaim does not have an associated node");
    w.node().initialized = true;
    w.node().registered = true;
    w.node().marked_for_deletion = true;
    assert_eq!(w.reason(), "node is deleting or marked for deletion");
    w.node().marked_for_deletion = false;
    w.claim().lifecycle.nominated_until = Some(SimTime::from_secs(20));
    assert_eq!(w.reason(), "node is nominated for a pending pod");
    assert!(
        w.check(DisruptionClass::Graceful, SimTime::from_secs(20))
            .is_ok(),
        "nomination ends at its deadline"
    );
    w.claim().lifecycle.nominated_until = None;
    w.claim().lifecycle.do_not_disrupt = true;
    assert_eq!(
        w.reason(),
        "disruption is blocked through the \"karpenter.sh/do-not-disrupt\" annotation"
    );
    w.claim().lifecycle.do_not_disrupt = false;
    w.pools.clear();
    assert_eq!(w.reason(), "NodePool not found (NodePool=default)");
    w.node().claim = None;
    assert_eq!(w.reason(), "node isn't managed by karpenter");
}

/// core: disruption/suite_test.go "should not consider candidates that
/// have do-not-disrupt pods scheduled and no terminationGracePeriod" and
/// "should consider candidates that have do-not-disrupt terminal pods".
#[test]
fn do_not_disrupt_pods() {
    let mut w = World::new(2);
    let pod = w.cluster.pods().next().unwrap().0;
    let p = w.cluster.pod_mut(pod).unwrap();
    p.spec = p
        .spec
        .with(|s| s.do_not_disrupt = Some(DoNotDisrupt::For(Duration::from_secs(300))));
    assert_eq!(
        w.reason(),
        "pod \"default/web-0\" has \"karpenter.sh/do-not-disrupt\" annotation"
    );
    assert!(
        w.check(DisruptionClass::Graceful, SimTime::from_secs(300))
            .is_ok(),
        "5m elapsed"
    );
    let p = w.cluster.pod_mut(pod).unwrap();
    p.spec = p
        .spec
        .with(|s| s.do_not_disrupt = Some(DoNotDisrupt::Always));
    p.phase = crate::cluster::PodPhase::Succeeded;
    assert!(
        w.check(DisruptionClass::Graceful, SimTime::ZERO).is_ok(),
        "terminal pods do not block"
    );
}

/// The do-not-disrupt rejection names the first active pod, in node
/// order, whose protection is on: an expired annotation and a finished
/// pod are passed over (`ValidatePodsDisruptable` walks every pod).
#[test]
fn do_not_disrupt_names_the_first_protected_active_pod() {
    let mut w = World::new(4);
    let ids: Vec<PodId> = w.cluster.pods().map(|(id, _)| id).collect();
    let mut annotate = |i: usize, annotation: DoNotDisrupt| {
        let p = w.cluster.pod_mut(ids[i]).unwrap();
        p.spec = p.spec.with(|s| s.do_not_disrupt = Some(annotation));
    };
    annotate(0, DoNotDisrupt::For(Duration::from_secs(60)));
    annotate(1, DoNotDisrupt::Always);
    annotate(3, DoNotDisrupt::Always);
    w.cluster.finish_pod(ids[1], PodPhase::Succeeded);
    let at = |secs| {
        w.check(DisruptionClass::Graceful, SimTime::from_secs(secs))
            .err()
            .map(|r| r.to_string())
    };
    let named = |pod: &str| {
        Some(format!(
            "pod \"default/{pod}\" has \"karpenter.sh/do-not-disrupt\" annotation"
        ))
    };
    assert_eq!(at(0), named("web-0"), "web-0 still inside its minute");
    assert_eq!(at(60), named("web-3"), "web-0 expired, web-1 finished");
}

/// core: disruption/suite_test.go "should not consider candidates that
/// have fully blocking PDBs", "... that have multiple PDBs on the same pod",
/// "should consider candidates that have PDB-blocked pods scheduled with a
/// terminationGracePeriod set for eventual disruption" and "should not
/// consider ... PDB-blocked pods scheduled with a terminationGracePeriod
/// set for graceful disruption" / "... without a terminationGracePeriod set
/// for eventual disruption".
#[test]
fn pdb_blocks_and_eventual_bypass() {
    let mut w = World::new(3);
    w.cluster
        .pdbs
        .push(pdb("web", "web", None, Some(IntOrPercent::Int(0))));
    assert_eq!(w.reason(), "pdb \"default/web\" prevents pod evictions");
    assert!(
        w.check(DisruptionClass::Eventual, SimTime::ZERO).is_err(),
        "no grace period"
    );
    w.claim().lifecycle.termination_grace_period = Some(SimDuration::from_mins(10));
    let c = w.check(DisruptionClass::Eventual, SimTime::ZERO).unwrap();
    assert!(c.has_termination_grace_period);
    assert!(
        w.check(DisruptionClass::Graceful, SimTime::ZERO).is_err(),
        "graceful still blocked"
    );
    // 3 healthy of 3 with maxUnavailable 1 → allowed, but a second PDB on
    // the same pods blocks.
    w.cluster.pdbs[0] = pdb("web", "web", None, Some(IntOrPercent::Int(1)));
    assert!(w.check(DisruptionClass::Graceful, SimTime::ZERO).is_ok());
    w.cluster
        .pdbs
        .push(pdb("all", "web", Some(IntOrPercent::Int(0)), None));
    assert_eq!(
        w.reason(),
        "eviction does not support multiple PDBs (\"default/web\", \"default/all\")"
    );
}

/// core: disruption/types.go `NewCandidate` values (v1.14 `IsEmpty`:
/// eviction costs clamped at 0 add nothing), utils/disruption
/// `LifetimeRemaining`; emptiness_test.go "will consider a node with a
/// DaemonSet pod as empty".
#[test]
fn candidate_values() {
    let mut w = World::new(2);
    let c = w.check(DisruptionClass::Graceful, SimTime::ZERO).unwrap();
    assert_eq!(c.reschedulable_pods().len(), 2);
    assert_eq!(c.reschedule_disruption_cost, 3.0);
    assert!((c.savings_ratio() - 0.1 / 3.0).abs() < 1e-12);
    assert!(!c.is_empty());
    // Full lifetime remaining at age 0: legacy cost = Σ eviction costs.
    assert_eq!(c.disruption_cost, 2.0);
    let half = SimTime::ZERO + SimDuration::from_hours(360);
    w.claim().lifecycle.expire_after = Some(SimDuration::from_hours(720));
    let c = w.check(DisruptionClass::Graceful, half).unwrap();
    assert!((c.disruption_cost - 1.0).abs() < 1e-12);
    // Pods whose eviction cost clamps to ≤ 0 leave the node "empty".
    for id in w.cluster.pods().map(|(id, _)| id).collect::<Vec<_>>() {
        let p = w.cluster.pod_mut(id).unwrap();
        p.spec = p.spec.with(|s| s.priority = -(1 << 26));
    }
    let c = w.check(DisruptionClass::Graceful, SimTime::ZERO).unwrap();
    assert!(c.is_empty());
    assert_eq!(c.reschedulable_pods().len(), 2);
    // DaemonSet pods are not reschedulable.
    let mut ds = pod_of("ds", "logs", OwnerKind::DaemonSet, "log-collector");
    ds.spec = ds.spec.with(|s| s.priority = 1 << 20);
    w.cluster.add_pod(ds);
    let c = w.check(DisruptionClass::Graceful, SimTime::ZERO).unwrap();
    assert!(c.is_empty() && c.pod_count == 3);
}

/// core: nodeclaim/disruption/consolidation_test.go "should mark
/// NodeClaims as consolidatable based on the nodeclaim initialized time",
/// "should remove the status condition from the nodeClaim when lastPodEvent
/// is too recent" and "... when consolidateAfter is never".
#[test]
fn consolidatable_condition() {
    let mut w = World::new(0);
    w.pools
        .get_mut("default")
        .unwrap()
        .disruption
        .consolidate_after = Some(Duration::from_secs(60));
    let at = |s| SimTime::from_secs(s);
    assert!(
        !w.check(DisruptionClass::Graceful, at(59))
            .unwrap()
            .consolidatable
    );
    assert!(
        w.check(DisruptionClass::Graceful, at(60))
            .unwrap()
            .consolidatable
    );
    w.claim().lifecycle.last_pod_event_at = Some(at(100));
    assert!(
        !w.check(DisruptionClass::Graceful, at(130))
            .unwrap()
            .consolidatable
    );
    assert!(
        w.check(DisruptionClass::Graceful, at(160))
            .unwrap()
            .consolidatable
    );
    w.pools
        .get_mut("default")
        .unwrap()
        .disruption
        .consolidate_after = None;
    assert!(
        !w.check(DisruptionClass::Graceful, at(1000))
            .unwrap()
            .consolidatable
    );
}

/// core: disruption/consolidation_test.go "should fire an event for
/// ConsolidationDisabled when the NodePool has consolidation set to
/// WhenEmpty" and "... consolidateAfter set to 'Never'"; the label message
/// is consolidation.go `ShouldDisrupt`'s.
#[test]
fn method_filters() {
    // Verdicts with their sentences, as events carry them.
    let said = |verdict: FilterVerdict| verdict.map_err(|e| e.map(|r| r.to_string()));
    let w = World::new(1);
    let busy = w.check(DisruptionClass::Graceful, SimTime::ZERO).unwrap();
    let node = w.cluster.node(NodeId(0)).unwrap();
    let mut p = pool("default");
    assert_eq!(emptiness_filter(&busy, &p), Err(None));
    assert_eq!(consolidation_filter(&busy, node, &p), Ok(()));
    let mut empty = busy.clone();
    empty.reschedule_disruption_cost = 1.0;
    assert_eq!(emptiness_filter(&empty, &p), Ok(()));
    assert_eq!(
        consolidation_filter(&empty, node, &p),
        Err(None),
        "Emptiness handles it"
    );
    p.disruption.consolidation_policy = ConsolidationPolicy::WhenEmpty;
    assert_eq!(
        said(consolidation_filter(&busy, node, &p)),
        Err(Some(
            "NodePool \"default\" has consolidation policy WhenEmpty, but node is not empty".into()
        ))
    );
    p.disruption.consolidate_after = None;
    assert_eq!(
        said(emptiness_filter(&empty, &p)),
        Err(Some(
            "NodePool \"default\" has consolidation disabled".into()
        ))
    );
    let mut unlabeled = World::new(1);
    unlabeled.node().labels.remove(LABEL_TOPOLOGY_ZONE);
    let unlabeled_busy = unlabeled
        .check(DisruptionClass::Graceful, SimTime::ZERO)
        .unwrap();
    assert_eq!(
        said(consolidation_filter(
            &unlabeled_busy,
            node,
            &pool("default")
        )),
        Err(Some(
            "Node does not have label \"topology.kubernetes.io/zone\"".into()
        ))
    );
    let mut not_consolidatable = busy.clone();
    not_consolidatable.consolidatable = false;
    assert_eq!(
        consolidation_filter(&not_consolidatable, node, &pool("default")),
        Err(None)
    );
    assert_eq!(drift_filter(node), Err(None));
}

/// Node facts kept from an earlier pass give the same candidates as facts
/// made afresh, through pod binds, finishes and do-not-disrupt changes on
/// the node (its revision changes with each).
#[test]
fn cached_node_facts_follow_every_change() {
    let mut w = World::new(3);
    w.cluster.add_node(node("n1", "default"));
    let cache = CandidateCache::default();
    let check = |w: &World| {
        let cached = w.evaluate(Some(&cache));
        assert_eq!(cached, w.evaluate(None));
        cached
    };
    let reschedulable = |verdicts: &[(NodeId, Result<Candidate, Rejection>)]| {
        verdicts[0]
            .1
            .as_ref()
            .map(|c| c.reschedulable_pods().len())
            .ok()
    };
    assert_eq!(reschedulable(&check(&w)), Some(3));
    let first = w.cluster.pods().map(|(id, _)| id).next().unwrap();
    w.cluster.finish_pod(first, PodPhase::Succeeded);
    assert_eq!(reschedulable(&check(&w)), Some(2));
    let second = w.cluster.pods().map(|(id, _)| id).nth(1).unwrap();
    let p = w.cluster.pod_mut(second).unwrap();
    p.spec = p
        .spec
        .with(|s| s.do_not_disrupt = Some(DoNotDisrupt::Always));
    assert!(matches!(check(&w)[0].1, Err(Rejection::PodDoNotDisrupt(_))));
    let mut late = pod_of("web-late", "web", OwnerKind::Deployment, "web");
    late.node = Some(NodeId(1));
    w.cluster.add_pod(late);
    let verdicts = check(&w);
    assert_eq!(reschedulable(&verdicts[1..]), Some(1));
}
