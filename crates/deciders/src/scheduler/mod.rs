//! The kube-scheduler model and the shared "does this pod fit this node"
//! code that the Karpenter and Cluster Autoscaler simulations reuse, over the
//! [`cluster::Cluster`] data model.

pub mod filter;
pub mod kube_scheduler;
pub mod placement;
pub mod score;
pub mod testing;
pub mod topology;

pub use crate::cluster::{
    Cluster, Node, NodeClaimInfo, NodeId, OwnerKind, OwnerRef, Pod, PodId, PodPhase,
};
