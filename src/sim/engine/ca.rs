//! Cluster Autoscaler as the run's node provisioner: the CA loop on its
//! scan interval, its actions applied to the simulated ASGs, and CA's
//! records.

use crate::autoscaler::ValidCaConfig;
use crate::cloud::Catalog;

/// A Cluster Autoscaler variant's inputs.
#[derive(Debug, Clone)]
pub struct CaSetup {
    /// The validated configuration (node groups and flags).
    pub config: ValidCaConfig,
    /// The region's catalog, restricted to the scenario's zones.
    pub catalog: Catalog,
}
