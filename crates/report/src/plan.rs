//! The output of `karpsim plan`: one schema ([`PlanReport`]) for `-o json`
//! and `-o yaml`, and its table for people. Keys are the contract scripts
//! gate on (`cost_per_hour_usd.after_plan`, `disruption.commands[]`, …);
//! prices are exact decimals of dollars per hour.

use std::fmt::Write;

use serde::Serialize;

use karpsim_input::cluster_snapshot::AllocatableDifference;
use karpsim_sim::engine::Plan;

/// `karpsim plan -o json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlanReport {
    /// The snapshot planned on.
    pub snapshot: SnapshotInfo,
    /// $/h now and once the plan is carried out.
    pub cost_per_hour_usd: CostPerHour,
    /// What Karpenter's provisioner would do for the pending pods.
    pub provisioning: Provisioning,
    /// What the disruption controller would do next.
    pub disruption: Disruption,
    /// Every node with its verdict.
    pub nodes: Vec<NodeRow>,
    /// Nodes whose NodeClaim drifted from the NodePools planned with.
    pub drifted: Vec<String>,
    /// Nodes whose reported allocatable differs from Karpenter's estimate.
    pub allocatable_differences: Vec<AllocatableRow>,
}

/// `snapshot`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SnapshotInfo {
    /// The snapshot's file or folder.
    pub source: String,
    /// Its instant (RFC 3339).
    pub time: String,
    /// Region planned in.
    pub region: String,
    /// Nodes.
    pub nodes: usize,
    /// Pods (not finished).
    pub pods: usize,
    /// Pending pods.
    pub pending_pods: usize,
}

/// `cost_per_hour_usd`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CostPerHour {
    /// Σ node prices now.
    pub now: serde_json::Number,
    /// After the planned launches and disruptions.
    pub after_plan: serde_json::Number,
}

/// `provisioning`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Provisioning {
    /// Pods kube-scheduler binds to existing nodes.
    pub scheduled: Vec<ScheduledRow>,
    /// NodeClaims Karpenter would create.
    pub nodeclaims: Vec<NodeClaimRow>,
    /// Pods that stay pending.
    pub pending: Vec<PendingRow>,
}

/// A pod kube-scheduler binds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScheduledRow {
    /// `namespace/name`.
    pub pod: String,
    /// Node.
    pub node: String,
}

/// A NodeClaim to create.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NodeClaimRow {
    /// NodePool.
    pub nodepool: String,
    /// Instance type.
    pub instance_type: String,
    /// `on-demand` or `spot`.
    pub capacity_type: String,
    /// Zone.
    pub zone: String,
    /// Price.
    pub price_usd_per_hour: serde_json::Number,
    /// How many instance types it could have been.
    pub instance_type_options: usize,
    /// Why this launch.
    pub why: String,
    /// Its pods.
    pub pods: Vec<String>,
}

/// A pod that stays pending.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PendingRow {
    /// `namespace/name`.
    pub pod: String,
    /// Why.
    pub reason: String,
}

/// `disruption`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Disruption {
    /// Commands in the order the controller would start them.
    pub commands: Vec<CommandRow>,
}

/// A disruption command.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CommandRow {
    /// `emptiness`, `drift`, `multi-node`, `single-node` or `expiration`.
    pub method: String,
    /// `empty`, `underutilized`, `drifted` or `expired`.
    pub reason: String,
    /// Nodes deleted.
    pub nodes: Vec<String>,
    /// Replacements launched first.
    pub replacements: Vec<ReplacementRow>,
    /// Σ node prices − Σ replacement prices.
    pub savings_usd_per_hour: serde_json::Number,
    /// Pods evicted (DaemonSet pods stay).
    pub pods_moved: Vec<String>,
    /// The controller's sentence.
    pub explanation: String,
}

/// A replacement NodeClaim.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReplacementRow {
    /// Instance type.
    pub instance_type: String,
    /// Capacity type.
    pub capacity_type: String,
    /// Price.
    pub price_usd_per_hour: serde_json::Number,
}

/// A node's verdict.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NodeRow {
    /// Node.
    pub name: String,
    /// Instance type.
    pub instance_type: String,
    /// Capacity type.
    pub capacity_type: String,
    /// NodePool (Karpenter nodes).
    pub nodepool: Option<String>,
    /// `karpenter`, `nodegroup` or `none`.
    pub managed_by: String,
    /// Price.
    pub price_usd_per_hour: serde_json::Number,
    /// Whether the disruption controller considers it.
    pub candidate: bool,
    /// Why it is not disrupted, in upstream's words.
    pub why_not: Option<String>,
    /// Index into `disruption.commands` of the command that takes it.
    pub command: Option<usize>,
}

/// A node whose reported allocatable differs from the estimate.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AllocatableRow {
    /// Node.
    pub node: String,
    /// Instance type.
    pub instance_type: String,
    /// Reported CPU millicores and memory MiB.
    pub reported_cpu_millis: i64,
    /// Reported memory (MiB).
    pub reported_memory_mib: i64,
    /// Karpenter's estimate, CPU.
    pub estimated_cpu_millis: i64,
    /// Karpenter's estimate, memory (MiB).
    pub estimated_memory_mib: i64,
}

fn number(price: karpsim_model::cloud::Price) -> serde_json::Number {
    let text = price.decimal();
    text.parse::<serde_json::Number>()
        .unwrap_or_else(|_| serde_json::Number::from(0))
}

/// What the snapshot was, beside the plan.
pub struct PlanContext<'a> {
    /// The snapshot's file or folder.
    pub source: &'a str,
    /// Its instant.
    pub time: &'a str,
    /// Region.
    pub region: &'a str,
    /// Nodes whose reported allocatable differs from the estimate.
    pub allocatable: &'a [AllocatableDifference],
}

impl PlanReport {
    /// The report of `plan`.
    pub fn new(plan: &Plan, context: &PlanContext<'_>) -> PlanReport {
        const MIB: i64 = 1 << 20;
        PlanReport {
            snapshot: SnapshotInfo {
                source: context.source.to_string(),
                time: context.time.to_string(),
                region: context.region.to_string(),
                nodes: plan.nodes,
                pods: plan.pods,
                pending_pods: plan.pending_pods,
            },
            cost_per_hour_usd: CostPerHour {
                now: number(plan.cost_now),
                after_plan: number(plan.cost_after),
            },
            provisioning: Provisioning {
                scheduled: plan
                    .scheduled
                    .iter()
                    .map(|(pod, node)| ScheduledRow {
                        pod: pod.clone(),
                        node: node.clone(),
                    })
                    .collect(),
                nodeclaims: plan
                    .nodeclaims
                    .iter()
                    .map(|c| NodeClaimRow {
                        nodepool: c.nodepool.clone(),
                        instance_type: c.instance_type.clone(),
                        capacity_type: c.capacity_type.label().to_string(),
                        zone: c.zone.clone(),
                        price_usd_per_hour: number(c.price),
                        instance_type_options: c.options,
                        why: c.why.clone(),
                        pods: c.pods.clone(),
                    })
                    .collect(),
                pending: plan
                    .pending
                    .iter()
                    .map(|(pod, reason)| PendingRow {
                        pod: pod.clone(),
                        reason: reason.clone(),
                    })
                    .collect(),
            },
            disruption: Disruption {
                commands: plan
                    .commands
                    .iter()
                    .map(|c| CommandRow {
                        method: c.method.to_string(),
                        reason: c.reason.to_string(),
                        nodes: c.nodes.clone(),
                        replacements: c
                            .replacements
                            .iter()
                            .map(|r| ReplacementRow {
                                instance_type: r.instance_type.clone(),
                                capacity_type: r.capacity_type.label().to_string(),
                                price_usd_per_hour: number(r.price),
                            })
                            .collect(),
                        savings_usd_per_hour: number(c.savings),
                        pods_moved: c.pods_moved.clone(),
                        explanation: c.explanation.clone(),
                    })
                    .collect(),
            },
            nodes: plan
                .node_verdicts
                .iter()
                .map(|n| NodeRow {
                    name: n.name.clone(),
                    instance_type: n.instance_type.clone(),
                    capacity_type: n.capacity_type.label().to_string(),
                    nodepool: n.nodepool.clone(),
                    managed_by: n.managed_by.to_string(),
                    price_usd_per_hour: number(n.price),
                    candidate: n.candidate,
                    why_not: n.why_not.clone(),
                    command: n.command,
                })
                .collect(),
            drifted: plan.drifted.clone(),
            allocatable_differences: context
                .allocatable
                .iter()
                .map(|d| AllocatableRow {
                    node: d.node.clone(),
                    instance_type: d.instance_type.clone(),
                    reported_cpu_millis: d.reported.0,
                    reported_memory_mib: d.reported.1 / MIB,
                    estimated_cpu_millis: d.estimated.0,
                    estimated_memory_mib: d.estimated.1 / MIB,
                })
                .collect(),
        }
    }

    /// The plan as text for a terminal.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let s = &self.snapshot;
        let _ = writeln!(
            out,
            "snapshot {} at {} ({}): {} nodes, {} pods, {} pending",
            s.source, s.time, s.region, s.nodes, s.pods, s.pending_pods
        );
        let _ = writeln!(
            out,
            "cost now ${}/h, after the plan ${}/h",
            self.cost_per_hour_usd.now, self.cost_per_hour_usd.after_plan
        );
        let p = &self.provisioning;
        let _ = writeln!(out, "\nprovisioning");
        if p.scheduled.is_empty() && p.nodeclaims.is_empty() && p.pending.is_empty() {
            let _ = writeln!(out, "  no pending pods");
        }
        for row in &p.scheduled {
            let _ = writeln!(out, "  bind {} to {} (kube-scheduler)", row.pod, row.node);
        }
        for c in &p.nodeclaims {
            let _ = writeln!(
                out,
                "  create NodeClaim in {}: {} {} in {} at ${}/h for {} pod(s) ({} instance type options; {})",
                c.nodepool,
                c.instance_type,
                c.capacity_type,
                c.zone,
                c.price_usd_per_hour,
                c.pods.len(),
                c.instance_type_options,
                c.why
            );
        }
        for row in &p.pending {
            let _ = writeln!(out, "  {} stays pending: {}", row.pod, row.reason);
        }
        let _ = writeln!(out, "\ndisruption");
        if self.disruption.commands.is_empty() {
            let _ = writeln!(out, "  no command");
        }
        for (i, c) in self.disruption.commands.iter().enumerate() {
            let _ = writeln!(
                out,
                "  {}. {} ({}): {}; moves {} pod(s)",
                i + 1,
                c.method,
                c.reason,
                c.explanation,
                c.pods_moved.len()
            );
        }
        if !self.drifted.is_empty() {
            let _ = writeln!(out, "\ndrifted: {}", self.drifted.join(", "));
        }
        let _ = writeln!(out, "\nnodes");
        let width = self.nodes.iter().map(|n| n.name.len()).max().unwrap_or(4);
        for n in &self.nodes {
            let verdict = match (&n.command, &n.why_not) {
                (Some(i), _) => format!("command {}", i + 1),
                (None, Some(why)) => why.clone(),
                (None, None) => "candidate, nothing to do".to_string(),
            };
            let _ = writeln!(
                out,
                "  {:width$}  {:12} {:9} {:10} ${:<8} {}",
                n.name,
                n.instance_type,
                n.capacity_type,
                n.nodepool.as_deref().unwrap_or(&n.managed_by),
                n.price_usd_per_hour.to_string(),
                verdict
            );
        }
        if !self.allocatable_differences.is_empty() {
            let _ = writeln!(
                out,
                "\n{} node(s) report an allocatable other than Karpenter's estimate (karpsim uses what they report):",
                self.allocatable_differences.len()
            );
            for a in self.allocatable_differences.iter().take(5) {
                let _ = writeln!(
                    out,
                    "  {} ({}): {}m / {} MiB reported, {}m / {} MiB estimated",
                    a.node,
                    a.instance_type,
                    a.reported_cpu_millis,
                    a.reported_memory_mib,
                    a.estimated_cpu_millis,
                    a.estimated_memory_mib
                );
            }
        }
        out
    }
}
