//! The Cluster Autoscaler as a controller object: its configuration and
//! the memory it keeps from loop to loop ([`CaState`]: unneeded-since
//! times, backoff, open scale-ups; and the loop count the random expander
//! draws from). [`ClusterAutoscaler::run_once`] is [`super::run_once`]
//! followed by [`super::next_state`]; a caller that knows nothing of the
//! engine gets the same decisions from a fresh one.

use super::provisioning::RequestState;
use super::state::{CaState, ScaleUpFailure};
use super::{Actions, CaInput, NodeGroupState, ValidCaConfig, next_state, run_once};
use crate::cloud::Catalog;
use crate::cluster::Cluster;
use crate::pdb::PdbLimits;
use crate::time::SimTime;

/// What one loop looks at, besides what the autoscaler remembers.
#[derive(Debug, Clone, Copy)]
pub struct CaView<'a> {
    /// The cluster (nodes, pods, PDBs).
    pub cluster: &'a Cluster,
    /// Instance types and offerings of the region.
    pub catalog: &'a Catalog,
    /// Live state of every group (the cloud provider's view).
    pub groups: &'a [NodeGroupState],
    /// PDB statuses (`disruptionsAllowed`).
    pub pdbs: &'a PdbLimits,
    /// Now.
    pub now: SimTime,
    /// The ProvisioningRequests in the cluster, in creation order.
    pub provisioning_requests: &'a [RequestState],
}

/// The Cluster Autoscaler: configuration plus the state it carries across
/// loops.
#[derive(Debug, Clone)]
pub struct ClusterAutoscaler {
    config: ValidCaConfig,
    state: CaState,
    loops: u64,
}

impl ClusterAutoscaler {
    /// An autoscaler that has not run a loop yet.
    pub fn new(config: ValidCaConfig) -> ClusterAutoscaler {
        ClusterAutoscaler {
            config,
            state: CaState::default(),
            loops: 0,
        }
    }

    /// Its configuration.
    pub fn config(&self) -> &ValidCaConfig {
        &self.config
    }

    /// What it remembers now.
    pub fn state(&self) -> &CaState {
        &self.state
    }

    /// One loop (`RunOnce`): the actions to take, with the loop's outcome
    /// folded into what the autoscaler remembers.
    pub fn run_once(&mut self, view: &CaView<'_>) -> Actions {
        self.loops += 1;
        // A deletion ends when its node is gone.
        self.state
            .deletions_in_progress
            .retain(|node, _| view.cluster.node(*node).is_some());
        let actions = run_once(&CaInput {
            cluster: view.cluster,
            config: &self.config,
            catalog: view.catalog,
            groups: view.groups,
            pdbs: view.pdbs,
            state: &self.state,
            now: view.now,
            random_choice: self.loops,
            provisioning_requests: view.provisioning_requests,
        });
        self.state = next_state(&self.state, &actions, view.now, self.config.config());
        actions
    }

    /// A scale-up of `group` could not launch every instance (out of
    /// resources): the group is backed off and its request closed.
    pub fn scale_up_failed(&mut self, group: &str, now: SimTime) {
        self.state = self.state.with_failed_scale_up(
            group,
            ScaleUpFailure::OutOfResources,
            now,
            self.config.config(),
        );
    }
}
