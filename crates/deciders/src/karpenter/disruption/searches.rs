//! Multi-node consolidation's last no-op search, kept from pass to pass so
//! that a pass whose search would read the very same inputs does not run
//! it again.
//!
//! Upstream marks multi-node consolidation consolidated only when no
//! budget held a candidate back, so with a percentage budget it searches
//! every pass. The search is a function of what it reads, and a pass
//! reuses the last no-op when all of it is the same:
//!
//! - the solve setup (NodePools, DaemonSets, catalogs: the same
//!   [`Prepared`]);
//! - the cluster's nodes and the pods bound to them (the cluster's
//!   revision), the pending pods, the nodes in flight and the PDB limits;
//! - the time-dependent parts of the simulation view: the deleting nodes,
//!   their pods, and the nodes inside their `consolidateAfter` window;
//! - the candidates within budget, in order, each with its price to beat
//!   and the pods a simulation would move off it (which do-not-disrupt
//!   durations and fully blocking PDBs decide at the pass's instant).
//!
//! Only a search that found nothing is kept: one that found a command
//! changes the cluster. The `verdict_reuse` property tests compare passes
//! that reuse with passes that keep nothing.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::cache::SetupBound;
use super::consolidation::price_to_beat;
use super::context::PassContext;
use super::simulate::ViewInputs;
use super::types::Candidate;
use crate::karpenter::provisioning::{Prepared, PriceToBeat};
use crate::pdb::PdbLimits;
use crate::scheduler::{NodeId, PodId};

/// The kept no-op search, if any.
#[derive(Debug, Default)]
pub(crate) struct NoOpSearch(Mutex<Kept>);

#[derive(Debug, Default)]
struct Kept {
    /// The search's inputs, with the solve setup it was made with.
    search: SetupBound<Option<SearchInputs>>,
    /// Searches skipped so far.
    reused: u64,
}

/// Everything a multi-node search reads besides the setup.
#[derive(Debug, PartialEq)]
pub(crate) struct SearchInputs {
    cluster_revision: u64,
    pending: Vec<PodId>,
    in_flight: Vec<NodeId>,
    pdbs: PdbLimits,
    view: ViewInputs,
    candidates: Vec<(NodeId, PriceToBeat, Arc<[PodId]>)>,
}

impl SearchInputs {
    /// What a search over `disruptable` (in order) reads in this pass.
    pub(crate) fn of(ctx: &PassContext<'_, '_>, disruptable: &[&Candidate]) -> SearchInputs {
        let input = ctx.input;
        let view = ctx.consolidation_view();
        SearchInputs {
            cluster_revision: input.cluster.revision(),
            pending: input.pending.to_vec(),
            in_flight: input.in_flight.iter().copied().collect(),
            pdbs: ctx.pdbs.clone(),
            view: view.inputs(),
            candidates: disruptable
                .iter()
                .map(|&c| {
                    let moving = view.moving_pods(input, &ctx.pdbs, c);
                    (c.node, price_to_beat(input, &[c]), moving)
                })
                .collect(),
        }
    }
}

impl NoOpSearch {
    fn lock(&self) -> MutexGuard<'_, Kept> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Searches skipped so far.
    pub(crate) fn reused(&self) -> u64 {
        self.lock().reused
    }

    /// A pass with `setup` begins: a search made with another setup goes.
    pub(crate) fn begin_pass(&self, setup: &Arc<Prepared>) {
        self.lock().search.begin_pass(setup);
    }

    /// Whether the kept search read exactly `inputs` (it then finds
    /// nothing again).
    pub(crate) fn finds_nothing(&self, inputs: &SearchInputs) -> bool {
        let mut kept = self.lock();
        let same = kept.search.as_ref() == Some(inputs);
        if same {
            kept.reused += 1;
        }
        same
    }

    /// Keeps the inputs of a search that found nothing, or forgets the
    /// kept one after a search that found a command.
    pub(crate) fn keep(&self, inputs: SearchInputs, found_nothing: bool) {
        let mut kept = self.lock();
        let made = found_nothing && kept.search.has_setup();
        *kept.search = made.then_some(inputs);
    }
}
