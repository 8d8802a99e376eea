//! Why the disruption controller did not disrupt a node, or dropped a
//! command, in upstream's words: candidate rejections (core:
//! disruption/types.go `NewCandidate`, state/statenode.go
//! `ValidateNodeDisruptable` / `ValidatePodsDisruptable`), the
//! `Unconsolidatable` messages of the methods' filters and simulations
//! (emptiness.go, consolidation.go `ShouldDisrupt`,
//! `computeConsolidation`, helpers.go `SimulateScheduling`, balanced.go)
//! and the validators' failures (validation.go).
//!
//! Each reason is a value; its `Display` is the sentence events and
//! reports carry, so the words live here and nowhere else. This module
//! depends on nothing else of the disruption controller.

use std::fmt;

use crate::kube::labels::LABEL_NODEPOOL;
use crate::kube::pod::DO_NOT_DISRUPT_ANNOTATION;
use crate::pods::pod_key;
use crate::scheduler::{Cluster, PodId};

/// Message when the `SpotToSpotConsolidation` gate is off.
pub const SPOT_TO_SPOT_DISABLED: &str =
    "SpotToSpotConsolidation is disabled, can't replace a spot node with a spot node";

/// Message when no option is cheaper than the candidates.
pub const NO_CHEAPER_NODE: &str = "Can't replace with a cheaper node";

/// Why a node is not a candidate, in upstream's words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rejection {
    /// Already in the orchestration queue.
    AlreadyDisrupting,
    /// No NodeClaim.
    NotManaged,
    /// No Node object yet.
    NoNode,
    /// Not initialized.
    NotInitialized,
    /// Deleting, marked for deletion, or instance terminating.
    Deleting,
    /// Nominated for pending pods.
    Nominated,
    /// The node carries `karpenter.sh/do-not-disrupt: "true"`.
    NodeDoNotDisrupt,
    /// No `karpenter.sh/nodepool` label.
    MissingNodePoolLabel,
    /// The NodePool does not exist.
    NodePoolNotFound(String),
    /// A pod's do-not-disrupt annotation is active (pod key).
    PodDoNotDisrupt(String),
    /// A PDB allows no eviction of a pod (PDB key).
    PdbBlocks(String),
    /// A pod is selected by several PDBs (PDB keys).
    MultiplePdbs(Vec<String>),
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rejection::AlreadyDisrupting => write!(f, "candidate is already being disrupted"),
            Rejection::NotManaged => write!(f, "node isn't managed by karpenter"),
            Rejection::NoNode => write!(f, "nodeclaim does not have an associated node"),
            Rejection::NotInitialized => write!(f, "node isn't initialized"),
            Rejection::Deleting => write!(f, "node is deleting or marked for deletion"),
            Rejection::Nominated => write!(f, "node is nominated for a pending pod"),
            Rejection::NodeDoNotDisrupt => write!(
                f,
                "disruption is blocked through the {DO_NOT_DISRUPT_ANNOTATION:?} annotation"
            ),
            Rejection::MissingNodePoolLabel => {
                write!(f, "node doesn't have required label {LABEL_NODEPOOL:?}")
            }
            Rejection::NodePoolNotFound(name) => write!(f, "NodePool not found (NodePool={name})"),
            Rejection::PodDoNotDisrupt(pod) => {
                write!(
                    f,
                    "pod {pod:?} has {DO_NOT_DISRUPT_ANNOTATION:?} annotation"
                )
            }
            Rejection::PdbBlocks(pdb) => write!(f, "pdb {pdb:?} prevents pod evictions"),
            Rejection::MultiplePdbs(pdbs) => {
                let keys: Vec<String> = pdbs.iter().map(|k| format!("{k:?}")).collect();
                write!(
                    f,
                    "eviction does not support multiple PDBs ({})",
                    keys.join(", ")
                )
            }
        }
    }
}

impl Rejection {
    /// Whether this is a pod blocking eviction (what Eventual methods
    /// ignore for NodeClaims with a termination grace period).
    pub fn is_pod_block(&self) -> bool {
        matches!(
            self,
            Rejection::PodDoNotDisrupt(_) | Rejection::PdbBlocks(_) | Rejection::MultiplePdbs(_)
        )
    }
}

/// Upstream's `NonPendingPodSchedulingErrors`: the first pods (at most
/// [`SchedulingErrors::MAX_SHOWN`]) that would not schedule, each with its
/// error, and how many more there are.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SchedulingErrors {
    /// `namespace/name` (or `pod <id>` for a pod that is gone) and error.
    pub shown: Vec<(String, String)>,
    /// Pods with errors past the shown ones.
    pub others: usize,
}

impl SchedulingErrors {
    /// Pods named before the rest are counted.
    pub const MAX_SHOWN: usize = 5;

    /// The errors of a simulation's pods, named as `cluster` names them.
    pub fn new(cluster: &Cluster, errors: &[(PodId, String)]) -> SchedulingErrors {
        let shown = errors
            .iter()
            .take(Self::MAX_SHOWN)
            .map(|(pod, error)| {
                let name = match cluster.pod(*pod) {
                    Some(p) => pod_key(p),
                    None => format!("pod {}", pod.0),
                };
                (name, error.clone())
            })
            .collect();
        SchedulingErrors {
            shown,
            others: errors.len().saturating_sub(Self::MAX_SHOWN),
        }
    }
}

/// The sentence (`pretty.Sentence`): `Not all pods would schedule, a/b =>
/// error ` per pod, then ` and N other(s)`.
impl fmt::Display for SchedulingErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.shown.is_empty() && self.others == 0 {
            return write!(f, "No Pod Scheduling Errors");
        }
        write!(f, "Not all pods would schedule, ")?;
        for (pod, error) in &self.shown {
            write!(f, "{pod} => {error} ")?;
        }
        if self.others > 0 {
            write!(f, " and {} other(s)", self.others)?;
        }
        Ok(())
    }
}

/// Options left after filtering by price no longer meet `minValues` for
/// these label keys (scheduling/nodeclaim.go
/// `RemoveInstanceTypeOptionsByPriceAndMinValues`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MinValuesNotMet(pub Vec<String>);

impl fmt::Display for MinValuesNotMet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "minValues requirement is not met for label(s) {:?}",
            self.0
        )
    }
}

/// A Balanced pool's score for a move fell short of its threshold.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScoreTooLow {
    /// The score (savings fraction / disruption fraction).
    pub score: f64,
    /// The policy's `k` (the threshold is `1/k`).
    pub k: u32,
    /// Savings / pool cost.
    pub savings_fraction: f64,
    /// Move disruption / pool disruption.
    pub disruption_fraction: f64,
}

impl fmt::Display for ScoreTooLow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "score {:.2} < threshold {:.2} (k: {}, savings {:.1}%, disruption {:.1}%)",
            self.score,
            1.0 / f64::from(self.k),
            self.k,
            self.savings_fraction * 100.0,
            self.disruption_fraction * 100.0
        )
    }
}

/// Why a pass did not disrupt a node (upstream publishes these as
/// `Unconsolidatable` events, candidate rejections as `DisruptionBlocked`;
/// karpsim notes both as the node's `Unconsolidatable` reason).
#[derive(Debug, Clone, PartialEq)]
pub enum Unconsolidatable {
    /// The node is not a candidate.
    Rejected(Rejection),
    /// The NodePool's `consolidateAfter` is `Never` (pool name).
    ConsolidationDisabled(String),
    /// The NodeClaim names no instance type (its name, empty).
    InstanceTypeNotFound(String),
    /// The node lacks a label consolidation needs (the label key).
    MissingLabel(&'static str),
    /// A `WhenEmpty` NodePool's node has pods (pool name).
    WhenEmptyButNotEmpty(String),
    /// The candidates' pods would not all schedule elsewhere.
    PodsWouldNotSchedule(SchedulingErrors),
    /// Removing the candidates takes this many new NodeClaims (more than
    /// one).
    WouldCreate(usize),
    /// Filtering the replacement's options by price broke `minValues`.
    FilteringByPrice(MinValuesNotMet),
    /// No replacement option is cheaper.
    NoCheaperNode,
    /// Spot nodes would be replaced by spot, and the gate is off.
    SpotToSpotDisabled,
    /// Too few cheaper spot options for a single spot node's replacement.
    SpotToSpotTooFewOptions {
        /// Upstream `MinInstanceTypesForSpotToSpotConsolidation`.
        needed: usize,
        /// The cheaper options there are.
        got: usize,
    },
    /// The Balanced policy's score gate refused the move.
    ScoreTooLow(ScoreTooLow),
}

impl fmt::Display for Unconsolidatable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unconsolidatable::Rejected(rejection) => write!(f, "{rejection}"),
            Unconsolidatable::ConsolidationDisabled(pool) => {
                write!(f, "NodePool {pool:?} has consolidation disabled")
            }
            Unconsolidatable::InstanceTypeNotFound(name) => {
                write!(f, "Instance Type {name:?} not found")
            }
            Unconsolidatable::MissingLabel(label) => {
                write!(f, "Node does not have label {label:?}")
            }
            Unconsolidatable::WhenEmptyButNotEmpty(pool) => write!(
                f,
                "NodePool {pool:?} has consolidation policy WhenEmpty, but node is not empty"
            ),
            Unconsolidatable::PodsWouldNotSchedule(errors) => write!(f, "{errors}"),
            Unconsolidatable::WouldCreate(n) => {
                write!(f, "Can't remove without creating {n} candidates")
            }
            Unconsolidatable::FilteringByPrice(e) => write!(f, "Filtering by price: {e}"),
            Unconsolidatable::NoCheaperNode => f.write_str(NO_CHEAPER_NODE),
            Unconsolidatable::SpotToSpotDisabled => f.write_str(SPOT_TO_SPOT_DISABLED),
            Unconsolidatable::SpotToSpotTooFewOptions { needed, got } => write!(
                f,
                "SpotToSpotConsolidation requires {needed} cheaper instance type options than the current candidate to consolidate, got {got}"
            ),
            Unconsolidatable::ScoreTooLow(score) => write!(f, "{score}"),
        }
    }
}

impl From<Rejection> for Unconsolidatable {
    fn from(rejection: Rejection) -> Self {
        Unconsolidatable::Rejected(rejection)
    }
}

/// Why a command was dropped when re-checked after the validation delay;
/// the sentence starts with upstream's failure class (`churn`, `budget`,
/// `scheduling`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandInvalid {
    /// This many of the command's nodes are no longer candidates.
    Churn(usize),
    /// Some of the command's nodes are no longer candidates (Emptiness
    /// asked to hold whole).
    ChurnOf {
        /// Nodes no longer valid.
        gone: usize,
        /// Nodes of the command.
        of: usize,
    },
    /// None of the command's nodes (this many) fits its budget any more.
    Budget(usize),
    /// A consolidation candidate no longer fits its budget.
    OverBudget,
    /// The candidates' pods would no longer all schedule.
    Scheduling(SchedulingErrors),
    /// The fresh simulation found a different replacement.
    NewResults,
}

impl fmt::Display for CommandInvalid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CommandInvalid::Churn(n) => write!(f, "churn: {n} candidates are no longer valid"),
            CommandInvalid::ChurnOf { gone, of } => {
                write!(f, "churn: {gone} of {of} candidates are no longer valid")
            }
            CommandInvalid::Budget(n) => write!(
                f,
                "budget: {n} candidates failed validation because they were nominated for a pod or would violate disruption budgets"
            ),
            CommandInvalid::OverBudget => write!(
                f,
                "budget: a candidate can no longer be disrupted without violating budgets"
            ),
            CommandInvalid::Scheduling(errors) => write!(f, "scheduling: {errors}"),
            CommandInvalid::NewResults => {
                write!(f, "scheduling: scheduling simulation produced new results")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every sentence, word for word as events and reports carry it.
    #[test]
    fn sentences() {
        let cases: Vec<(Unconsolidatable, &str)> = vec![
            (
                Rejection::NodeDoNotDisrupt.into(),
                "disruption is blocked through the \"karpenter.sh/do-not-disrupt\" annotation",
            ),
            (
                Rejection::MultiplePdbs(vec!["a/x".into(), "a/y".into()]).into(),
                "eviction does not support multiple PDBs (\"a/x\", \"a/y\")",
            ),
            (
                Unconsolidatable::ConsolidationDisabled("default".into()),
                "NodePool \"default\" has consolidation disabled",
            ),
            (
                Unconsolidatable::InstanceTypeNotFound(String::new()),
                "Instance Type \"\" not found",
            ),
            (
                Unconsolidatable::MissingLabel("topology.kubernetes.io/zone"),
                "Node does not have label \"topology.kubernetes.io/zone\"",
            ),
            (
                Unconsolidatable::WhenEmptyButNotEmpty("default".into()),
                "NodePool \"default\" has consolidation policy WhenEmpty, but node is not empty",
            ),
            (
                Unconsolidatable::WouldCreate(2),
                "Can't remove without creating 2 candidates",
            ),
            (
                Unconsolidatable::FilteringByPrice(MinValuesNotMet(vec![
                    "node.kubernetes.io/instance-type".into(),
                ])),
                "Filtering by price: minValues requirement is not met for label(s) [\"node.kubernetes.io/instance-type\"]",
            ),
            (
                Unconsolidatable::NoCheaperNode,
                "Can't replace with a cheaper node",
            ),
            (
                Unconsolidatable::SpotToSpotTooFewOptions { needed: 15, got: 3 },
                "SpotToSpotConsolidation requires 15 cheaper instance type options than the current candidate to consolidate, got 3",
            ),
            (
                Unconsolidatable::ScoreTooLow(ScoreTooLow {
                    score: 0.4,
                    k: 2,
                    savings_fraction: 0.1,
                    disruption_fraction: 0.25,
                }),
                "score 0.40 < threshold 0.50 (k: 2, savings 10.0%, disruption 25.0%)",
            ),
        ];
        for (reason, text) in cases {
            assert_eq!(reason.to_string(), text);
        }
        assert_eq!(
            CommandInvalid::ChurnOf { gone: 1, of: 3 }.to_string(),
            "churn: 1 of 3 candidates are no longer valid"
        );
    }

    /// The scheduling sentence names five pods, each followed by a space,
    /// then counts the rest.
    #[test]
    fn scheduling_sentence() {
        let pod = |i: usize| (format!("default/web-{i}"), "no room".to_string());
        let two = SchedulingErrors {
            shown: (0..2).map(pod).collect(),
            others: 0,
        };
        assert_eq!(
            two.to_string(),
            "Not all pods would schedule, default/web-0 => no room default/web-1 => no room "
        );
        let seven = SchedulingErrors {
            shown: (0..5).map(pod).collect(),
            others: 2,
        };
        assert!(
            seven
                .to_string()
                .ends_with("web-4 => no room  and 2 other(s)")
        );
        assert_eq!(
            SchedulingErrors::default().to_string(),
            "No Pod Scheduling Errors"
        );
    }
}
