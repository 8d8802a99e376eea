//! Node conditions and the node health controller (core:
//! pkg/controllers/node/health, run only with the `NodeRepair` gate)
//! around its decision ([`crate::karpenter::node_repair`]).
//!
//! A `nodeCondition` step sets a status condition of a node by name (a
//! node not in the cluster then is counted as a step whose object did not
//! exist, as scale and delete steps are). Kubernetes' node lifecycle
//! controller taints a node whose `Ready` is `False` with
//! `node.kubernetes.io/not-ready:NoSchedule` and one whose `Ready` is
//! `Unknown` with `node.kubernetes.io/unreachable:NoSchedule`, so neither
//! kube-scheduler nor Karpenter places new pods there; its pods stay
//! (taint-based eviction after `tolerationSeconds` is not modelled).
//! With the gate on, the health controller looks at the node when the
//! first matching repair policy's toleration ends: unless more than 20 %
//! of its NodePool's registered nodes are unhealthy (it looks again 5 min
//! later), the NodeClaim is deleted with its termination timestamp now,
//! reason `unhealthy`, and the provisioner replaces its pods.

use super::{Engine, EngineError, Event, EventType, Target, TargetKind};
use crate::karpenter::node_repair::{
    ConditionStatus, NodeCondition, REPAIR_BLOCKED_REQUEUE, is_unhealthy, pool_allows_repair,
    repair_time,
};
use crate::kube::taints::{NOT_READY_TAINT_KEY, Taint, TaintEffect, UNREACHABLE_TAINT_KEY};
use crate::scheduler::NodeId;

/// The reason of a NodeClaim node repair deletes (core metrics
/// `UnhealthyReason`).
pub const UNHEALTHY: &str = "unhealthy";

impl Engine<'_> {
    /// A `nodeCondition` step.
    pub(super) fn set_node_condition(
        &mut self,
        name: &str,
        condition_type: &str,
        status: ConditionStatus,
    ) -> Result<(), EngineError> {
        let Some(node) = self
            .cluster
            .nodes()
            .find(|(_, n)| n.name == name)
            .map(|(id, _)| id)
        else {
            let target = Target {
                kind: TargetKind::Node,
                namespace: String::new(),
                name: name.to_string(),
            };
            self.not_found(&target, "nodeCondition");
            return Ok(());
        };
        if !self.update_node_condition(node, condition_type, status)? {
            return Ok(());
        }
        self.log(
            EventType::Normal,
            "NodeCondition",
            format!("node/{name}"),
            format!(
                "Status condition transitioned, Type: {condition_type}, Status: {}",
                status.as_str()
            ),
        );
        self.wake_scheduler()?;
        self.touch()
    }

    /// Sets a condition of a node (a step, or the kubelet while the node
    /// starts): the not-ready taints follow `Ready`, and with the
    /// `NodeRepair` gate a condition a repair policy matches schedules the
    /// health controller's look. Returns whether the status changed.
    pub(super) fn update_node_condition(
        &mut self,
        node: NodeId,
        condition_type: &str,
        status: ConditionStatus,
    ) -> Result<bool, EngineError> {
        let now = self.now();
        let conditions = &mut self.node_meta[node.0 as usize].conditions;
        match conditions
            .iter_mut()
            .find(|c| c.condition_type == condition_type)
        {
            Some(c) if c.status == status => return Ok(false),
            Some(c) => {
                c.status = status;
                c.since = now;
            }
            None => conditions.push(NodeCondition {
                condition_type: condition_type.to_string(),
                status,
                since: now,
            }),
        }
        if condition_type == "Ready" {
            self.taint_by_readiness(node, status);
        }
        if self.input.karpenter.node_repair
            && self.autoscaler.karpenter().is_some()
            && self.cluster.node(node).is_some_and(|n| n.claim.is_some())
            && let Some(at) = repair_time(&self.node_meta[node.0 as usize].conditions)
        {
            self.schedule(at.max(now), Event::RepairCheck(node))?;
        }
        Ok(true)
    }

    /// The node lifecycle controller's NoSchedule taint for `Ready`.
    fn taint_by_readiness(&mut self, node: NodeId, ready: ConditionStatus) {
        let Some(n) = self.cluster.node_mut(node) else {
            return;
        };
        n.taints
            .retain(|t| t.key != NOT_READY_TAINT_KEY && t.key != UNREACHABLE_TAINT_KEY);
        let key = match ready {
            ConditionStatus::True => return,
            ConditionStatus::False => NOT_READY_TAINT_KEY,
            ConditionStatus::Unknown => UNREACHABLE_TAINT_KEY,
        };
        n.taints.push(Taint::new(key, "", TaintEffect::NoSchedule));
    }

    /// The health controller's look at a node.
    pub(super) fn repair_check(&mut self, node: NodeId) -> Result<(), EngineError> {
        let now = self.now();
        let meta = &self.node_meta[node.0 as usize];
        if meta.deleting.is_some() {
            return Ok(());
        }
        let Some(n) = self.cluster.node(node) else {
            return Ok(());
        };
        // A condition changed since: the look it scheduled is the one.
        if repair_time(&meta.conditions).is_none_or(|t| t > now) {
            return Ok(());
        }
        let Some(pool) = n.nodepool().map(str::to_string) else {
            return Ok(());
        };
        let (mut nodes, mut unhealthy) = (0, 0);
        for (id, other) in self.cluster.nodes() {
            if other.registered && other.nodepool() == Some(pool.as_str()) {
                nodes += 1;
                unhealthy += usize::from(is_unhealthy(&self.node_meta[id.0 as usize].conditions));
            }
        }
        if !pool_allows_repair(unhealthy, nodes) {
            let name = n.name.clone();
            self.log(
                EventType::Warning,
                "NodeRepairBlocked",
                format!("node/{name}"),
                format!(
                    "more than 20% nodes are unhealthy in the nodepool ({unhealthy} of {nodes}); retrying in {REPAIR_BLOCKED_REQUEUE}"
                ),
            );
            return self.schedule(now + REPAIR_BLOCKED_REQUEUE, Event::RepairCheck(node));
        }
        self.start_termination_by(node, UNHEALTHY, Some(now))
    }
}
