//! Static NodePools (`spec.replicas`, alpha behind the `StaticCapacity`
//! gate; core designs/static-capacity.md, pkg/controllers/static/
//! provisioning and deprovisioning, state/statenodepool.go): what the two
//! static controllers decide for one NodePool from the nodes it has.
//!
//! Counting follows upstream's `NodePoolState`: a NodeClaim is *active*
//! until it is marked for deletion (a disruption command's candidate, or a
//! deleted NodeClaim draining), *deleting* from then until its node is
//! gone. (Upstream's third state, pending disruption, lasts only between a
//! command tainting its candidates and marking them for deletion, which
//! karpsim does at one instant.) The provisioning controller creates
//! `replicas − active` NodeClaims, but never so many that active +
//! deleting exceeds `limits.nodes`; the deprovisioning controller deletes
//! `active − replicas`, empty nodes first.
//!
//! A static NodeClaim carries the NodePool's requirements only: the cloud
//! provider picks its instance type among every compatible one at launch
//! (core: scheduling/nodeclaimtemplate.go `ToNodeClaim` leaves static
//! NodeClaims' instance types to `Create`), with no pods and no requests.

use std::cmp::Ordering;

use crate::cloud::Catalog;
use crate::karpenter::disruption::candidates::lifetime_remaining;
use crate::karpenter::instance_types::template_requirements;
use crate::karpenter::provisioning::{MinValuesPolicy, NewNodeClaim};
use crate::kube::resources::{ResourceKind, Resources};
use crate::nodepool::NodePool;
use crate::pods::{eviction_cost, is_do_not_disrupt_active};
use crate::scheduler::{Cluster, NodeId};
use crate::time::SimTime;

/// A static NodePool's NodeClaims by state (upstream `GetNodeCount`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StaticCounts {
    /// Launched and not marked for deletion.
    pub active: u32,
    /// Marked for deletion, node not gone yet.
    pub deleting: u32,
}

/// The counts of NodePool `pool`'s nodes in `cluster`.
pub fn static_counts(cluster: &Cluster, pool: &str) -> StaticCounts {
    let mut counts = StaticCounts::default();
    for (_, node) in cluster.nodes() {
        if node.nodepool() != Some(pool) {
            continue;
        }
        if node.marked_for_deletion {
            counts.deleting += 1;
        } else {
            counts.active += 1;
        }
    }
    counts
}

/// `limits.nodes` of a NodePool, if set (read into the slot
/// `node_count_resource`).
pub fn node_limit(pool: &NodePool, node_count_resource: Option<ResourceKind>) -> Option<u64> {
    // The slot holds a node count (the limits count one per node there).
    let limit = *pool.limits.get(&node_count_resource?)?;
    Some(u64::try_from(limit).unwrap_or(0))
}

/// What the static controllers do for one NodePool now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StaticAction {
    /// As many NodeClaims as replicas (counting those being replaced).
    Satisfied,
    /// Create this many NodeClaims.
    Create(u32),
    /// Fewer than replicas, but `limits.nodes` allows none now
    /// ("nodepool node limit reached"; upstream retries in 30 s).
    LimitReached,
    /// Delete this many NodeClaims (replicas decreased).
    ScaleDown(u32),
}

/// The provisioning and deprovisioning controllers' decision for a static
/// NodePool with `replicas`, its counts and its `limits.nodes`.
pub fn static_action(replicas: u32, counts: StaticCounts, limit: Option<u64>) -> StaticAction {
    let (active, deleting) = (u64::from(counts.active), u64::from(counts.deleting));
    let replicas = u64::from(replicas);
    if active > replicas {
        return StaticAction::ScaleDown((active - replicas) as u32);
    }
    if active >= replicas {
        return StaticAction::Satisfied;
    }
    // `ReserveNodeCount`: what the limit leaves after every NodeClaim the
    // pool has, active or deleting.
    let room = limit.map_or(u64::MAX, |l| l.saturating_sub(active + deleting));
    match (replicas - active).min(room) {
        0 => StaticAction::LimitReached,
        n => StaticAction::Create(n as u32),
    }
}

/// The `count` NodeClaims of `pool` the deprovisioning controller deletes
/// (`getDeprovisioningCandidates`): empty nodes first (no pods, or only
/// DaemonSet pods none of which has an active do-not-disrupt), in node
/// order (upstream walks its node map, in no set order); then the others,
/// those without a do-not-disrupt pod first, by Σ eviction cost of their
/// pods × lifetime remaining, ascending (ties in node order).
pub fn scale_down_candidates(
    cluster: &Cluster,
    pool: &NodePool,
    count: u32,
    now: SimTime,
) -> Vec<NodeId> {
    let count = count as usize;
    let mut empty = Vec::new();
    let mut others: Vec<(bool, f64, NodeId)> = Vec::new();
    for (id, node) in cluster.nodes() {
        if node.nodepool() != Some(pool.name.as_str()) || node.marked_for_deletion {
            continue;
        }
        let Some(claim) = &node.claim else {
            continue;
        };
        let pods: Vec<_> = node.pods.iter().filter_map(|&p| cluster.pod(p)).collect();
        let do_not_disrupt = pods.iter().any(|p| is_do_not_disrupt_active(p, now));
        if pods.iter().all(|p| p.is_daemonset()) && !do_not_disrupt {
            empty.push(id);
            continue;
        }
        let cost: f64 = pods.iter().map(|p| eviction_cost(p)).sum();
        others.push((
            do_not_disrupt,
            cost * lifetime_remaining(node, claim, now),
            id,
        ));
    }
    empty.truncate(count);
    others.sort_by(|a, b| {
        a.0.cmp(&b.0)
            .then_with(|| a.1.partial_cmp(&b.1).unwrap_or(Ordering::Equal))
            .then_with(|| a.2.cmp(&b.2))
    });
    let more = count - empty.len();
    empty.extend(others.into_iter().take(more).map(|(_, _, id)| id));
    empty
}

/// The NodeClaim a static NodePool (index `nodepool` of the NodePools in
/// force) creates: its template's requirements, every catalog type as an
/// option (the launch keeps the compatible ones with an available
/// offering), no pods. Under `MinValuesPolicy::BestEffort` the launch does
/// not check `minValues` (the cloud provider's truncation does so only
/// under Strict); no scheduler relaxed them, so the annotation is `false`.
pub fn static_nodeclaim(
    nodepool: usize,
    pool: &NodePool,
    catalog: &Catalog,
    min_values: MinValuesPolicy,
) -> NewNodeClaim {
    NewNodeClaim {
        nodepool,
        requirements: template_requirements(pool),
        instance_types: (0..catalog.len()).collect(),
        pods: Vec::new(),
        requests: Resources::ZERO,
        min_values_relaxed: (min_values == MinValuesPolicy::BestEffort).then_some(false),
    }
}

#[cfg(test)]
#[path = "static_capacity_tests.rs"]
mod tests;
