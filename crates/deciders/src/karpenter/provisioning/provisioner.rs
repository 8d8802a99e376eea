//! Karpenter's provisioner as a controller object: it keeps the solve
//! setup of the NodePools, catalogs and DaemonSets in force
//! ([`super::Prepared`]: templates, price tables, per-node requirement
//! caches) from solve to solve, so a caller solving again and again on one
//! evolving cluster pays for it once. A fresh `Provisioner` decides exactly
//! as [`super::solve`] does.

use std::sync::Arc;

use super::prepared::{Prepared, PreparedCache};
use super::{NodePoolContext, ProvisioningInput, SchedulingResult, SolveSetup, scheduler};
use crate::kube::pod::PodSpec;

/// Node removals after which the kept setup is rebuilt: it caches label
/// requirements per node and cannot tell which nodes are gone, so without
/// this a long run would keep every node it ever had there.
pub const PREPARED_NODE_REMOVALS: u32 = 512;

/// The provisioner and the setup it keeps.
#[derive(Debug, Default)]
pub struct Provisioner {
    prepared: PreparedCache,
    nodes_removed: u32,
}

impl Provisioner {
    /// A provisioner that keeps nothing yet.
    pub fn new() -> Provisioner {
        Provisioner::default()
    }

    /// Places `input.pods` (see [`super::solve`]) with the kept setup,
    /// built first when the NodePools or DaemonSets are not those it was
    /// built from.
    pub fn solve(&self, input: &ProvisioningInput<'_>) -> SchedulingResult {
        let prepared = self.prepared(input.nodepools, input.daemonsets);
        scheduler::solve(
            input,
            SolveSetup {
                prepared: Some(&prepared),
                ..SolveSetup::default()
            },
        )
    }

    /// The kept setup for these NodePools and DaemonSets (the disruption
    /// controller's what-ifs share it).
    pub fn prepared(
        &self,
        nodepools: &[NodePoolContext<'_>],
        daemonsets: &[Arc<PodSpec>],
    ) -> Arc<Prepared> {
        self.prepared.get(nodepools, daemonsets)
    }

    /// A catalog in force changed in place (an offering's availability or
    /// price): the kept setup, which priced it, is retired (the next one
    /// takes over its per-node caches, which no catalog decides).
    /// Replacing the NodePools or DaemonSets needs no call; they are
    /// compared.
    pub fn catalogs_changed(&self) {
        self.prepared.retire();
    }

    /// A node left the cluster; after [`PREPARED_NODE_REMOVALS`] of them
    /// the kept setup's per-node caches are dropped (decisions are the same
    /// either way).
    pub fn node_removed(&mut self) {
        self.nodes_removed += 1;
        if self.nodes_removed >= PREPARED_NODE_REMOVALS {
            self.nodes_removed = 0;
            self.prepared.clear();
        }
    }
}
