//! The deciders: the code a live controller would run, as pure functions
//! of a cluster and a time. [`scheduler`] is the kube-scheduler model,
//! [`karpenter`] Karpenter's provisioner and disruption controller,
//! [`autoscaler`] the Cluster Autoscaler loop.
//!
//! Invariant: depends on `karpsim-model` only; no I/O, no clock, no
//! randomness, no UI or file-format crates.

pub mod autoscaler;
pub mod fast_hash;
pub mod karpenter;
mod locked_map;
pub mod scheduler;

#[cfg(test)]
use karpsim_model::testing;
use karpsim_model::{cloud, cluster, kube, nodepool, pdb, pods, suggest, time};
