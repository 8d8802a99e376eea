//! The last pass that made no command, kept with everything it read, so
//! that a pass reading the very same things before any of its
//! time-dependent judgements can turn hands back its outcome instead of
//! running again.
//!
//! A pass is a function of its input, the controller's consolidation
//! state, its recorder's memory of published messages and the instant. The
//! kept pass is reused while:
//!
//! - the solve setup (NodePools, DaemonSets, catalogs: the same
//!   [`Prepared`]), the cluster's nodes and the pods bound to them (the
//!   cluster's revision), the pending pods, the nodes in flight, the PDB
//!   limits, the `limits.nodes` slot, the caller's consolidation state and
//!   what each consolidation method last found nothing at are all the same;
//! - and the instant is before the pass's [`Horizon`]: every judgement of a
//!   pass that reads the instant says there when its answer would next
//!   change (a node's `consolidateAfter` elapsing, a nomination ending, a
//!   pod's do-not-disrupt duration ending, a node's last message leaving
//!   the recorder's dedupe window; a scheduled budget says "any time").
//!
//! The recorder's memory does change in between: the messages the kept
//! pass gave are published after it, which makes those nodes quiet. A quiet
//! node's message is dropped on publishing and its what-ifs decide as a
//! loud one's do, so handing back the kept pass's messages publishes what a
//! new pass would. A rule that reads the instant and reports no horizon
//! would make reuse wrong: the `pass_reuse` property tests compare a
//! controller that reuses passes with one that runs every pass.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::types::{DisruptionInput, Method, PassOutcome};
use crate::karpenter::provisioning::Prepared;
use crate::kube::resources::ResourceKind;
use crate::pdb::PdbLimits;
use crate::scheduler::{NodeId, PodId};
use crate::time::SimTime;

/// The earliest instant at which a judgement a pass made could turn, as
/// the judgements report it (shared between the pass's threads).
#[derive(Debug)]
pub struct Horizon(AtomicI64);

impl Default for Horizon {
    fn default() -> Self {
        Horizon(AtomicI64::new(i64::MAX))
    }
}

impl Horizon {
    /// A judgement read now may turn at `at`.
    pub(crate) fn turns_at(&self, at: SimTime) {
        self.0.fetch_min(at.signed_millis(), Ordering::Relaxed);
    }

    /// A judgement read at `now` may turn at `at`, if that is still to
    /// come.
    pub(crate) fn turns_after(&self, now: SimTime, at: SimTime) {
        if at > now {
            self.turns_at(at);
        }
    }

    /// The instant from which the pass may decide otherwise.
    fn at(&self) -> SimTime {
        SimTime::from_signed_millis(self.0.load(Ordering::Relaxed))
    }
}

/// Everything a pass reads besides the instant and the recorder's memory.
#[derive(Debug, PartialEq)]
struct PassKey {
    prepared: Setup,
    cluster_revision: u64,
    pending: Vec<PodId>,
    in_flight: BTreeSet<NodeId>,
    pdbs: PdbLimits,
    node_count_resource: Option<ResourceKind>,
    consolidation_state: Option<SimTime>,
    consolidated: BTreeMap<Method, SimTime>,
}

impl PassKey {
    fn of(
        input: &DisruptionInput<'_>,
        prepared: &Arc<Prepared>,
        consolidated: &BTreeMap<Method, SimTime>,
    ) -> PassKey {
        PassKey {
            prepared: Setup(prepared.clone()),
            cluster_revision: input.cluster.revision(),
            pending: input.pending.to_vec(),
            in_flight: input.in_flight.clone(),
            pdbs: PdbLimits::from_cluster(input.cluster, input.scales),
            node_count_resource: input.node_count_resource,
            consolidation_state: input.consolidation_state,
            consolidated: consolidated.clone(),
        }
    }
}

/// A solve setup, equal only to itself (held, so its address stays its
/// own).
struct Setup(Arc<Prepared>);

impl PartialEq for Setup {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl std::fmt::Debug for Setup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Setup({:p})", Arc::as_ptr(&self.0))
    }
}

/// The kept pass, if any.
#[derive(Debug, Default)]
pub(crate) struct KeptPass {
    kept: Mutex<Option<Kept>>,
    reused: AtomicU64,
}

#[derive(Debug)]
struct Kept {
    key: PassKey,
    /// The pass's horizon: reused only before it.
    until: SimTime,
    outcome: PassOutcome,
}

/// What a pass about to run needs to be kept afterwards.
pub(crate) struct PassToKeep {
    key: PassKey,
    /// Its judgements report here.
    pub(crate) horizon: Horizon,
}

impl KeptPass {
    fn lock(&self) -> MutexGuard<'_, Option<Kept>> {
        self.kept.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Passes handed back so far.
    pub(crate) fn reused(&self) -> u64 {
        self.reused.load(Ordering::Relaxed)
    }

    /// The kept outcome when the pass about to run would read what the
    /// kept one read, before its horizon; otherwise what to keep of the
    /// pass once it has run.
    pub(crate) fn reuse(
        &self,
        input: &DisruptionInput<'_>,
        prepared: &Arc<Prepared>,
        consolidated: &BTreeMap<Method, SimTime>,
    ) -> Result<PassOutcome, Box<PassToKeep>> {
        let key = PassKey::of(input, prepared, consolidated);
        match &*self.lock() {
            Some(kept) if input.now < kept.until && kept.key == key => {
                self.reused.fetch_add(1, Ordering::Relaxed);
                Ok(kept.outcome.clone())
            }
            _ => Err(Box::new(PassToKeep {
                key,
                horizon: Horizon::default(),
            })),
        }
    }

    /// Keeps a pass that made no command (one that made a command changes
    /// the cluster, and is forgotten).
    pub(crate) fn keep(&self, pass: Box<PassToKeep>, outcome: &PassOutcome) {
        *self.lock() = outcome.command.is_none().then(|| Kept {
            until: pass.horizon.at(),
            key: pass.key,
            outcome: outcome.clone(),
        });
    }
}
