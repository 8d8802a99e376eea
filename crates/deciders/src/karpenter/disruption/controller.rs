//! The disruption controller's decision: one pass of Emptiness → Drift →
//! Multi-node → Single-node consolidation over a read-only cluster view
//! (core: pkg/controllers/disruption/controller.go), and the 15 s
//! re-validation of a command before it executes.
//!
//! The pass lives in `pass`, which walks the method list of `methods` (one
//! file per method behind one trait); what a pass reads is `context`, the
//! re-check `validation`, the simulation `simulate` and the N → 0/1
//! decision `consolidation`. The types they share are in `types`, which
//! depends on none of them (this module re-exports them).
//!
//! Simplifications: a pass is stateless, so upstream's "skip consolidation
//! while the cluster state is unchanged" shortcut and single-node's memory
//! of NodePools a timed-out pass did not reach are left to the caller; the
//! multi- (1 min) and single-node (3 min) wall-clock timeouts are replaced
//! by an optional bound on single-node evaluations
//! ([`DisruptionOptions::single_node_candidate_limit`]).

use super::reasons::CommandInvalid;
pub use super::types::{
    Command, DisruptionInput, DisruptionOptions, MessageDedupe, Method, PassOutcome,
};

/// One disruption pass: the first method (Emptiness, Drift, Multi-node,
/// Single-node) that yields a command wins.
pub fn next_command(input: &DisruptionInput<'_>) -> PassOutcome {
    super::pass::run_pass(input)
}

/// Re-checks a command after the validation delay (core:
/// disruption/validation.go); `Err` says why it was dropped. `Ok` only when
/// the whole command still holds: an Emptiness command of which only some
/// nodes survive fails here, while [`revalidate`] returns the survivors
/// (which upstream goes on to delete).
pub fn validate(input: &DisruptionInput<'_>, command: &Command) -> Result<(), String> {
    let survivor = revalidate(input, command)?;
    if survivor.candidates == command.candidates {
        Ok(())
    } else {
        Err(CommandInvalid::ChurnOf {
            gone: command.candidates.len() - survivor.candidates.len(),
            of: command.candidates.len(),
        }
        .to_string())
    }
}

/// Re-checks a command after the validation delay and returns what may
/// execute: the command itself, or for Emptiness the nodes that are still
/// empty, eligible and within budget. Drift commands are not validated.
/// Error messages start with upstream's failure class (`churn`, `budget`,
/// `scheduling`).
pub fn revalidate(input: &DisruptionInput<'_>, command: &Command) -> Result<Command, String> {
    super::validation::revalidate(input, command).map_err(|invalid| invalid.to_string())
}
