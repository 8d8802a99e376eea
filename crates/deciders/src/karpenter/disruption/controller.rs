//! The disruption controller's decision: one pass of Emptiness → StaticDrift →
//! Drift → Multi-node → Single-node consolidation over a read-only cluster view
//! (core: pkg/controllers/disruption/controller.go), and the 15 s
//! re-validation of a command before it executes.
//!
//! The pass lives in `pass`, which walks the method list of `methods` (one
//! file per method behind one trait); what a pass reads is `context`, the
//! re-check `validation`, the simulation `simulate` and the N → 0/1
//! decision `consolidation`. The types they share are in `types`, which
//! depends on none of them (this module re-exports them).
//!
//! [`Disruption`] is the controller as an object: its options, each
//! node's candidate facts kept by node revision, its event recorder's
//! memory of published `Unconsolidatable` messages (upstream's 15 min
//! dedupe), which also tells a pass which nodes are quiet so their
//! what-ifs can stop early, and the consolidation state each consolidation
//! method last found nothing at (upstream's `lastConsolidationState`), so
//! that it skips passes until the caller's
//! [`DisruptionInput::consolidation_state`] changes, and the last pass
//! that made no command, handed back while nothing it read has changed
//! (`kept_pass`). The free functions
//! run one pass with nothing kept (every method computes).
//!
//! Simplifications: single-node's memory of NodePools a timed-out pass did
//! not reach is not kept; the multi- (1 min) and single-node (3 min)
//! wall-clock timeouts are replaced by an optional bound on single-node
//! evaluations ([`DisruptionOptions::single_node_candidate_limit`]).

use std::collections::{BTreeMap, BTreeSet};

use super::cache::CandidateCache;
use super::kept_pass::{Horizon, KeptPass};
use super::reasons::{CommandInvalid, Unconsolidatable};
pub use super::types::{Command, DisruptionInput, DisruptionOptions, Method, PassOutcome};
use super::types::{MessageDedupe, PassInput};
use crate::karpenter::events::dedupe_drops;
use crate::karpenter::provisioning::Provisioner;
use crate::scheduler::{Cluster, NodeId};
use crate::time::{SimDuration, SimTime};

/// How long an `Unconsolidatable` event for a node silences the next ones
/// (core: disruption/events `Unconsolidatable` `DedupeTimeout`).
pub const UNCONSOLIDATABLE_DEDUPE: SimDuration = SimDuration::from_mins(15);

/// The disruption controller: options, candidate facts kept from pass to
/// pass, and when each node's last `Unconsolidatable` message was
/// published.
#[derive(Debug, Default)]
pub struct Disruption {
    options: DisruptionOptions,
    candidate_cache: CandidateCache,
    /// Per node, when its last message was published (within the last
    /// [`UNCONSOLIDATABLE_DEDUPE`], as of the last [`Disruption::publish`]).
    published: BTreeMap<NodeId, SimTime>,
    /// Per consolidation method, the consolidation state it last found
    /// nothing at.
    consolidated: BTreeMap<Method, SimTime>,
    /// The last pass that made no command, with what it read.
    kept_pass: KeptPass,
    /// Whether every pass runs instead of a kept one being handed back
    /// (only in tests that watch what a pass reuses inside).
    runs_every_pass: bool,
}

impl Disruption {
    /// A controller with `options` that has run no pass yet.
    pub fn new(options: DisruptionOptions) -> Disruption {
        Disruption {
            options,
            ..Disruption::default()
        }
    }

    /// The controller, running every pass instead of handing back a kept
    /// one (for tests of what a pass reuses inside).
    #[cfg(test)]
    pub(crate) fn running_every_pass(mut self) -> Disruption {
        self.runs_every_pass = true;
        self
    }

    /// How many passes handed back the last pass's outcome instead of
    /// running (see `kept_pass`).
    pub fn passes_reused(&self) -> u64 {
        self.kept_pass.reused()
    }

    /// Its options.
    pub fn options(&self) -> &DisruptionOptions {
        &self.options
    }

    /// How many single-node consolidation verdicts its passes reused
    /// instead of simulating.
    pub fn verdicts_reused(&self) -> u64 {
        self.candidate_cache.verdicts.reused()
    }

    /// How many multi-node consolidation searches its passes skipped
    /// because they would have read what the last no-op search read.
    pub fn searches_reused(&self) -> u64 {
        self.candidate_cache.multi_node.reused()
    }

    fn pass_input<'a>(
        &'a self,
        input: &DisruptionInput<'a>,
        prepared: &'a crate::karpenter::provisioning::Prepared,
        horizon: Option<&'a Horizon>,
    ) -> PassInput<'a> {
        PassInput {
            horizon,
            prepared: Some(prepared),
            candidate_cache: Some(&self.candidate_cache),
            consolidated: input
                .consolidation_state
                .map(|state| (&self.consolidated, state)),
            message_dedupe: Some(MessageDedupe {
                published: &self.published,
                window: UNCONSOLIDATABLE_DEDUPE,
            }),
            ..PassInput::one_shot(input, self.options)
        }
    }

    /// One pass (see [`next_command`]) with what the controller keeps and
    /// the provisioner's solve setup: the command, and why nodes were not
    /// disrupted, before the recorder's dedupe ([`Disruption::publish`]).
    pub fn pass(&self, input: &DisruptionInput<'_>, provisioner: &Provisioner) -> PassOutcome {
        let prepared = provisioner.prepared(input.nodepools, input.daemonsets);
        let to_keep = match self.runs_every_pass {
            true => None,
            false => match self.kept_pass.reuse(input, &prepared, &self.consolidated) {
                Ok(outcome) => return outcome,
                Err(to_keep) => Some(to_keep),
            },
        };
        self.candidate_cache.verdicts.begin_pass(&prepared);
        self.candidate_cache.multi_node.begin_pass(&prepared);
        let horizon = to_keep.as_ref().map(|pass| &pass.horizon);
        let outcome = super::pass::run_pass(&self.pass_input(input, &prepared, horizon));
        if let Some(to_keep) = to_keep {
            self.kept_pass.keep(to_keep, &outcome);
        }
        outcome
    }

    /// The messages of a pass its event recorder publishes at `now`,
    /// remembered: none about a node already being deleted (gone, marked,
    /// or in the orchestration queue `in_flight`: not news), and none about
    /// a node that had one published in the last [`UNCONSOLIDATABLE_DEDUPE`]
    /// (upstream's recorder drops events whose key, reason and node, it
    /// published within their timeout, whatever their message).
    pub fn publish(
        &mut self,
        cluster: &Cluster,
        in_flight: &BTreeSet<NodeId>,
        now: SimTime,
        messages: Vec<(NodeId, Unconsolidatable)>,
    ) -> Vec<(NodeId, Unconsolidatable)> {
        self.published
            .retain(|_, &mut at| dedupe_drops(at, UNCONSOLIDATABLE_DEDUPE, now));
        let mut out = Vec::new();
        for (node, reason) in messages {
            let deleting = cluster.node(node).is_none_or(|n| n.marked_for_deletion)
                || in_flight.contains(&node);
            let dedupe = MessageDedupe {
                published: &self.published,
                window: UNCONSOLIDATABLE_DEDUPE,
            };
            if deleting || dedupe.drops(node, now) {
                continue;
            }
            self.published.insert(node, now);
            out.push((node, reason));
        }
        out
    }

    /// Remembers that `methods` (a pass's [`PassOutcome::consolidated`])
    /// found nothing at consolidation state `state` (upstream
    /// `markConsolidated`): they skip the passes that see it.
    pub fn mark_consolidated(&mut self, methods: &[Method], state: SimTime) {
        for &method in methods {
            self.consolidated.insert(method, state);
        }
    }

    /// [`Disruption::pass`], then [`Disruption::publish`] of its messages
    /// and [`Disruption::mark_consolidated`] of the methods that found
    /// nothing.
    pub fn next_command(
        &mut self,
        input: &DisruptionInput<'_>,
        provisioner: &Provisioner,
    ) -> PassOutcome {
        let outcome = self.pass(input, provisioner);
        let unconsolidatable = self.publish(
            input.cluster,
            input.in_flight,
            input.now,
            outcome.unconsolidatable,
        );
        if let Some(state) = input.consolidation_state {
            self.mark_consolidated(&outcome.consolidated, state);
        }
        PassOutcome {
            command: outcome.command,
            unconsolidatable,
            consolidated: outcome.consolidated,
        }
    }

    /// [`validate`] with the controller's options and the provisioner's
    /// solve setup.
    pub fn validate(
        &self,
        input: &DisruptionInput<'_>,
        provisioner: &Provisioner,
        command: &Command,
    ) -> Result<(), String> {
        let prepared = provisioner.prepared(input.nodepools, input.daemonsets);
        validate_pass(&self.pass_input(input, &prepared, None), command)
    }
}

/// One disruption pass with default options and nothing kept: the first
/// method (Emptiness, Drift, Multi-node, Single-node) that yields a command
/// wins.
pub fn next_command(input: &DisruptionInput<'_>) -> PassOutcome {
    super::pass::run_pass(&PassInput::one_shot(input, DisruptionOptions::default()))
}

/// Re-checks a command after the validation delay (core:
/// disruption/validation.go); `Err` says why it was dropped. `Ok` only when
/// the whole command still holds: an Emptiness command of which only some
/// nodes survive fails here, while [`revalidate`] returns the survivors
/// (which upstream goes on to delete).
pub fn validate(input: &DisruptionInput<'_>, command: &Command) -> Result<(), String> {
    validate_pass(
        &PassInput::one_shot(input, DisruptionOptions::default()),
        command,
    )
}

pub(crate) fn validate_pass(input: &PassInput<'_>, command: &Command) -> Result<(), String> {
    let survivor = super::validation::revalidate(input, command).map_err(|e| e.to_string())?;
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
    super::validation::revalidate(
        &PassInput::one_shot(input, DisruptionOptions::default()),
        command,
    )
    .map_err(|invalid| invalid.to_string())
}
