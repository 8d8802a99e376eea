//! `karpenter.sh/v1` NodePool as the deciders read it: every field that
//! affects a decision, already validated (the reader lives in
//! `karpsim_input::nodepools`).

use std::collections::BTreeMap;
use std::time::Duration;

use crate::kube::pod::NodeSelectorExpression;
use crate::kube::requirements::Requirements;
use crate::kube::resources::ResourceKind;
use crate::kube::taints::Taint;

/// Karpenter's default `expireAfter`.
pub const DEFAULT_EXPIRE_AFTER: Duration = Duration::from_secs(720 * 3600);
/// Maximum number of disruption budgets (CRD `maxItems`).
pub const MAX_BUDGETS: usize = 50;
/// Maximum number of requirements (CRD `maxItems`).
pub const MAX_REQUIREMENTS: usize = 100;
/// Maximum number of template labels (CRD `maxProperties`).
pub const MAX_TEMPLATE_LABELS: usize = 100;

/// One NodePool requirement, with its `minValues`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodePoolRequirement {
    /// Key, operator and values, validated.
    pub expression: NodeSelectorExpression,
    /// `minValues` (1–50).
    pub min_values: Option<u32>,
}

/// `spec.template.spec.nodeClassRef`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeClassRef {
    /// API group (`karpenter.k8s.aws`).
    pub group: String,
    /// Kind (`EC2NodeClass`).
    pub kind: String,
    /// Name.
    pub name: String,
}

/// `spec.disruption.consolidationPolicy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ConsolidationPolicy {
    /// Only empty nodes are removed.
    WhenEmpty,
    /// Empty and underutilized nodes (the default).
    #[default]
    WhenEmptyOrUnderutilized,
    /// Like `WhenEmptyOrUnderutilized`, gated by a disruption score.
    Balanced,
}

/// A disruption reason a budget can be limited to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DisruptionReason {
    /// Consolidation of underutilized nodes.
    Underutilized,
    /// Removal of empty nodes.
    Empty,
    /// Replacement of drifted nodes.
    Drifted,
}

impl DisruptionReason {
    /// The lower-case spelling reports use (`underutilized`, `empty`,
    /// `drifted`).
    pub fn name(self) -> &'static str {
        match self {
            DisruptionReason::Underutilized => "underutilized",
            DisruptionReason::Empty => "empty",
            DisruptionReason::Drifted => "drifted",
        }
    }
}

/// `budgets[].nodes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BudgetNodes {
    /// A node count.
    Count(u32),
    /// A percentage of the pool's nodes (0–100), rounded up.
    Percent(u32),
}

/// One disruption budget.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Budget {
    /// How many nodes may be disrupting at once.
    pub nodes: BudgetNodes,
    /// Cron schedule (UTC) of when the budget starts being active.
    pub schedule: Option<String>,
    /// How long it stays active after each schedule hit.
    pub duration: Option<Duration>,
    /// Reasons it applies to; empty = all.
    pub reasons: Vec<DisruptionReason>,
}

/// `spec.disruption`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Disruption {
    /// The consolidation policy.
    pub consolidation_policy: ConsolidationPolicy,
    /// `consolidateAfter`; `None` = `Never`.
    pub consolidate_after: Option<Duration>,
    /// Budgets (default one budget of 10%).
    pub budgets: Vec<Budget>,
}

impl Default for Disruption {
    fn default() -> Self {
        Disruption {
            consolidation_policy: ConsolidationPolicy::WhenEmptyOrUnderutilized,
            consolidate_after: Some(Duration::ZERO),
            budgets: vec![Budget {
                nodes: BudgetNodes::Percent(10),
                schedule: None,
                duration: None,
                reasons: Vec::new(),
            }],
        }
    }
}

/// A NodePool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodePool {
    /// `metadata.name`.
    pub name: String,
    /// `spec.template.metadata.labels`.
    pub labels: BTreeMap<String, String>,
    /// `spec.template.metadata.annotations`.
    pub annotations: BTreeMap<String, String>,
    /// `spec.template.spec.requirements` as written.
    pub requirements: Vec<NodePoolRequirement>,
    /// The same requirements in the algebra's form (keys normalised,
    /// same-key entries intersected, minValues kept).
    pub requirement_set: Requirements,
    /// `spec.template.spec.taints`.
    pub taints: Vec<Taint>,
    /// `spec.template.spec.startupTaints`.
    pub startup_taints: Vec<Taint>,
    /// `expireAfter`; `None` = `Never` (default 720h).
    pub expire_after: Option<Duration>,
    /// `terminationGracePeriod`.
    pub termination_grace_period: Option<Duration>,
    /// `nodeClassRef`.
    pub node_class_ref: NodeClassRef,
    /// `spec.disruption`.
    pub disruption: Disruption,
    /// `spec.limits`: only the listed resources are limited.
    pub limits: BTreeMap<ResourceKind, i64>,
    /// `spec.weight` (1–100).
    pub weight: Option<u32>,
    /// `spec.replicas`: set, the NodePool is static (alpha, feature gate
    /// `StaticCapacity`): it keeps this many NodeClaims whatever the pods,
    /// is never consolidated, and the dynamic provisioner skips it.
    pub replicas: Option<u32>,
}

impl NodePool {
    /// Whether the NodePool is static (`spec.replicas` set; core
    /// pkg/utils/nodepool `IsStatic`).
    pub fn is_static(&self) -> bool {
        self.replicas.is_some()
    }
}
