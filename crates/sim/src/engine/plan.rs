//! `plan`: what the controllers would do next on a cluster, at one instant,
//! without running the clock. The run's own engine is built (from a
//! snapshot or mid-run), and its deciders are called as its events would
//! call them: kube-scheduler over the pending pods, Karpenter's solve and
//! launch choice for the pods it cannot place, then the disruption
//! controller's passes in upstream order, each command started (its nodes
//! marked, its replacements counted as in flight) before the next pass, as
//! the controller does when a pass starts a command. Commands that wait for
//! validation are validated at the same instant.

use std::collections::BTreeMap;

use super::{Engine, EngineError, PoolSetup, RunInput};
use crate::cloud::{CapacityType, Price};
use crate::karpenter::disruption::drift::expired_nodes;
use crate::karpenter::provisioning::ProvisioningInput;
use crate::kube::resources::ResourceKind;
use crate::scheduler::kube_scheduler::Decision;
use crate::scheduler::{NodeId, PodId};
use crate::time::SimTime;

/// The most disruption commands one plan lists (each pass starts one).
pub const MAX_PLANNED_COMMANDS: usize = 100;

/// What the controllers would do next.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Plan {
    /// The instant planned at.
    pub time: SimTime,
    /// Nodes, pods (not finished) and pending pods at that instant.
    pub nodes: usize,
    /// Pods.
    pub pods: usize,
    /// Pending pods.
    pub pending_pods: usize,
    /// Σ node prices now.
    pub cost_now: Price,
    /// Σ node prices once the provisioning and disruption commands are
    /// done (new NodeClaims and replacements in, disrupted nodes out).
    pub cost_after: Price,
    /// Pods kube-scheduler binds to existing nodes: (pod, node).
    pub scheduled: Vec<(String, String)>,
    /// NodeClaims Karpenter would create.
    pub nodeclaims: Vec<PlannedNodeClaim>,
    /// Pods that stay pending, with why.
    pub pending: Vec<(String, String)>,
    /// Disruption commands, in the order the controller would start them.
    pub commands: Vec<PlannedCommand>,
    /// Every node with its verdict.
    pub node_verdicts: Vec<NodeVerdict>,
    /// Nodes whose NodeClaim drifted from the NodePools in force.
    pub drifted: Vec<String>,
}

/// A NodeClaim Karpenter would launch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedNodeClaim {
    /// NodePool.
    pub nodepool: String,
    /// Chosen instance type.
    pub instance_type: String,
    /// Chosen capacity type.
    pub capacity_type: CapacityType,
    /// Chosen zone.
    pub zone: String,
    /// Price.
    pub price: Price,
    /// How many instance types it could have been.
    pub options: usize,
    /// Why this launch (the launch choice's explanation).
    pub why: String,
    /// Pods it is for (`namespace/name`).
    pub pods: Vec<String>,
}

/// A replacement NodeClaim of a command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedReplacement {
    /// Instance type.
    pub instance_type: String,
    /// Capacity type.
    pub capacity_type: CapacityType,
    /// Price.
    pub price: Price,
}

/// A disruption command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedCommand {
    /// `emptiness`, `drift`, `multi-node`, `single-node` or `expiration`.
    pub method: &'static str,
    /// `empty`, `underutilized`, `drifted` or `expired`.
    pub reason: &'static str,
    /// Nodes it deletes.
    pub nodes: Vec<String>,
    /// Replacements it launches first.
    pub replacements: Vec<PlannedReplacement>,
    /// Σ node prices − Σ replacement prices.
    pub savings: Price,
    /// Pods evicted from its nodes (`namespace/name`; DaemonSet pods are
    /// not moved).
    pub pods_moved: Vec<String>,
    /// Where the evicted pods would land (the controller's explanation).
    pub explanation: String,
}

/// One node and why it is (not) disrupted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeVerdict {
    /// Node.
    pub name: String,
    /// Instance type.
    pub instance_type: String,
    /// Capacity type.
    pub capacity_type: CapacityType,
    /// NodePool (Karpenter nodes).
    pub nodepool: Option<String>,
    /// `karpenter`, `nodegroup` or `none`.
    pub managed_by: &'static str,
    /// Price.
    pub price: Price,
    /// Whether the disruption controller considers it.
    pub candidate: bool,
    /// Why it is not disrupted, in upstream's words; `None` when a command
    /// takes it or nothing holds it back.
    pub why_not: Option<String>,
    /// The command (index into [`Plan::commands`]) that disrupts it.
    pub command: Option<usize>,
}

/// Plans at the start of `input`'s run: its initial state (snapshot),
/// optionally with `proposed` NodePools in place of the run's own.
pub fn plan(
    input: &RunInput,
    proposed: Option<(Vec<PoolSetup>, Option<ResourceKind>)>,
) -> Result<Plan, EngineError> {
    let mut engine = Engine::new(input, super::Deciders::default());
    if let Some(initial) = &input.initial {
        engine.load_initial(initial)?;
    }
    if let Some((pools, slot)) = proposed {
        engine.replace_nodepools(&pools, slot)?;
    }
    engine.plan_now()
}

impl Engine<'_> {
    /// What the controllers would do at this instant (see the module doc).
    /// Leaves the engine in the planned state.
    pub(super) fn plan_now(&mut self) -> Result<Plan, EngineError> {
        let mut plan = Plan {
            time: self.now(),
            ..Plan::default()
        };
        plan.nodes = self.cluster.node_count();
        plan.pods = self
            .cluster
            .pods()
            .filter(|(_, p)| !p.phase.is_terminal())
            .count();
        plan.pending_pods = self.cluster.pending_pods().count();
        plan.cost_now = self.node_prices();
        plan.drifted = self
            .cluster
            .nodes()
            .filter(|(_, n)| {
                n.claim
                    .as_ref()
                    .is_some_and(|c| c.lifecycle.drifted.is_some())
            })
            .map(|(_, n)| n.name.clone())
            .collect();
        let karpenter = self.autoscaler.karpenter().is_some();
        // kube-scheduler first: pods that fit existing nodes are not
        // Karpenter's business.
        let pending: Vec<PodId> = self
            .cluster
            .pending_pods()
            .filter(|(_, p)| !p.is_daemonset())
            .map(|(id, _)| id)
            .collect();
        let decisions =
            (self.deciders.schedule)(&mut self.scheduler.kube_scheduler, &self.cluster, &pending);
        let mut reasons: BTreeMap<PodId, String> = BTreeMap::new();
        for decision in decisions {
            match decision {
                Decision::Bind(pod, node) => {
                    plan.scheduled
                        .push((self.pod_key(pod), self.node_name(node)));
                    self.bind_pod(pod, node)?;
                }
                Decision::Unschedulable(pod, reason) => {
                    if let Some(p) = self.cluster.pod_mut(pod) {
                        p.unschedulable = true;
                    }
                    reasons.insert(pod, reason.to_string());
                }
            }
        }
        if karpenter {
            self.plan_provisioning(&mut plan, &reasons)?;
            self.plan_disruption(&mut plan)?;
        } else {
            plan.pending = reasons
                .into_iter()
                .map(|(pod, reason)| (self.pod_key(pod), reason))
                .collect();
        }
        plan.cost_after = plan.cost_now;
        let launched: i64 = plan.nodeclaims.iter().map(|c| c.price.micros()).sum();
        let saved: i64 = plan.commands.iter().map(|c| c.savings.micros()).sum();
        plan.cost_after = Price::from_micros(plan.cost_now.micros() + launched - saved);
        plan.node_verdicts.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(plan)
    }

    fn node_prices(&self) -> Price {
        Price::from_micros(
            self.cluster
                .nodes()
                .map(|(id, _)| {
                    self.ledger
                        .record(self.node_meta[id.0 as usize].billing)
                        .map_or(0, |r| r.launch_price().micros())
                })
                .sum(),
        )
    }

    fn plan_provisioning(
        &mut self,
        plan: &mut Plan,
        reasons: &BTreeMap<PodId, String>,
    ) -> Result<(), EngineError> {
        let pods: Vec<PodId> = self
            .cluster
            .pending_pods()
            .filter(|(_, p)| p.unschedulable && !p.is_daemonset())
            .map(|(id, _)| id)
            .collect();
        if pods.is_empty() {
            return Ok(());
        }
        let contexts = self.autoscaler.kp().contexts();
        let daemonsets = self.daemonset_templates();
        let karpenter = self.autoscaler.kp();
        let result = (self.deciders.solve)(
            &karpenter.provisioner,
            &ProvisioningInput {
                cluster: &self.cluster,
                nodepools: &contexts,
                daemonsets: &daemonsets,
                pods: &pods,
                node_count_resource: karpenter.node_count_resource,
                policies: self.input.karpenter.scheduling,
            },
        );
        drop(contexts);
        for (pod, node) in &result.existing {
            plan.pending.push((
                self.pod_key(*pod),
                format!("nominated for node {} (in flight)", self.node_name(*node)),
            ));
        }
        for (pod, reason) in &result.errors {
            let scheduler = reasons
                .get(pod)
                .map(|r| format!("{r}; "))
                .unwrap_or_default();
            plan.pending.push((
                self.pod_key(*pod),
                format!("{scheduler}Failed to schedule pod, {reason}"),
            ));
        }
        for claim in &result.new_nodeclaims {
            let karpenter = self.autoscaler.kp();
            let pool = &karpenter.pools[claim.nodepool].pool;
            let catalog = &karpenter.catalogs[claim.nodepool];
            let pod_names: Vec<String> = claim.pods.iter().map(|p| self.pod_key(*p)).collect();
            match (self.deciders.choose_offering)(claim, catalog) {
                Ok(decision) => plan.nodeclaims.push(PlannedNodeClaim {
                    nodepool: pool.name.clone(),
                    instance_type: catalog.instance_types()[decision.instance_type]
                        .name()
                        .to_string(),
                    capacity_type: decision.capacity_type,
                    zone: decision.zone.to_string(),
                    price: decision.price,
                    options: claim.instance_types.len(),
                    why: decision.explanation,
                    pods: pod_names,
                }),
                Err(error) => {
                    for pod in pod_names {
                        plan.pending
                            .push((pod, format!("Failed to launch node: {error}")));
                    }
                }
            }
        }
        plan.pending.sort();
        Ok(())
    }

    fn plan_disruption(&mut self, plan: &mut Plan) -> Result<(), EngineError> {
        // Replacements this plan launches are not verdicts of the cluster.
        let original: Vec<NodeId> = self.cluster.nodes().map(|(id, _)| id).collect();
        let mut why_not: BTreeMap<NodeId, String> = BTreeMap::new();
        let mut taken: BTreeMap<NodeId, usize> = BTreeMap::new();
        // Expiration is not a method of the pass: the NodeClaim's own
        // controller deletes an expired node at once.
        let now = self.now();
        for node in expired_nodes(&self.cluster, now) {
            let Some(n) = self.cluster.node(node) else {
                continue;
            };
            let price = n.claim.as_ref().map_or(Price::ZERO, |c| c.price);
            taken.insert(node, plan.commands.len());
            plan.commands.push(PlannedCommand {
                method: "expiration",
                reason: "expired",
                nodes: vec![n.name.clone()],
                replacements: Vec::new(),
                savings: price,
                pods_moved: self.movable_pods(node),
                explanation:
                    "expireAfter reached: the NodeClaim is deleted (its pods are re-provisioned)"
                        .to_string(),
            });
            if let Some(n) = self.cluster.node_mut(node) {
                n.marked_for_deletion = true;
            }
            self.autoscaler.kp_mut().disruption.in_flight.insert(node);
        }
        for _ in 0..MAX_PLANNED_COMMANDS {
            let next_command = self.deciders.next_command;
            let outcome = self.with_input(|input, decider, provisioner| {
                next_command(decider, input, provisioner)
            });
            for (node, reason) in &outcome.unconsolidatable {
                why_not.entry(*node).or_insert_with(|| reason.to_string());
            }
            let Some(command) = outcome.command else {
                break;
            };
            if command.needs_validation {
                let validate = self.deciders.validate;
                if let Err(reason) = self.with_input(|input, decider, provisioner| {
                    validate(decider, input, provisioner, &command)
                }) {
                    for &node in &command.candidates {
                        why_not.insert(
                            node,
                            format!("command abandoned after validation: {reason}"),
                        );
                    }
                    break;
                }
            }
            let index = plan.commands.len();
            let mut replacements = Vec::new();
            for claim in &command.replacements {
                let catalog = &self.autoscaler.kp().catalogs[claim.nodepool];
                if let Ok(decision) = (self.deciders.choose_offering)(claim, catalog) {
                    replacements.push(PlannedReplacement {
                        instance_type: catalog.instance_types()[decision.instance_type]
                            .name()
                            .to_string(),
                        capacity_type: decision.capacity_type,
                        price: decision.price,
                    });
                }
            }
            let node_price: i64 = command
                .candidates
                .iter()
                .filter_map(|&n| self.cluster.node(n))
                .map(|n| n.claim.as_ref().map_or(0, |c| c.price.micros()))
                .sum();
            let replacement_price: i64 = replacements.iter().map(|r| r.price.micros()).sum();
            let mut pods_moved = Vec::new();
            for &node in &command.candidates {
                pods_moved.extend(self.movable_pods(node));
                taken.insert(node, index);
                why_not.remove(&node);
            }
            plan.commands.push(PlannedCommand {
                method: short_method(command.method.name()),
                reason: command.reason.name(),
                nodes: command
                    .candidates
                    .iter()
                    .map(|&n| self.node_name(n))
                    .collect(),
                replacements,
                savings: Price::from_micros(node_price - replacement_price),
                pods_moved,
                explanation: command.explanation.clone(),
            });
            if !self.start_command(command)? {
                break;
            }
        }
        for id in original {
            let Some(node) = self.cluster.node(id) else {
                continue;
            };
            let meta = &self.node_meta[id.0 as usize];
            let price = self
                .ledger
                .record(meta.billing)
                .map_or(Price::ZERO, |r| r.launch_price());
            let (managed_by, nodepool) = match &node.claim {
                Some(claim) => ("karpenter", Some(claim.nodepool.to_string())),
                None if self.initial_owner_is_group(id) => ("nodegroup", None),
                None => ("none", None),
            };
            let reason = why_not.get(&id).cloned().or_else(|| match managed_by {
                "karpenter" => None,
                "nodegroup" => {
                    Some("node is not managed by Karpenter (a node group's node)".to_string())
                }
                _ => Some("node is not managed by Karpenter".to_string()),
            });
            plan.node_verdicts.push(NodeVerdict {
                name: node.name.clone(),
                instance_type: meta.instance_type.clone(),
                capacity_type: node.claim.as_ref().map_or_else(
                    || {
                        self.ledger
                            .record(meta.billing)
                            .map_or(CapacityType::OnDemand, |r| r.capacity_type())
                    },
                    |c| c.capacity_type,
                ),
                nodepool,
                managed_by,
                price,
                candidate: managed_by == "karpenter" && !why_not.contains_key(&id),
                why_not: if taken.contains_key(&id) {
                    None
                } else {
                    reason
                },
                command: taken.get(&id).copied(),
            });
        }
        Ok(())
    }

    /// The pods an eviction of `node` moves (not DaemonSet pods).
    fn movable_pods(&self, node: NodeId) -> Vec<String> {
        self.cluster
            .node(node)
            .map(|n| {
                n.pods
                    .iter()
                    .filter(|&&p| self.cluster.pod(p).is_some_and(|p| !p.is_daemonset()))
                    .map(|&p| self.pod_key(p))
                    .collect()
            })
            .unwrap_or_default()
    }

    fn initial_owner_is_group(&self, id: NodeId) -> bool {
        self.input.initial.as_ref().is_some_and(|state| {
            let name = self.node_name(id);
            state
                .nodes
                .iter()
                .any(|n| n.node.name == name && matches!(n.owner, super::NodeOwner::NodeGroup(_)))
        })
    }
}

/// `multi-node-consolidation` → `multi-node`, as `plan` spells methods.
fn short_method(name: &'static str) -> &'static str {
    name.strip_suffix("-consolidation").unwrap_or(name)
}
