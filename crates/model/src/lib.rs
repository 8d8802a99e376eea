//! karpsim's model: the vocabulary every other crate speaks. Simulated time
//! and its duration grammar ([`time`]), Kubernetes objects, quantities,
//! labels, requirements and taints ([`kube`]), the AWS catalog types
//! ([`cloud`]), the cluster arena the deciders read ([`cluster`], its pods
//! in a [`chunked::ChunkedVec`], its pending candidates in an
//! [`index_set::IndexSet`]), and the
//! Kubernetes rules about pods ([`pods`]) and PodDisruptionBudgets
//! ([`pdb`]); the `karpenter.sh/v1` NodePool as decisions read it
//! ([`nodepool`]); builders of small clusters for tests ([`testing`]).
//!
//! Invariant: no I/O, no clock, no randomness, no threads.

pub mod chunked;
pub mod cloud;
pub mod cluster;
pub mod index_set;
pub mod kube;
pub mod name_order;
mod node_store;
pub mod nodepool;
pub mod pdb;
pub mod pods;
pub mod suggest;
pub mod testing;
pub mod time;
