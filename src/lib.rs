//! karpsim: an offline cluster-cost simulator for Kubernetes autoscaling.
//!
//! The library is layered; arrows point one way:
//! [`kube`] (Kubernetes vocabulary) ← [`cloud`] (the AWS catalog) ←
//! [`karpenter`] (NodePool and EC2NodeClass). See ARCHITECTURE.md.

pub mod cloud;
pub mod karpenter;
pub mod kube;
pub mod scenario;
pub mod sim;
