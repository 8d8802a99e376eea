//! karpsim: an offline cluster-cost simulator for Kubernetes autoscaling.
//!
//! The library is layered; arrows point one way: [`kube`] (Kubernetes
//! vocabulary) ← [`cloud`] (the AWS catalog) ← [`karpenter`] (NodePools,
//! EC2NodeClasses and their decisions) and [`autoscaler`] (the Cluster
//! Autoscaler model) ← [`sim`] (the discrete-event engine)
//! ← [`scenario`] (what to simulate) and [`report`] (what to show).
//! [`yaml`] (located YAML trees) sits below them all, for [`kube`]'s
//! manifest reader and [`scenario`] alike. [`pricing`] (refreshed and
//! imported pricing snapshot files) sits on [`cloud`]; it alone may talk to
//! AWS, behind the `aws` cargo feature.
//! See ARCHITECTURE.md for the map.

pub mod autoscaler;
pub mod cloud;
pub mod karpenter;
pub mod kube;
pub mod pricing;
pub mod report;
pub mod scenario;
pub mod scheduler;
pub mod sim;
pub mod time;
pub mod yaml;
