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
    let current_healthy = pods
        .iter()
        .filter(|p| !is_terminating(p) && is_ready(p))
        .count() as u32;
    let expected_and_desired = if let Some(max_unavailable) = pdb.max_unavailable {
        expected_scale(&pods, scales).map(|expected| {
            let unavailable = max_unavailable.resolve(expected);
            (expected, expected.saturating_sub(unavailable))
        })
    } else {
        match pdb.min_available {
            Some(IntOrPercent::Int(n)) => Ok((pods.len() as u32, n)),
            Some(percent) => {
                expected_scale(&pods, scales).map(|expected| (expected, percent.resolve(expected)))
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
    pub limits: Vec<PdbLimit>,
}

impl PdbLimits {
    /// Limits from the cluster's PDBs, with statuses computed by
    /// [`pdb_status`].
    pub fn from_cluster(cluster: &Cluster, scales: &ControllerScales) -> PdbLimits {
        let limits = cluster
            .pdbs
            .iter()
            .map(|pdb| PdbLimit {
                key: format!("{}/{}", pdb.namespace, pdb.name),
                namespace: pdb.namespace.clone(),
                selector: pdb.selector.clone(),
                disruptions_allowed: pdb_status(pdb, cluster, scales).disruptions_allowed,
                fully_blocking: matches!(
                    pdb.max_unavailable,
                    Some(IntOrPercent::Int(0) | IntOrPercent::Percent(0))
                ) || pdb.min_available == Some(IntOrPercent::Percent(100)),
                always_allow_unhealthy: pdb.unhealthy_pod_eviction_policy
                    == UnhealthyPodEvictionPolicy::AlwaysAllow,
            })
            .collect();
        PdbLimits { limits }
    }

    fn matching(&self, pod: &Pod) -> Vec<&PdbLimit> {
        self.limits
            .iter()
            .filter(|l| selects(l.selector.as_ref(), &pod.spec.namespace, &l.namespace, pod))
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
        assert_eq!(limits.limits[0].disruptions_allowed, 0);
        assert!(limits.limits[0].fully_blocking);
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
        let mut limits2 = limits.clone();
        limits2.limits[0].always_allow_unhealthy = true;
        let mut not_ready = web0.clone();
        not_ready.phase = PodPhase::Pending;
        assert_eq!(limits2.can_evict(&not_ready, now), Ok(()));
        assert_eq!(
            limits2.can_evict(web0, now),
            Err(EvictionBlock::Pdb("default/web".into()))
        );
        // Two PDBs select the pod: blocked whatever they allow.
        let mut two = limits.clone();
        two.limits[0].disruptions_allowed = 5;
        two.limits.push(PdbLimit {
            key: "default/all".into(),
            ..two.limits[0].clone()
        });
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
}
