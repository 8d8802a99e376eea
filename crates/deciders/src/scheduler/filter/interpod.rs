//! InterPodAffinity, required terms only, prepared once per incoming pod.
//!
//! - Pod affinity: a placed pod counts for the incoming pod only if it
//!   matches *every* required affinity term; each term's topology domain of
//!   that pod's node then counts it. A node passes when it has every term's
//!   topology label and each term's domain there holds a counted pod. If no
//!   placed pod counts anywhere and the incoming pod matches its own terms,
//!   it is the first of its group and may go to any node that has the
//!   labels (kube-scheduler's self-affinity escape).
//! - Pod anti-affinity: per term, a node fails when its domain for the term's
//!   key holds a matching pod (nodes without the label pass).
//! - Existing pods' anti-affinity (the symmetric rule): a node fails when a
//!   placed pod whose required anti-affinity term matches the incoming pod
//!   sits in the same domain of that term's key.
//!
//! Only registered nodes (kube-scheduler's snapshot) are counted.

use super::super::placement::{Placement, TopologyId};
use super::Unfit;
use crate::cluster::NodeId;
use crate::kube::pod::PodSpec;
use crate::scheduler::topology::{MatchPart, MatcherId, PodMatcher};

/// Per topology domain counts of matching pods for one term.
#[derive(Debug, Clone)]
struct TermCounts {
    topology: TopologyId,
    counts: Vec<u32>,
}

/// The prepared InterPodAffinity filter of one pod.
#[derive(Debug, Clone, Default)]
pub struct AffinityFilter {
    /// Required affinity terms (empty: no affinity).
    affinity: Vec<TermCounts>,
    /// Some affinity term has no selector: it matches no pod, ever.
    affinity_impossible: bool,
    /// Some placed pod matched all affinity terms.
    affinity_found: bool,
    /// The pod matches all its own affinity terms.
    self_match: bool,
    /// Required anti-affinity terms.
    anti: Vec<TermCounts>,
    /// Domains (per topology key) where a placed pod's anti-affinity repels
    /// the incoming pod.
    repelled: Vec<(TopologyId, Vec<bool>)>,
}

impl AffinityFilter {
    /// Prepares the filter: O(nodes) per term plus one match test per placed
    /// pod anti-affinity term.
    pub fn new(spec: &PodSpec, placement: &mut Placement<'_>) -> AffinityFilter {
        let mut filter = AffinityFilter::default();
        let required = &spec.pod_affinity.required;
        if !required.is_empty() {
            let parts: Option<Vec<MatchPart>> = required
                .iter()
                .map(|t| MatchPart::for_affinity_term(t, spec))
                .collect();
            match parts {
                None => filter.affinity_impossible = true,
                Some(parts) => {
                    let matcher = PodMatcher { parts };
                    filter.self_match = matcher.matches(spec);
                    let id = placement.matcher(matcher);
                    for term in required {
                        let topology = placement.topology(&term.topology_key);
                        filter
                            .affinity
                            .push(count_per_domain(placement, topology, id));
                    }
                    filter.affinity_found = filter
                        .affinity
                        .iter()
                        .any(|t| t.counts.iter().any(|&c| c > 0));
                }
            }
        }
        for term in &spec.pod_anti_affinity.required {
            // A term without a selector repels nothing.
            let Some(part) = MatchPart::for_affinity_term(term, spec) else {
                continue;
            };
            let id = placement.matcher(PodMatcher::single(part));
            let topology = placement.topology(&term.topology_key);
            filter.anti.push(count_per_domain(placement, topology, id));
        }
        for placed in placement.placed_anti_affinity() {
            if !placed.matcher.matches(spec) {
                continue;
            }
            let index = placement.topology_index(placed.topology);
            let slot = match filter
                .repelled
                .iter()
                .position(|(t, _)| *t == placed.topology)
            {
                Some(slot) => slot,
                None => {
                    filter
                        .repelled
                        .push((placed.topology, vec![false; index.len()]));
                    filter.repelled.len() - 1
                }
            };
            for &node in &placed.nodes {
                let registered = placement.cluster().node(node).is_some_and(|n| n.registered);
                if let (true, Some(domain)) = (registered, index.domain_of(node)) {
                    filter.repelled[slot].1[domain as usize] = true;
                }
            }
        }
        filter
    }

    /// Whether the pod may go to `node`, checked in kube-scheduler's order:
    /// affinity, anti-affinity, existing pods' anti-affinity.
    pub fn check(&self, placement: &Placement<'_>, node: NodeId) -> Result<(), Unfit<'static>> {
        if self.affinity_impossible {
            return Err(Unfit::PodAffinity);
        }
        let mut pods_exist = true;
        for term in &self.affinity {
            let Some(d) = placement.topology_index(term.topology).domain_of(node) else {
                return Err(Unfit::PodAffinity);
            };
            if term.counts[d as usize] == 0 {
                pods_exist = false;
            }
        }
        if !pods_exist && (self.affinity_found || !self.self_match) {
            return Err(Unfit::PodAffinity);
        }
        for term in &self.anti {
            let domain = placement.topology_index(term.topology).domain_of(node);
            if domain.is_some_and(|d| term.counts[d as usize] > 0) {
                return Err(Unfit::PodAntiAffinity);
            }
        }
        for (topology, repelled) in &self.repelled {
            let domain = placement.topology_index(*topology).domain_of(node);
            if domain.is_some_and(|d| repelled[d as usize]) {
                return Err(Unfit::ExistingPodsAntiAffinity);
            }
        }
        Ok(())
    }
}

/// Sums a matcher's per-node counts into the domains of one topology key,
/// over registered nodes.
fn count_per_domain(
    placement: &Placement<'_>,
    topology: TopologyId,
    matcher: MatcherId,
) -> TermCounts {
    let index = placement.topology_index(topology);
    let mut counts = vec![0u32; index.len()];
    for (id, node) in placement.cluster().nodes() {
        if !node.registered {
            continue;
        }
        if let Some(d) = index.domain_of(id) {
            counts[d as usize] += placement.matching_on(matcher, id);
        }
    }
    TermCounts { topology, counts }
}
