//! Readers of what users write and record: located YAML trees ([`yaml`]),
//! Kubernetes manifests ([`manifest`]), NodePools and EC2NodeClasses
//! ([`nodepools`]), cluster snapshots taken with kubectl ([`cluster_snapshot`]),
//! and scenario files with their traces and spot inputs
//! ([`scenario`]). Every reader is strict: unknown fields and bad values are
//! errors naming file, line, column and field. The one writer,
//! [`snapshot_write`], saves a simulated cluster as such a snapshot.

pub mod cluster_snapshot;
pub mod manifest;
pub mod nodepools;
pub mod price_snapshot;
pub mod scenario;
pub mod snapshot_write;
pub mod yaml;

use karpsim_catalog::snapshot;
use karpsim_deciders::{autoscaler, karpenter, scheduler};
use karpsim_model::{cloud, cluster, kube, nodepool, suggest, time};
use karpsim_sim as sim;
