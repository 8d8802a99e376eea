//! PodDisruptionBudgets as the disruption controller sees them: the
//! `disruptionsAllowed` the Kubernetes disruption controller would publish
//! for the cluster (k8s: pkg/controller/disruption/disruption.go
//! `getExpectedPodCount`, `countHealthyPods`, `updatePdbStatus`), and
//! Karpenter's eviction check over them (core: pkg/utils/pdb/pdb.go).
//!
//! Rounding: `maxUnavailable` and `minAvailable` percentages both resolve
//! against the *expected* pod count (the owners' desired replicas) and round
//! **up** (`GetScaledValueFromIntOrPercent(..., true)`), so `maxUnavailable:
//! 10%` of 5 replicas allows 1, and `minAvailable: 50%` of 5 needs 3.
//! An integer `minAvailable` takes the matched pod count as expected.

use std::collections::BTreeMap;

use crate::cluster::{Cluster, OwnerKind, OwnerRef, Pod};
use crate::kube::selector::LabelSelector;
use crate::kube::workload::{
    IntOrPercent, PodDisruptionBudget, UnhealthyPodEvictionPolicy, Workload, WorkloadKind,
};
use crate::pods::{is_evictable, is_ready, is_terminating};
use crate::time::SimTime;

/// Desired replicas of the controllers that own pods, keyed by namespace,
/// kind and name (the k8s disruption controller's "scale" finders: only
/// Deployments, ReplicaSets and StatefulSets have one).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ControllerScales(BTreeMap<(String, OwnerKind, String), u32>);

impl ControllerScales {
    /// The scales of the scalable workloads.
    pub fn from_workloads(workloads: &[Workload]) -> ControllerScales {
        let mut scales = ControllerScales::default();
        for w in workloads {
            let (kind, replicas) = match w.kind {
                WorkloadKind::Deployment { replicas } => (OwnerKind::Deployment, replicas),
                WorkloadKind::ReplicaSet { replicas } => (OwnerKind::ReplicaSet, replicas),
                WorkloadKind::StatefulSet { replicas } => (OwnerKind::StatefulSet, replicas),
                _ => continue,
            };
            scales.insert(&w.namespace, kind, &w.name, replicas);
        }
        scales
    }

    /// Records one controller's desired replicas.
    pub fn insert(&mut self, namespace: &str, kind: OwnerKind, name: &str, replicas: u32) {
        self.0
            .insert((namespace.to_string(), kind, name.to_string()), replicas);
    }

    /// A controller's desired replicas, if it has a scale.
    pub fn get(&self, namespace: &str, owner: &OwnerRef) -> Option<u32> {
        self.0
            .get(&(
                namespace.to_string(),
                owner.kind.clone(),
                owner.name.clone(),
            ))
            .copied()
    }
}

/// A PDB's computed status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PdbStatus {
    /// Pods the budget expects (0 while unknown).
    pub expected_pods: u32,
    /// Ready pods needed.
    pub desired_healthy: u32,
    /// Ready, not terminating pods matched.
    pub current_healthy: u32,
    /// Evictions allowed now.
    pub disruptions_allowed: u32,
    /// Why the status could not be computed (then nothing is allowed).
    pub sync_error: Option<String>,
}

fn selects(
    selector: Option<&LabelSelector>,
    namespace: &str,
    pdb_namespace: &str,
    pod: &Pod,
) -> bool {
    namespace == pdb_namespace && selector.is_some_and(|s| s.matches(&pod.spec.labels))
}

/// `SUM(scale(c))` over the distinct controllers of the pods; pods without
/// an owner are skipped, an owner without a scale is an error.
fn expected_scale(pods: &[&Pod], scales: &ControllerScales) -> Result<u32, String> {
    let mut seen: BTreeMap<(OwnerKind, &str), u32> = BTreeMap::new();
    for pod in pods {
        let Some(owner) = &pod.owner else { continue };
        if seen.contains_key(&(owner.kind.clone(), owner.name.as_str())) {
            continue;
        }
        let scale = scales
            .get(&pod.spec.namespace, owner)
            .ok_or_else(|| format!("found no controllers for pod {:?}", pod.name))?;
        seen.insert((owner.kind.clone(), owner.name.as_str()), scale);
    }
    Ok(seen.values().sum())
}

/// The status the Kubernetes disruption controller would publish for `pdb`.
/// A failed computation publishes `disruptionsAllowed: 0` (its fail-safe).
pub fn pdb_status(
    pdb: &PodDisruptionBudget,
    cluster: &Cluster,
    scales: &ControllerScales,
) -> PdbStatus {
    let pods: Vec<&Pod> = cluster
        .pods()
        .map(|(_, p)| p)
        .filter(|p| selects(pdb.selector.as_ref(), &p.spec.namespace, &pdb.namespace, p))
        .collect();
    status_of(pdb, &pods, scales)
}

/// The status of `pdb` given the pods it selects, in cluster order.
fn status_of(pdb: &PodDisruptionBudget, pods: &[&Pod], scales: &ControllerScales) -> PdbStatus {
    let current_healthy = pods
        .iter()
        .filter(|p| !is_terminating(p) && is_ready(p))
        .count() as u32;
    let expected_and_desired = if let Some(max_unavailable) = pdb.max_unavailable {
        expected_scale(pods, scales).map(|expected| {
            let unavailable = max_unavailable.resolve(expected);
            (expected, expected.saturating_sub(unavailable))
        })
    } else {
        match pdb.min_available {
            Some(IntOrPercent::Int(n)) => Ok((pods.len() as u32, n)),
            Some(percent) => {
                expected_scale(pods, scales).map(|expected| (expected, percent.resolve(expected)))
            }
            None => Ok((0, 0)),
        }
    };
    match expected_and_desired {
        Ok((expected_pods, desired_healthy)) => PdbStatus {
            expected_pods,
            desired_healthy,
            current_healthy,
            // Expecting no pods is the "not synced yet" state: allow nothing.
            disruptions_allowed: if expected_pods == 0 {
                0
            } else {
                current_healthy.saturating_sub(desired_healthy)
            },
            sync_error: None,
        },
        Err(e) => PdbStatus {
            expected_pods: 0,
            desired_healthy: 0,
            current_healthy,
            disruptions_allowed: 0,
            sync_error: Some(e),
        },
    }
}

/// One PDB as Karpenter's eviction check needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PdbLimit {
    /// `namespace/name`.
    pub key: String,
    /// Namespace.
    pub namespace: String,
    /// Selector (`None` selects nothing).
    pub selector: Option<LabelSelector>,
    /// `status.disruptionsAllowed`.
    pub disruptions_allowed: u32,
    /// `maxUnavailable: 0` / `"0%"` or `minAvailable: "100%"`: no eviction
    /// is ever allowed.
    pub fully_blocking: bool,
    /// `unhealthyPodEvictionPolicy: AlwaysAllow`.
    pub always_allow_unhealthy: bool,
}

impl PdbLimit {
    /// `pdb`'s limit with no disruption allowed (its status not computed).
    fn unsynced(pdb: &PodDisruptionBudget) -> PdbLimit {
        PdbLimit {
            key: format!("{}/{}", pdb.namespace, pdb.name),
            namespace: pdb.namespace.clone(),
            selector: pdb.selector.clone(),
            disruptions_allowed: 0,
            fully_blocking: matches!(
                pdb.max_unavailable,
                Some(IntOrPercent::Int(0) | IntOrPercent::Percent(0))
            ) || pdb.min_available == Some(IntOrPercent::Percent(100)),
            always_allow_unhealthy: pdb.unhealthy_pod_eviction_policy
                == UnhealthyPodEvictionPolicy::AlwaysAllow,
        }
    }
}

/// The PDBs that hold pods in place for good (fully blocking, or several
/// selecting one pod), which need no status: cheaper than [`PdbLimits`]
/// when only [`PdbBlockers::is_fully_blocked`] is asked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PdbBlockers(PdbLimits);

impl PdbBlockers {
    /// The cluster's PDBs.
    pub fn from_cluster(cluster: &Cluster) -> PdbBlockers {
        PdbBlockers(PdbLimits::unsynced(cluster))
    }

    /// As [`PdbLimits::is_fully_blocked`].
    pub fn is_fully_blocked(&self, pod: &Pod, now: SimTime) -> bool {
        self.0.is_fully_blocked(pod, now)
    }
}

/// Why evicting a pod is not possible now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EvictionBlock {
    /// The pod's only PDB allows no disruption.
    Pdb(String),
    /// More than one PDB selects the pod: the Eviction API refuses.
    MultiplePdbs(Vec<String>),
}

/// Karpenter's `pdb.Limits`: every PDB with its allowed disruptions.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PdbLimits {
    /// The PDBs, in cluster order.
    limits: Vec<PdbLimit>,
    index: SelectorIndex,
}

/// Which PDBs may select a pod, so that a pod is matched against the few
/// PDBs that could select it rather than all of them: per namespace, PDBs
/// filed under one of their `matchLabels` pairs (a pod lacking that pair
/// cannot be selected), and the rest (no `matchLabels`) checked always.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct SelectorIndex(BTreeMap<String, NamespaceIndex>);

#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct NamespaceIndex {
    /// label key → label value → PDB indices.
    by_label: BTreeMap<String, BTreeMap<String, Vec<usize>>>,
    /// PDBs without `matchLabels` (an empty selector, expressions only).
    unindexed: Vec<usize>,
}

impl SelectorIndex {
    fn new<'a>(selectors: impl Iterator<Item = (&'a str, Option<&'a LabelSelector>)>) -> Self {
        let mut index = SelectorIndex::default();
        for (i, (namespace, selector)) in selectors.enumerate() {
            // An absent selector selects nothing: not filed at all.
            let Some(selector) = selector else { continue };
            let ns = index.0.entry(namespace.to_string()).or_default();
            match selector.match_labels.iter().next() {
                Some((key, value)) => ns
                    .by_label
                    .entry(key.clone())
                    .or_default()
                    .entry(value.clone())
                    .or_default()
                    .push(i),
                None => ns.unindexed.push(i),
            }
        }
        index
    }

    /// Indices (ascending) of the PDBs that may select `pod`; each must
    /// still be checked with [`selects`].
    fn candidates(&self, pod: &Pod) -> Vec<usize> {
        let Some(ns) = self.0.get(&pod.spec.namespace) else {
            return Vec::new();
        };
        let mut out = ns.unindexed.clone();
        for (key, values) in &ns.by_label {
            if let Some(found) = pod.spec.labels.get(key).and_then(|v| values.get(v)) {
                out.extend_from_slice(found);
            }
        }
        out.sort_unstable();
        out
    }
}

/// The statuses of all the cluster's PDBs (in cluster order), each as
/// [`pdb_status`] computes it, in one walk over the pods.
pub fn pdb_statuses(cluster: &Cluster, scales: &ControllerScales) -> Vec<PdbStatus> {
    statuses_of(cluster, scales, &PdbLimits::unsynced(cluster))
}

/// The statuses of the cluster's PDBs, whose selectors `limits` indexes.
fn statuses_of(cluster: &Cluster, scales: &ControllerScales, limits: &PdbLimits) -> Vec<PdbStatus> {
    if cluster.pdbs.is_empty() {
        return Vec::new();
    }
    let mut selected: Vec<Vec<&Pod>> = vec![Vec::new(); cluster.pdbs.len()];
    for (_, pod) in cluster.pods() {
        for i in limits.matching_indices(pod) {
            selected[i].push(pod);
        }
    }
    cluster
        .pdbs
        .iter()
        .zip(&selected)
        .map(|(pdb, pods)| status_of(pdb, pods, scales))
        .collect()
}

impl PdbLimits {
    /// Limits from the cluster's PDBs, with statuses computed as
    /// [`pdb_status`] does.
    pub fn from_cluster(cluster: &Cluster, scales: &ControllerScales) -> PdbLimits {
        let mut limits = PdbLimits::unsynced(cluster);
        let statuses = statuses_of(cluster, scales, &limits);
        for (limit, status) in limits.limits.iter_mut().zip(statuses) {
            limit.disruptions_allowed = status.disruptions_allowed;
        }
        limits
    }

    /// The cluster's PDBs with no disruption allowed (statuses not
    /// computed).
    fn unsynced(cluster: &Cluster) -> PdbLimits {
        PdbLimits::new(cluster.pdbs.iter().map(PdbLimit::unsynced).collect())
    }

    /// Limits as given.
    pub fn new(limits: Vec<PdbLimit>) -> PdbLimits {
        let index = SelectorIndex::new(
            limits
                .iter()
                .map(|l| (l.namespace.as_str(), l.selector.as_ref())),
        );
        PdbLimits { limits, index }
    }

    /// The PDBs, in cluster order.
    pub fn limits(&self) -> &[PdbLimit] {
        &self.limits
    }

    /// Indices into [`PdbLimits::limits`] of the PDBs that select `pod`,
    /// ascending.
    pub fn matching_indices(&self, pod: &Pod) -> Vec<usize> {
        let mut found = self.index.candidates(pod);
        found.retain(|&i| {
            let l = &self.limits[i];
            selects(l.selector.as_ref(), &pod.spec.namespace, &l.namespace, pod)
        });
        found
    }

    fn matching(&self, pod: &Pod) -> Vec<&PdbLimit> {
        self.matching_indices(pod)
            .into_iter()
            .map(|i| &self.limits[i])
            .collect()
    }

    fn check(
        &self,
        pod: &Pod,
        now: SimTime,
        blocks: impl Fn(&PdbLimit) -> bool,
    ) -> Result<(), EvictionBlock> {
        // Pods the drain will not evict are not subject to PDBs.
        if self.limits.is_empty() || !is_evictable(pod, now) {
            return Ok(());
        }
        let matching = self.matching(pod);
        if matching.len() > 1 {
            return Err(EvictionBlock::MultiplePdbs(
                matching.iter().map(|l| l.key.clone()).collect(),
            ));
        }
        for limit in matching {
            if limit.always_allow_unhealthy && !is_ready(pod) {
                return Ok(());
            }
            if blocks(limit) {
                return Err(EvictionBlock::Pdb(limit.key.clone()));
            }
        }
        Ok(())
    }

    /// Whether evicting `pod` is allowed now (upstream `isEvictable` with
    /// the zero-disruptions blocker).
    pub fn can_evict(&self, pod: &Pod, now: SimTime) -> Result<(), EvictionBlock> {
        self.check(pod, now, |l| l.disruptions_allowed == 0)
    }

    /// Whether a fully blocking PDB (or several PDBs) holds the pod in place
    /// for good: then provisioning capacity for it is pointless.
    pub fn is_fully_blocked(&self, pod: &Pod, now: SimTime) -> bool {
        self.check(pod, now, |l| l.fully_blocking).is_err()
    }

    /// The first pod of `pods` that cannot be evicted, with why.
    pub fn can_evict_all<'a>(
        &self,
        pods: impl IntoIterator<Item = &'a Pod>,
        now: SimTime,
    ) -> Result<(), (&'a Pod, EvictionBlock)> {
        // Without PDBs the pods are not even walked.
        if self.limits.is_empty() {
            return Ok(());
        }
        for pod in pods {
            self.can_evict(pod, now).map_err(|b| (pod, b))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::PodPhase;
    use crate::testing::{WithSpec, node, pdb, pod_of};

    fn web_cluster(replicas: u32, running: u32) -> (Cluster, ControllerScales) {
        let mut cluster = Cluster::new();
        cluster.add_node(node("n1", "default"));
        for i in 0..running {
            cluster.add_pod(pod_of(
                &format!("web-{i}"),
                "web",
                OwnerKind::Deployment,
                "web",
            ));
        }
        let mut scales = ControllerScales::default();
        scales.insert("default", OwnerKind::Deployment, "web", replicas);
        (cluster, scales)
    }

    /// k8s: pkg/controller/disruption/disruption.go `getExpectedPodCount`
    /// (values derived by hand): maxUnavailable resolves against the owners'
    /// scale, rounding up.
    #[test]
    fn max_unavailable_against_scale() {
        let (cluster, scales) = web_cluster(5, 5);
        let status = |budget| pdb_status(&budget, &cluster, &scales);
        let s = status(pdb("web", "web", None, Some(IntOrPercent::Int(1))));
        assert_eq!(
            (
                s.expected_pods,
                s.desired_healthy,
                s.current_healthy,
                s.disruptions_allowed
            ),
            (5, 4, 5, 1)
        );
        // 10% of 5 = 0.5 → 1.
        assert_eq!(
            status(pdb("web", "web", None, Some(IntOrPercent::Percent(10)))).disruptions_allowed,
            1
        );
        // 50% of 5 = 2.5 → 3.
        assert_eq!(
            status(pdb("web", "web", None, Some(IntOrPercent::Percent(50)))).disruptions_allowed,
            3
        );
        assert_eq!(
            status(pdb("web", "web", None, Some(IntOrPercent::Int(0)))).disruptions_allowed,
            0
        );
    }

    /// k8s: disruption.go `getExpectedPodCount` / `countHealthyPods` (values
    /// derived by hand): int minAvailable counts the matched pods; percent
    /// minAvailable rounds up against the scale; pending pods are unhealthy.
    #[test]
    fn min_available_int_and_percent() {
        let (mut cluster, scales) = web_cluster(5, 4);
        let s = pdb_status(
            &pdb("web", "web", Some(IntOrPercent::Int(3)), None),
            &cluster,
            &scales,
        );
        assert_eq!((s.expected_pods, s.disruptions_allowed), (4, 1));
        // 50% of 5 = 2.5 → 3 desired; 4 healthy → 1.
        let s = pdb_status(
            &pdb("web", "web", Some(IntOrPercent::Percent(50)), None),
            &cluster,
            &scales,
        );
        assert_eq!((s.desired_healthy, s.disruptions_allowed), (3, 1));
        // A pending (not ready) pod is matched but not healthy.
        let ids: Vec<_> = cluster.pods().map(|(id, _)| id).collect();
        cluster.pod_mut(ids[0]).unwrap().phase = PodPhase::Pending;
        cluster.pod_mut(ids[0]).unwrap().node = None;
        let s = pdb_status(
            &pdb("web", "web", Some(IntOrPercent::Int(3)), None),
            &cluster,
            &scales,
        );
        assert_eq!((s.current_healthy, s.disruptions_allowed), (3, 0));
    }

    /// k8s: disruption.go `getExpectedScale` and `failSafe`: pods without
    /// an owner are skipped by the scale; an owner without a scale (a Job)
    /// fails the sync and allows nothing.
    #[test]
    fn unscalable_owner_fails_safe() {
        let (mut cluster, scales) = web_cluster(2, 2);
        let mut bare = pod_of("bare", "web", OwnerKind::Deployment, "x");
        bare.owner = None;
        cluster.add_pod(bare);
        let s = pdb_status(
            &pdb("web", "web", None, Some(IntOrPercent::Int(1))),
            &cluster,
            &scales,
        );
        assert_eq!(
            (s.expected_pods, s.current_healthy, s.disruptions_allowed),
            (2, 3, 2)
        );
        cluster.add_pod(pod_of("job-1", "web", OwnerKind::Job, "batch"));
        let s = pdb_status(
            &pdb("web", "web", None, Some(IntOrPercent::Int(1))),
            &cluster,
            &scales,
        );
        assert_eq!(s.disruptions_allowed, 0);
        assert!(
            s.sync_error
                .unwrap()
                .contains("found no controllers for pod \"job-1\"")
        );
    }

    /// core: pkg/utils/pdb/pdb.go `isEvictable`; disruption/suite_test.go
    /// "should not consider candidates that have fully blocking PDBs",
    /// "... multiple PDBs on the same pod", "should consider candidates that
    /// have fully blocking PDBs on terminal pods".
    #[test]
    fn can_evict_checks() {
        let (mut cluster, scales) = web_cluster(3, 3);
        cluster
            .pdbs
            .push(pdb("web", "web", Some(IntOrPercent::Percent(100)), None));
        let limits = PdbLimits::from_cluster(&cluster, &scales);
        assert_eq!(limits.limits()[0].disruptions_allowed, 0);
        assert!(limits.limits()[0].fully_blocking);
        let (_, web0) = cluster.pods().next().unwrap();
        let now = SimTime::ZERO;
        assert_eq!(
            limits.can_evict(web0, now),
            Err(EvictionBlock::Pdb("default/web".into()))
        );
        assert!(limits.is_fully_blocked(web0, now));
        // Other namespaces are not selected.
        let mut elsewhere = web0.clone();
        elsewhere.spec = elsewhere.spec.with(|s| s.namespace = "prod".into());
        assert_eq!(limits.can_evict(&elsewhere, now), Ok(()));
        // Not ready + AlwaysAllow: evictable despite the budget.
        let mut unhealthy_allowed = limits.limits().to_vec();
        unhealthy_allowed[0].always_allow_unhealthy = true;
        let limits2 = PdbLimits::new(unhealthy_allowed);
        let mut not_ready = web0.clone();
        not_ready.phase = PodPhase::Pending;
        assert_eq!(limits2.can_evict(&not_ready, now), Ok(()));
        assert_eq!(
            limits2.can_evict(web0, now),
            Err(EvictionBlock::Pdb("default/web".into()))
        );
        // Two PDBs select the pod: blocked whatever they allow.
        let mut both = limits.limits().to_vec();
        both[0].disruptions_allowed = 5;
        both.push(PdbLimit {
            key: "default/all".into(),
            ..both[0].clone()
        });
        let two = PdbLimits::new(both);
        assert_eq!(
            two.can_evict(web0, now),
            Err(EvictionBlock::MultiplePdbs(vec![
                "default/web".into(),
                "default/all".into()
            ]))
        );
        // A finished pod is not evicted, so nothing blocks it.
        let mut done = web0.clone();
        done.phase = PodPhase::Succeeded;
        assert_eq!(two.can_evict(&done, now), Ok(()));
    }

    /// The selector index only narrows the search: on PDBs of every
    /// selector shape (matchLabels on different keys, several pairs,
    /// expressions only, empty, absent, another namespace), the statuses
    /// and each pod's matches are those of checking every PDB.
    #[test]
    fn indexed_matching_equals_checking_every_pdb() {
        use crate::kube::selector::{SelectorExpression, SelectorOperator};
        let (mut cluster, scales) = web_cluster(6, 0);
        let labelled = |name: &str, labels: &[(&str, &str)], ns: &str| {
            let mut p = pod_of(name, "x", OwnerKind::Deployment, "web");
            p.spec = p.spec.with(|s| {
                s.namespace = ns.into();
                s.labels = labels
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect();
            });
            p
        };
        for (i, labels) in [
            &[("app", "web")][..],
            &[("app", "web"), ("tier", "front")],
            &[("tier", "front")],
            &[("app", "db"), ("tier", "back")],
            &[],
        ]
        .iter()
        .enumerate()
        {
            cluster.add_pod(labelled(&format!("p{i}"), labels, "default"));
            cluster.add_pod(labelled(&format!("q{i}"), labels, "prod"));
        }
        let selector = |labels: &[(&str, &str)], exprs: Vec<SelectorExpression>| {
            Some(LabelSelector {
                match_labels: labels
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
                match_expressions: exprs,
            })
        };
        let exists = |key: &str| SelectorExpression {
            key: key.into(),
            operator: SelectorOperator::Exists,
            values: Vec::new(),
        };
        let budgets = [
            selector(&[("app", "web")], Vec::new()),
            selector(&[("tier", "front")], Vec::new()),
            selector(&[("app", "web"), ("tier", "front")], Vec::new()),
            selector(&[], vec![exists("tier")]),
            selector(&[], Vec::new()),
            None,
        ];
        for (i, sel) in budgets.iter().enumerate() {
            for ns in ["default", "prod"] {
                let mut budget = pdb(
                    &format!("b{i}-{ns}"),
                    "web",
                    None,
                    Some(IntOrPercent::Int(1)),
                );
                budget.namespace = ns.into();
                budget.selector = sel.clone();
                cluster.pdbs.push(budget);
            }
        }
        let one_by_one: Vec<PdbStatus> = cluster
            .pdbs
            .iter()
            .map(|b| pdb_status(b, &cluster, &scales))
            .collect();
        assert_eq!(pdb_statuses(&cluster, &scales), one_by_one);
        assert!(one_by_one.iter().any(|s| s.current_healthy > 1));
        let limits = PdbLimits::from_cluster(&cluster, &scales);
        for (_, pod) in cluster.pods() {
            let every: Vec<usize> = cluster
                .pdbs
                .iter()
                .enumerate()
                .filter(|(_, b)| {
                    selects(b.selector.as_ref(), &pod.spec.namespace, &b.namespace, pod)
                })
                .map(|(i, _)| i)
                .collect();
            assert_eq!(limits.matching_indices(pod), every, "pod {}", pod.name);
        }
    }
}
