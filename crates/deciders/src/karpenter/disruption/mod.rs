//! Karpenter's disruption controller: its pure foundations (budgets and
//! their cron schedules, PDB arithmetic, candidate selection with upstream's
//! rejection reasons, candidate ordering, drift and expiration checks, the
//! Emptiness and consolidation decisions) and the decision of a pass
//! (`controller`). Everything takes `now` as a parameter and reads the
//! cluster without changing it (core: pkg/controllers/disruption,
//! pkg/utils/pdb, pkg/utils/pod, pkg/controllers/nodeclaim/{disruption,
//! expiration}).
//!
//! Layers, each using only those before it: `reasons` (every reason as a
//! value whose `Display` is upstream's sentence) and `cache` (what a caller
//! keeps between passes, single-node's kept verdicts in `verdicts`); `types`; the foundations; `context` (what a pass
//! reads); `methods` (one file per method); `pass` and `validation`;
//! `controller`, the entry points.

pub mod balanced;
pub mod budgets;
pub mod cache;
pub mod candidates;
pub mod consolidation;
mod context;
pub mod controller;
pub mod cron;
pub mod drift;
pub mod emptiness;
pub mod explain;
mod kept_pass;
mod methods;
mod no_op_bound;
pub mod ordering;
mod pass;
pub mod reasons;
mod searches;
pub mod simulate;
pub mod types;
mod validation;
mod verdicts;

#[cfg(test)]
mod controller_tests;

use crate::time::SimDuration;

/// Delay before an Emptiness or consolidation command is re-validated
/// (upstream `commandValidationDelay`).
pub const COMMAND_VALIDATION_DELAY: SimDuration = SimDuration::from_secs(15);
/// How long a node stays nominated for pending pods:
/// `max(2 × BATCH_MAX_DURATION, 10s)` with the default 10 s batch.
pub const NOMINATION_WINDOW: SimDuration = SimDuration::from_secs(20);
/// Pause between disruption passes that found nothing to do.
pub const POLLING_PERIOD: SimDuration = SimDuration::from_secs(10);
/// A consolidation state this old is renewed when read, so a method that
/// found nothing computes again at least this often (core:
/// state/cluster.go `ConsolidationState`).
pub const CONSOLIDATION_STATE_RESET: SimDuration = SimDuration::from_mins(5);

pub use crate::pdb::{ControllerScales, PdbLimits};
pub use budgets::{SIM_EPOCH_UNIX_SECONDS, allowed_disruptions, budget_mapping, is_active};
pub use candidates::{Candidate, CandidateInputs, DisruptionClass, Rejection, new_candidate};
pub use controller::{
    Command, Disruption, DisruptionInput, DisruptionOptions, Method, PassOutcome,
    UNCONSOLIDATABLE_DEDUPE, next_command, revalidate, validate,
};
pub use kept_pass::Horizon;
