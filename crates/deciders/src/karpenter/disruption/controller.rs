//! The disruption controller's decision: one pass of Emptiness → Drift →
//! Multi-node → Single-node consolidation over a read-only cluster view
//! (core: pkg/controllers/disruption/controller.go), and the 15 s
//! re-validation of a command before it executes.
//!
//! The methods live in `methods`, the re-check in `validation`, the
//! simulation in `simulate` and the N → 0/1 decision in `consolidation`.
//!
//! Simplifications: a pass is stateless, so upstream's "skip consolidation
//! while the cluster state is unchanged" shortcut and single-node's memory
//! of NodePools a timed-out pass did not reach are left to the caller; the
//! multi- (1 min) and single-node (3 min) wall-clock timeouts are replaced
//! by an optional bound on single-node evaluations
//! ([`DisruptionOptions::single_node_candidate_limit`]).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use crate::cloud::Price;
use crate::karpenter::provisioning::{NewNodeClaim, NodePoolContext, Prepared};
use crate::kube::pod::PodSpec;
use crate::kube::resources::ResourceKind;
use crate::nodepool::DisruptionReason;
use crate::scheduler::{Cluster, NodeId, PodId};
use crate::time::{SimDuration, SimTime};

use super::candidates::CandidateCache;
use super::reasons::{CommandInvalid, Unconsolidatable};
use crate::pdb::ControllerScales;

/// Feature gates and options that change disruption decisions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DisruptionOptions {
    /// Feature gate `SpotToSpotConsolidation` (default off).
    pub spot_to_spot_consolidation: bool,
    /// At most this many single-node consolidation simulations per pass
    /// (`None` = all candidates). Stands in for upstream's 3-minute
    /// single-node timeout, which bounds the same work by wall-clock time.
    pub single_node_candidate_limit: Option<usize>,
}

/// Everything a disruption pass reads.
#[derive(Debug, Clone, Copy)]
pub struct DisruptionInput<'a> {
    /// The cluster (PDBs are in `cluster.pdbs`).
    pub cluster: &'a Cluster,
    /// Every NodePool with its catalog (as provisioning sees them).
    pub nodepools: &'a [NodePoolContext<'a>],
    /// DaemonSet pod templates.
    pub daemonsets: &'a [Arc<PodSpec>],
    /// Desired replicas of pod owners (for PDB percentages).
    pub scales: &'a ControllerScales,
    /// Pods pending right now (they join every consolidation simulation).
    pub pending: &'a [PodId],
    /// Nodes already in the orchestration queue (being disrupted).
    pub in_flight: &'a BTreeSet<NodeId>,
    /// Spare resource slot that holds `limits.nodes`, if any.
    pub node_count_resource: Option<ResourceKind>,
    /// Options.
    pub options: DisruptionOptions,
    /// The decision instant.
    pub now: SimTime,
    /// The solve setup for `nodepools` and `daemonsets`, when the caller
    /// keeps one ([`Prepared::new`]); `None` has each pass build its own,
    /// once, for all of its simulations.
    pub prepared: Option<&'a Prepared>,
    /// Candidates' node facts kept from earlier passes over this cluster,
    /// when the caller keeps them; `None` makes them every time.
    pub candidate_cache: Option<&'a CandidateCache>,
    /// The caller's event dedupe, if it says: a node whose
    /// `Unconsolidatable` message it would drop now is quiet, and its
    /// single-node simulations stop as soon as the outcome is sure to be a
    /// no-op, which then carries no message, nor does its rejection as a
    /// candidate. Decisions are the same either way.
    pub message_dedupe: Option<MessageDedupe<'a>>,
}

/// When each node's last message was published, and how long that drops
/// the next ones (upstream's event recorder cache).
#[derive(Debug, Clone, Copy)]
pub struct MessageDedupe<'a> {
    /// Per node, when its last message was published.
    pub published: &'a BTreeMap<NodeId, SimTime>,
    /// How long a published message drops the next ones.
    pub window: SimDuration,
}

impl MessageDedupe<'_> {
    /// Whether a message about `node` at `now` would be dropped: one was
    /// published no longer than the window before.
    pub fn drops(&self, node: NodeId, now: SimTime) -> bool {
        self.published
            .get(&node)
            .is_some_and(|&at| Self::silences(self.window, at, now))
    }

    /// Whether a message published `at` still drops the next ones at
    /// `now`, under a dedupe of `window`.
    pub fn silences(window: SimDuration, at: SimTime, now: SimTime) -> bool {
        now <= at + window
    }
}

impl DisruptionInput<'_> {
    /// Whether the caller would drop a message about `node` now.
    pub fn is_quiet(&self, node: NodeId) -> bool {
        self.message_dedupe
            .is_some_and(|dedupe| dedupe.drops(node, self.now))
    }
}

/// Which method produced a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Method {
    /// Emptiness.
    Emptiness,
    /// Drift.
    Drift,
    /// Multi-node consolidation.
    MultiNodeConsolidation,
    /// Single-node consolidation.
    SingleNodeConsolidation,
}

/// A decided disruption: delete `candidates`, after launching
/// `replacements` (empty = pure delete).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    /// The method that produced it.
    pub method: Method,
    /// The disruption reason (budgets and reports use it).
    pub reason: DisruptionReason,
    /// Nodes to disrupt.
    pub candidates: Vec<NodeId>,
    /// Replacement NodeClaims to launch first (launch with
    /// `provisioning::choose_offering`).
    pub replacements: Vec<NewNodeClaim>,
    /// Σ candidate prices − cheapest replacement price (0 for drift).
    pub estimated_savings: Price,
    /// Whether the command waits [`super::COMMAND_VALIDATION_DELAY`] and
    /// must pass [`validate`] before executing (Emptiness and
    /// consolidation; not Drift).
    pub needs_validation: bool,
    /// What a user reads, e.g. `replace 3 × m5.2xlarge with 1 × c6a.4xlarge:
    /// underutilized, saves $0.41/h`.
    pub explanation: String,
}

/// The outcome of one pass.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PassOutcome {
    /// The command to start, if any method acted.
    pub command: Option<Command>,
    /// Why nodes were not disrupted this pass, in upstream's words
    /// (`Unconsolidatable` events): at most one per node.
    pub unconsolidatable: Vec<(NodeId, Unconsolidatable)>,
}

/// One disruption pass: the first method (Emptiness, Drift, Multi-node,
/// Single-node) that yields a command wins.
pub fn next_command(input: &DisruptionInput<'_>) -> PassOutcome {
    super::methods::run_pass(input)
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
