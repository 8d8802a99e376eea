//! Spot interruptions under Cluster Autoscaler: what reaches the cluster
//! depends on the variant's `terminationHandler`, since CA itself does not
//! watch EC2's signals.
//!
//! - `none`: nothing acts on the 2-minute notice; the pods run until EC2
//!   reclaims the instance and die with it (the engine's reclaim), and the
//!   node disappears then.
//! - `node-termination-handler` (aws-node-termination-handler): cordon and
//!   drain at the notice, through the termination path (PDBs respected).
//! - `capacity-rebalance` (ASG Capacity Rebalancing, with the termination
//!   handler draining as above): on the rebalance recommendation the ASG
//!   launches a replacement in the same group and the at-risk node is
//!   cordoned and drained.
//!
//! In every case the group's desired capacity drops with the instance
//! (the next CA loop sees the member gone), and CA scales up again for the
//! pods that become pending. Simplified: the ASG's own replacement of an
//! instance lost below its desired capacity is left to CA's scale-up, and
//! the NotReady window between reclaim and node deletion is not modelled.

use super::spot::{INTERRUPTED, SpotNodeFacts, SpotSignal};
use super::{Engine, EngineError, EventType};
use crate::autoscaler::TerminationHandler;
use crate::cloud::CapacityType;
use crate::scheduler::NodeId;

impl Engine<'_> {
    /// The reaction to a spot signal under Cluster Autoscaler.
    pub(super) fn ca_on_spot_signal(&mut self, signal: SpotSignal) -> Result<(), EngineError> {
        let Some(setup) = self.input.cluster_autoscaler.as_ref() else {
            return Ok(());
        };
        let handler = setup.config.config().termination_handler;
        match signal {
            SpotSignal::Rebalance { node } => {
                let name = self.node_name(node);
                if handler != TerminationHandler::CapacityRebalance {
                    self.log(
                        EventType::Normal,
                        "RebalanceRecommendation",
                        format!("node/{name}"),
                        "EC2 rebalance recommendation; no action".to_string(),
                    );
                    return Ok(());
                }
                let Some(group) = self.ca_group_of(node) else {
                    return Ok(());
                };
                self.log(
                    EventType::Normal,
                    "CapacityRebalance",
                    format!("node/{name}"),
                    format!("ASG {group} launches a replacement for the at-risk instance"),
                );
                self.ca_replace(&group, node)?;
                self.ca_forget_member(node);
                self.start_termination(node, INTERRUPTED)
            }
            SpotSignal::Notice {
                node, reclaim_at, ..
            } => {
                let name = self.node_name(node);
                if handler == TerminationHandler::None {
                    self.log(
                        EventType::Warning,
                        "SpotInterrupted",
                        format!("node/{name}"),
                        format!(
                            "Spot interruption warning; no termination handler: pods keep running until the instance is reclaimed at {reclaim_at}"
                        ),
                    );
                    return Ok(());
                }
                self.log(
                    EventType::Warning,
                    "SpotInterrupted",
                    format!("node/{name}"),
                    format!(
                        "Spot interruption warning; node-termination-handler cordons and drains the node (reclaimed at {reclaim_at})"
                    ),
                );
                self.ca_forget_member(node);
                self.start_termination(node, INTERRUPTED)
            }
        }
    }

    /// The group a node belongs to.
    fn ca_group_of(&self, node: NodeId) -> Option<String> {
        let ca = self.autoscaler.ca()?;
        ca.groups
            .iter()
            .find(|g| g.member(node).is_some())
            .map(|g| g.name.clone())
    }

    /// The instance leaves its group (the ASG detaches it and lowers the
    /// desired capacity).
    fn ca_forget_member(&mut self, node: NodeId) {
        if let Some(ca) = self.autoscaler.ca_mut() {
            for g in &mut ca.groups {
                if g.member(node).is_some() {
                    g.members.retain(|m| m.node != node);
                    g.target_size = g.target_size.saturating_sub(1);
                }
            }
        }
    }

    /// Capacity Rebalancing: one new instance of `group`.
    fn ca_replace(&mut self, group: &str, _old: NodeId) -> Result<(), EngineError> {
        let Some(setup) = self.input.cluster_autoscaler.as_ref() else {
            return Ok(());
        };
        self.ca_launch(setup, group, 1, "capacity-rebalance")?;
        Ok(())
    }

    /// A CA spot node was launched: the spot model tracks it.
    pub(super) fn ca_track_spot(
        &mut self,
        node: NodeId,
        instance_type: &str,
        zone: &str,
        capacity_type: CapacityType,
    ) -> Result<(), EngineError> {
        if capacity_type != CapacityType::Spot {
            return Ok(());
        }
        let Some(setup) = self.input.cluster_autoscaler.as_ref() else {
            return Ok(());
        };
        let Some(it) = setup.catalog.get(instance_type) else {
            return Ok(());
        };
        let band = it
            .offerings
            .iter()
            .find(|o| o.zone == zone && o.capacity_type == CapacityType::Spot)
            .and_then(|o| o.interruption_band);
        let facts = SpotNodeFacts {
            instance_type: instance_type.to_string(),
            zone: zone.to_string(),
            band,
            on_demand_price: it.on_demand_price,
            launched: self.now(),
        };
        self.track_spot_node(node, facts)
    }
}
