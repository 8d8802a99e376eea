//! Karpenter provisioning: the `solve` that packs pending pods onto existing
//! nodes, in-flight NodeClaims and new NodeClaims (reference §1), and the
//! launch decision that turns a NodeClaim into one concrete offering (§2).
//! Pure functions of a cluster view: no clock, no randomness, no I/O.
//!
//! SKELETON: the signatures are the agreed API; the bodies are filled in by
//! the provisioning work.

use std::sync::Arc;

use super::nodepool::NodePool;
use crate::cloud::{CapacityType, Catalog, Price};
use crate::kube::pod::PodSpec;
use crate::kube::requirements::Requirements;
use crate::kube::resources::Resources;
use crate::scheduler::{Cluster, NodeId, PodId};

/// A NodePool with the catalog of its EC2NodeClass (allocatable shaped by
/// the node class; offering availability as the ICE cache currently says).
#[derive(Debug, Clone, Copy)]
pub struct NodePoolContext<'a> {
    /// The NodePool.
    pub pool: &'a NodePool,
    /// Its instance types.
    pub catalog: &'a Catalog,
}

/// Everything `solve` reads.
#[derive(Debug, Clone, Copy)]
pub struct ProvisioningInput<'a> {
    /// The cluster (existing nodes, in-flight NodeClaims, bound pods).
    pub cluster: &'a Cluster,
    /// Every NodePool (solve orders them by weight, then name).
    pub nodepools: &'a [NodePoolContext<'a>],
    /// DaemonSet pod templates (their overhead is reserved on new nodes).
    pub daemonsets: &'a [Arc<PodSpec>],
    /// The pods to place: provisionable pending pods, plus pods of deleting
    /// nodes.
    pub pods: &'a [PodId],
}

/// A NodeClaim the solve wants created.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewNodeClaim {
    /// Index into `ProvisioningInput::nodepools`.
    pub nodepool: usize,
    /// Its requirements after placing its pods (zone may be narrowed, …).
    pub requirements: Requirements,
    /// Remaining instance-type options: indices into the NodePool's
    /// catalog `instance_types()`, cheapest first, at most 600.
    pub instance_types: Vec<usize>,
    /// The pods it was opened for.
    pub pods: Vec<PodId>,
    /// Pod requests plus the smallest DaemonSet overhead over its options.
    pub requests: Resources,
}

/// The outcome of one solve.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SchedulingResult {
    /// NodeClaims to create.
    pub new_nodeclaims: Vec<NewNodeClaim>,
    /// Pods that fit on existing nodes or in-flight NodeClaims.
    pub existing: Vec<(PodId, NodeId)>,
    /// Pods that fit nowhere, with a reason a user can read.
    pub errors: Vec<(PodId, String)>,
}

/// Places `input.pods` as Karpenter's scheduler does.
pub fn solve(_input: &ProvisioningInput<'_>) -> SchedulingResult {
    todo!("provisioning work")
}

/// The concrete offering a NodeClaim launches as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaunchDecision {
    /// Index into the NodePool's catalog `instance_types()`.
    pub instance_type: usize,
    /// Zone.
    pub zone: &'static str,
    /// Capacity type.
    pub capacity_type: CapacityType,
    /// Price of the offering.
    pub price: Price,
    /// How many offerings were compatible (for the explanation).
    pub compatible_offerings: usize,
    /// Why this one (`cheapest of 143 compatible offerings: c6a.xlarge spot us-east-1a $0.0612/h`).
    pub explanation: String,
}

/// Why a launch failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LaunchError {
    /// No available offering satisfies the NodeClaim.
    #[error("insufficient capacity: {0}")]
    InsufficientCapacity(String),
}

/// Picks the offering a NodeClaim launches as (reference §2.2).
pub fn choose_offering(
    _claim: &NewNodeClaim,
    _catalog: &Catalog,
) -> Result<LaunchDecision, LaunchError> {
    todo!("provisioning work")
}
