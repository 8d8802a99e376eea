//! `run --snapshot-at T`: the simulated cluster at an instant, as the state
//! a snapshot would hold (written as a kubectl List by the report), so that
//! `plan` on it decides what the engine would decide then.

use std::collections::BTreeMap;

use super::initial::{InitialNode, InitialPod, InitialState, InitialWorkload, NodeOwner};
use super::{Engine, TargetKind};
use crate::kube::workload::WorkloadKind;
use crate::nodepool::NodePool;
use crate::time::SimTime;

/// The cluster at one instant of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterExport {
    /// The instant.
    pub at: SimTime,
    /// Nodes, workloads with their live pods, PDBs.
    pub state: InitialState,
    /// The NodePools in force (none for a Cluster Autoscaler run).
    pub nodepools: Vec<NodePool>,
    /// Pods terminating at the instant (left out of `state`).
    pub terminating_pods: usize,
}

impl Engine<'_> {
    /// The cluster now.
    pub(super) fn export(&self) -> ClusterExport {
        let mut index: BTreeMap<crate::scheduler::NodeId, usize> = BTreeMap::new();
        let mut nodes = Vec::new();
        for (id, node) in self.cluster.nodes() {
            let meta = &self.node_meta[id.0 as usize];
            let record = self.ledger.record(meta.billing);
            let owner = match (&node.claim, record) {
                (Some(_), _) => NodeOwner::Karpenter,
                (None, Some(r)) if r.pool() != super::UNMANAGED_POOL => {
                    NodeOwner::NodeGroup(r.pool().to_string())
                }
                _ => NodeOwner::Unmanaged,
            };
            index.insert(id, nodes.len());
            nodes.push(InitialNode {
                node: node.clone(),
                owner,
                instance_type: meta.instance_type.clone(),
                zone: meta.zone.clone(),
                capacity_type: record
                    .map_or(crate::cloud::CapacityType::OnDemand, |r| r.capacity_type()),
                price: record.map_or(crate::cloud::Price::ZERO, |r| r.launch_price()),
                scale_down_disabled: self
                    .autoscaler
                    .ca()
                    .and_then(|ca| ca.groups.iter().find_map(|g| g.member(id)))
                    .is_some_and(|m| m.scale_down_disabled),
            });
        }
        let terminating_pods = self
            .cluster
            .pods()
            .filter(|(_, p)| !p.phase.is_terminal() && p.lifecycle.deleting_since.is_some())
            .count();
        let mut workloads = Vec::new();
        for state in &self.owners.workloads {
            if state.deleted || state.complete {
                continue;
            }
            let pods: Vec<InitialPod> = state
                .pods
                .iter()
                .filter_map(|&id| {
                    let pod = self.cluster.pod(id)?;
                    if pod.phase.is_terminal() || pod.lifecycle.deleting_since.is_some() {
                        return None;
                    }
                    let meta = &self.pod_meta[id.0 as usize];
                    Some(InitialPod {
                        name: self.pod_name(id).to_string(),
                        spec: pod.spec.clone(),
                        node: pod.node.and_then(|n| index.get(&n).copied()),
                        created_at: pod.created_at,
                        started_at: pod.lifecycle.started_at,
                        unschedulable: pod.unschedulable,
                        ordinal: meta.ordinal,
                    })
                })
                .collect();
            if state.kind() == TargetKind::Pod && pods.is_empty() {
                continue;
            }
            // Scale steps change the desired count, not the applied spec.
            let mut workload = state.workload.clone();
            match &mut workload.kind {
                WorkloadKind::Deployment { replicas }
                | WorkloadKind::ReplicaSet { replicas }
                | WorkloadKind::StatefulSet { replicas } => *replicas = state.desired,
                _ => {}
            }
            workloads.push(InitialWorkload {
                workload,
                pods,
                succeeded: state.succeeded,
            });
        }
        ClusterExport {
            terminating_pods,
            at: self.now(),
            state: InitialState {
                source: format!("{} at {}", self.input.variant, self.now()),
                // The instant t = 0 stands for, when the run began from a
                // snapshot.
                time: self.input.initial.as_ref().and_then(|s| s.time.clone()),
                nodes,
                workloads,
                pdbs: self.cluster.pdbs.clone(),
            },
            nodepools: self
                .autoscaler
                .karpenter()
                .map(|k| k.pools.iter().map(|p| p.pool.clone()).collect())
                .unwrap_or_default(),
        }
    }
}
