//! PodTopologySpread, `whenUnsatisfiable: DoNotSchedule` constraints.
//!
//! Per constraint, prepared once per incoming pod: the matching pods per
//! domain, counted on the *eligible* nodes only — registered nodes that
//! carry every constraint's topology key and pass the constraint's
//! inclusion policies (`nodeAffinityPolicy: Honor` = the pod's node selector
//! and required node affinity hold; `nodeTaintsPolicy: Honor` = no
//! untolerated NoSchedule/NoExecute taint; the defaults are Honor and
//! Ignore). The global minimum is taken over eligible domains, and is 0
//! while fewer than `minDomains` domains exist. A node passes when
//! `count(its domain) + (1 if the pod matches its own selector) − min ≤ maxSkew`;
//! a node without the topology label fails outright.
//! ScheduleAnyway constraints only score in kube-scheduler and are ignored
//! here.

use super::super::placement::{Placement, TopologyId};
use super::{Unfit, node_affinity_matches, untolerated_taint};
use crate::cluster::NodeId;
use crate::kube::pod::{InclusionPolicy, PodSpec, TopologySpreadConstraint, WhenUnsatisfiable};
use crate::scheduler::topology::PodMatcher;

#[derive(Debug, Clone)]
struct Constraint {
    topology: TopologyId,
    max_skew: i64,
    self_match: i64,
    /// Matching pods per domain id (eligible nodes only).
    counts: Vec<i64>,
    /// Global minimum (0 below `minDomains`; `i64::MAX` with no domain).
    min: i64,
}

/// The prepared DoNotSchedule spread constraints of one pod.
#[derive(Debug, Clone, Default)]
pub struct SpreadFilter {
    constraints: Vec<Constraint>,
}

impl SpreadFilter {
    /// Counts matching pods per domain for each hard constraint of `spec`.
    /// O(nodes × constraints) plus one matcher registration per constraint.
    pub fn new(spec: &PodSpec, placement: &mut Placement<'_>) -> SpreadFilter {
        let hard: Vec<&TopologySpreadConstraint> = spec
            .topology_spread
            .iter()
            .filter(|c| c.when_unsatisfiable == WhenUnsatisfiable::DoNotSchedule)
            .collect();
        if hard.is_empty() {
            return SpreadFilter::default();
        }
        let prepared: Vec<_> = hard
            .iter()
            .map(|c| {
                let topology = placement.topology(&c.topology_key);
                let matcher = PodMatcher::for_spread(c, spec);
                let self_match = matcher.as_ref().is_some_and(|m| m.matches(spec));
                let matcher = matcher.map(|m| placement.matcher(m));
                (topology, matcher, self_match)
            })
            .collect();
        let mut counts: Vec<Vec<i64>> = prepared
            .iter()
            .map(|(t, _, _)| vec![0; placement.topology_index(*t).len()])
            .collect();
        let mut present: Vec<Vec<bool>> = counts.iter().map(|c| vec![false; c.len()]).collect();
        for (id, node) in placement.cluster().nodes() {
            if !node.registered {
                continue;
            }
            let has_all_keys = prepared
                .iter()
                .all(|(t, _, _)| placement.topology_index(*t).domain_of(id).is_some());
            if !has_all_keys {
                continue;
            }
            let affinity_ok = node_affinity_matches(spec, &node.labels);
            let taints_ok = untolerated_taint(&node.taints, &spec.tolerations).is_none();
            for (i, c) in hard.iter().enumerate() {
                let included = (c.node_affinity_policy == InclusionPolicy::Ignore || affinity_ok)
                    && (c.node_taints_policy == InclusionPolicy::Ignore || taints_ok);
                if !included {
                    continue;
                }
                let Some(d) = placement.topology_index(prepared[i].0).domain_of(id) else {
                    continue;
                };
                let d = d as usize;
                present[i][d] = true;
                if let Some(m) = prepared[i].1 {
                    counts[i][d] += i64::from(placement.matching_on(m, id));
                }
            }
        }
        let constraints = hard
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let eligible = || (0..counts[i].len()).filter(|&d| present[i][d]);
                let domains = eligible().count();
                let min = if c
                    .min_domains
                    .is_some_and(|m| (domains as i64) < i64::from(m))
                {
                    0
                } else {
                    eligible().map(|d| counts[i][d]).min().unwrap_or(i64::MAX)
                };
                Constraint {
                    topology: prepared[i].0,
                    max_skew: i64::from(c.max_skew),
                    self_match: i64::from(prepared[i].2),
                    counts: std::mem::take(&mut counts[i]),
                    min,
                }
            })
            .collect();
        SpreadFilter { constraints }
    }

    /// Whether the pod may go to `node` without breaking a constraint.
    pub fn check(&self, placement: &Placement<'_>, node: NodeId) -> Result<(), Unfit<'static>> {
        for c in &self.constraints {
            let Some(domain) = placement.topology_index(c.topology).domain_of(node) else {
                return Err(Unfit::SpreadMissingLabel);
            };
            let count = c.counts.get(domain as usize).copied().unwrap_or(0);
            if count + c.self_match - c.min > c.max_skew {
                return Err(Unfit::Spread);
            }
        }
        Ok(())
    }

    /// Whether the pod has no hard spread constraint.
    pub fn is_empty(&self) -> bool {
        self.constraints.is_empty()
    }
}
