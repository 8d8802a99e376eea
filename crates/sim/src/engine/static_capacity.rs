//! The static NodePool controllers (core: pkg/controllers/static/
//! provisioning and deprovisioning, run only with the `StaticCapacity`
//! gate) around their decision ([`crate::karpenter::static_capacity`]).
//!
//! Cadence, as upstream's watches and requeues: a reconcile of every
//! static NodePool at the start of the run, when the NodePools change,
//! whenever a static NodePool's NodeClaim is launched, deleted or gone, or
//! a disruption command on one fails, and else every minute (30 s while
//! `limits.nodes` holds a creation back). A scale-down deletes NodeClaims
//! through the termination controller's drain (PDBs respected, no
//! disruption budget: upstream counts it a forceful method, as
//! expiration), with reason `overprovisioned`. A launch whose CreateFleet
//! request finds no capacity marks its offerings unavailable and is tried
//! again at once with what is left (upstream deletes the NodeClaim on
//! insufficient capacity, which the controller sees and replaces); with no
//! offering left it waits for the next reconcile.

use super::{Engine, EngineError, Event, EventType};
use crate::karpenter::static_capacity::{
    StaticAction, node_limit, scale_down_candidates, static_action, static_counts, static_nodeclaim,
};
use crate::scheduler::NodeId;
use crate::time::{SimDuration, SimTime};

/// Upstream's requeue of a static NodePool that needs nothing.
pub const STATIC_REQUEUE: SimDuration = SimDuration::from_mins(1);
/// Upstream's requeue while `limits.nodes` holds creations back.
pub const STATIC_LIMIT_REQUEUE: SimDuration = SimDuration::from_secs(30);
/// The reason of a NodeClaim a scale-down deletes (core:
/// static/deprovisioning `TerminationReason`).
pub const OVERPROVISIONED: &str = "overprovisioned";

impl Engine<'_> {
    /// Whether the static controllers run and have a NodePool to act on.
    fn static_pools_in_force(&self) -> bool {
        self.input.karpenter.static_capacity
            && self
                .autoscaler
                .karpenter()
                .is_some_and(|k| k.pools.iter().any(|p| p.pool.is_static()))
    }

    /// Whether `node` belongs to a static NodePool in force.
    pub(super) fn is_static_node(&self, node: NodeId) -> bool {
        let Some(pool) = self.cluster.node(node).and_then(|n| n.nodepool()) else {
            return false;
        };
        self.autoscaler.karpenter().is_some_and(|k| {
            k.pools
                .iter()
                .any(|p| p.pool.name == pool && p.pool.is_static())
        })
    }

    /// Something the static controllers watch happened: reconcile now.
    pub(super) fn static_reconcile_soon(&mut self) -> Result<(), EngineError> {
        let now = self.now();
        self.schedule_static_reconcile(now)
    }

    fn schedule_static_reconcile(&mut self, at: SimTime) -> Result<(), EngineError> {
        if !self.static_pools_in_force() {
            return Ok(());
        }
        let karpenter = self.autoscaler.kp_mut();
        if karpenter.static_next.is_some_and(|t| t <= at) {
            return Ok(());
        }
        karpenter.static_next = Some(at);
        self.schedule(at, Event::StaticReconcile)
    }

    /// One reconcile of every static NodePool, in name order (upstream
    /// reconciles each NodePool on its own; at one instant that is the
    /// same).
    pub(super) fn static_reconcile(&mut self) -> Result<(), EngineError> {
        let now = self.now();
        if self.autoscaler.kp().static_next != Some(now) {
            return Ok(());
        }
        self.autoscaler.kp_mut().static_next = None;
        if !self.static_pools_in_force() {
            return Ok(());
        }
        let mut pools: Vec<(usize, String)> = self
            .autoscaler
            .kp()
            .pools
            .iter()
            .enumerate()
            .filter(|(_, p)| p.pool.is_static())
            .map(|(i, p)| (i, p.pool.name.clone()))
            .collect();
        pools.sort_by(|a, b| a.1.cmp(&b.1));
        let mut next = now + STATIC_REQUEUE;
        for (index, name) in pools {
            let karpenter = self.autoscaler.kp();
            let pool = &karpenter.pools[index].pool;
            let replicas = pool.replicas.unwrap_or(0);
            let counts = static_counts(&self.cluster, &name);
            let limit = node_limit(pool, karpenter.node_count_resource);
            match static_action(replicas, counts, limit) {
                StaticAction::Satisfied => {}
                StaticAction::LimitReached => next = next.min(now + STATIC_LIMIT_REQUEUE),
                StaticAction::ScaleDown(count) => {
                    let nodes = scale_down_candidates(&self.cluster, pool, count, now);
                    self.log(
                        EventType::Normal,
                        "StaticScaleDown",
                        format!("nodepool/{name}"),
                        format!(
                            "deprovisioning {} nodeclaim(s) to satisfy replica count (current {}, desired {replicas})",
                            nodes.len(),
                            counts.active
                        ),
                    );
                    for node in nodes {
                        self.start_termination(node, OVERPROVISIONED)?;
                    }
                }
                StaticAction::Create(count) => {
                    self.log(
                        EventType::Normal,
                        "StaticScaleUp",
                        format!("nodepool/{name}"),
                        format!(
                            "provisioning {count} nodeclaim(s) to satisfy replica count (current {}, desired {replicas})",
                            counts.active
                        ),
                    );
                    for _ in 0..count {
                        if !self.launch_static(index)? {
                            break;
                        }
                    }
                }
            }
        }
        self.schedule_static_reconcile(next)
    }

    /// Launches one NodeClaim of static NodePool `index`, trying again
    /// while CreateFleet failures leave other offerings; `false` when no
    /// offering is left.
    fn launch_static(&mut self, index: usize) -> Result<bool, EngineError> {
        loop {
            let karpenter = self.autoscaler.kp();
            let claim = static_nodeclaim(
                index,
                &karpenter.pools[index].pool,
                &karpenter.catalogs[index],
                self.input.karpenter.scheduling.min_values,
            );
            let cached = self.ice.len();
            if self.launch(&claim, "provisioning")?.is_some() {
                return Ok(true);
            }
            if self.ice.len() == cached {
                return Ok(false);
            }
        }
    }
}
