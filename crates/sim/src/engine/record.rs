//! What a run leaves behind: the event log, one record per NodeClaim, the
//! per-minute time series and the summary numbers, all traceable to events.

use std::collections::BTreeMap;

use super::{Autoscaler, Engine};
use crate::cloud::{CapacityType, Price};
use crate::ledger::MicroUsd;
use crate::percentile::SortedSamples;
use crate::time::{SimDuration, SimTime};

/// `kubectl get events` type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EventType {
    /// Normal.
    Normal,
    /// Warning.
    Warning,
}

impl EventType {
    /// `Normal` / `Warning`.
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        }
    }
}

/// One event, like a Kubernetes Event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventRecord {
    /// When.
    pub time: SimTime,
    /// Normal or Warning.
    pub kind: EventType,
    /// kubectl-style reason (`Launched`, `Scheduled`, `FailedScheduling`, …).
    pub reason: String,
    /// `pod/<ns>/<name>`, `nodeclaim/<name>`, `deployment/<ns>/<name>`, …
    pub object: String,
    /// What happened and why.
    pub message: String,
}

/// One NodeClaim, like `kubectl get nodeclaims -o wide` plus its bill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeClaimRecord {
    /// Name (also the node name).
    pub name: String,
    /// NodePool.
    pub nodepool: String,
    /// Instance type.
    pub instance_type: String,
    /// Capacity type.
    pub capacity_type: CapacityType,
    /// Zone.
    pub zone: String,
    /// Hourly price at launch.
    pub price: Price,
    /// Launch (billing start).
    pub launched_at: SimTime,
    /// Initialized (Ready, startup taints gone); `None`: never.
    pub ready_at: Option<SimTime>,
    /// Termination (`None`: still running at the end of the run).
    pub deleted_at: Option<SimTime>,
    /// Why it was deleted (empty while running).
    pub reason_deleted: String,
    /// Cost from launch to termination or the end of the run (60 s minimum).
    pub cost: MicroUsd,
    /// Why it was launched: `provisioning` (pending pods), or the
    /// disruption reason of the command it replaced nodes for.
    pub reason_launched: String,
}

/// Why a node was last not disrupted (a row of `disruption.csv`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DisruptionNote {
    /// Node name.
    pub node: String,
    /// When it was noted.
    pub time: SimTime,
    /// The reason, in upstream's words.
    pub reason: String,
}

/// Churn: what disruption cost the workload, and what it saved.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Churn {
    /// Voluntary evictions of workload (non-DaemonSet) pods by the reason
    /// their node was deleted (`empty`, `underutilized`, `drifted`,
    /// `expired`, …).
    pub evictions_by_reason: BTreeMap<String, u64>,
    /// NodeClaims launched by reason (`provisioning`, or the disruption
    /// reason they replace nodes for).
    pub nodeclaims_launched_by_reason: BTreeMap<String, u64>,
    /// NodeClaims terminated by reason.
    pub nodeclaims_terminated_by_reason: BTreeMap<String, u64>,
    /// Pods evicted or deleted and re-created by their owner, per owner
    /// (`deployment/<ns>/<name>`).
    pub pod_restarts: BTreeMap<String, u64>,
    /// Eviction attempts a PDB refused (each retry counts).
    pub pdb_blocked_evictions: u64,
    /// Pods deleted at a NodeClaim's terminationGracePeriod deadline.
    pub forced_pod_deletions: u64,
    /// Bare pods (no owner) evicted or deleted with their node: gone.
    pub bare_pods_lost: u64,
    /// Disruption commands started, by method.
    pub commands_by_method: BTreeMap<String, u64>,
    /// Commands dropped at validation, aborted or timed out.
    pub commands_failed: u64,
    /// Σ estimated savings per hour of the consolidation (Empty and
    /// Underutilized) commands whose candidates were deleted.
    pub consolidation_savings_per_hour: Price,
    /// Each of those savings rates times the run time left after it: the
    /// dollars consolidation is estimated to have saved.
    pub consolidation_savings: MicroUsd,
}

impl Churn {
    /// Evictions caused by consolidation (Empty and Underutilized).
    pub fn consolidation_evictions(&self) -> u64 {
        ["empty", "underutilized"]
            .iter()
            .filter_map(|r| self.evictions_by_reason.get(*r))
            .sum()
    }

    /// All voluntary evictions.
    pub fn evictions(&self) -> u64 {
        self.evictions_by_reason.values().sum()
    }
}

/// The cluster at one instant (one row per simulated minute).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Sample {
    /// The instant.
    pub time: SimTime,
    /// Nodes (launched, registered or not).
    pub nodes: usize,
    /// Ready nodes (registered and initialized).
    pub nodes_ready: usize,
    /// Fleet price per hour.
    pub hourly_rate: Price,
    /// Requested CPU (millicores) of pods on nodes.
    pub cpu_requested_millis: i64,
    /// Allocatable CPU (millicores).
    pub cpu_allocatable_millis: i64,
    /// Requested memory (bytes).
    pub memory_requested_bytes: i64,
    /// Allocatable memory (bytes).
    pub memory_allocatable_bytes: i64,
    /// Pending pods.
    pub pending_pods: usize,
    /// The cost lower bound's rate (see [`crate::lower_bound`]).
    pub lower_bound_rate: Price,
}

/// Pods still pending at the end, grouped by why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReasonCount {
    /// The latest reason they could not be placed.
    pub reason: String,
    /// How many pods.
    pub pods: usize,
    /// One of them, `<ns>/<name>`.
    pub example: String,
}

/// The headline numbers of a run: one field per number `summary.json`
/// reports.
#[derive(Debug, Clone, PartialEq)]
pub struct RunSummary {
    /// Variant.
    pub variant: String,
    /// Run length.
    pub duration: SimDuration,
    /// Total cost (sum of the NodeClaim costs).
    pub total_cost: MicroUsd,
    /// Cost per capacity type.
    pub cost_by_capacity_type: BTreeMap<CapacityType, MicroUsd>,
    /// Cost per NodePool.
    pub cost_by_nodepool: BTreeMap<String, MicroUsd>,
    /// Node lifetime summed over nodes, in milliseconds.
    pub node_millis: u64,
    /// Most nodes at once.
    pub peak_nodes: usize,
    /// NodeClaims launched.
    pub nodeclaims_launched: u64,
    /// Launches that failed (insufficient capacity or no offering).
    pub launch_failures: u64,
    /// Jobs failed because they ran past `activeDeadlineSeconds`.
    pub jobs_failed: u64,
    /// Time-weighted requested / allocatable CPU over all nodes (0–1).
    pub cpu_allocation: f64,
    /// Same for memory.
    pub memory_allocation: f64,
    /// Workload pods (not DaemonSet) created.
    pub pods_created: usize,
    /// Workload pods that were bound at least once.
    pub pods_scheduled: usize,
    /// Workload pods still pending at the end that were never bound.
    pub pods_unschedulable: usize,
    /// Pending time (creation → first bind) of scheduled pods: p50.
    pub pending_p50: Option<SimDuration>,
    /// p95.
    pub pending_p95: Option<SimDuration>,
    /// Maximum.
    pub pending_max: Option<SimDuration>,
    /// Why the unschedulable pods are pending, most pods first.
    pub unschedulable_reasons: Vec<ReasonCount>,
    /// Events logged.
    pub events: usize,
    /// Disruption churn and savings.
    pub churn: Churn,
    /// Spot interruptions, their cost and the spot savings.
    pub spot: super::SpotSummary,
    /// Trace rows skipped as unusable (`--skip-bad-rows`).
    pub trace_rows_skipped: u64,
    /// The objects scale and delete steps named that did not exist when
    /// the step came (steps whose object only a trace could have created;
    /// the others are refused when the scenario is read), by verb and
    /// object.
    pub missing_targets: Vec<MissingTarget>,
    /// The cost lower bound over the run (see [`crate::lower_bound`]).
    pub cost_lower_bound: MicroUsd,
    /// `cost_lower_bound / total_cost`; `None` when nothing was paid.
    pub cost_efficiency: Option<f64>,
}

/// Scale or delete steps that named one object that did not exist.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissingTarget {
    /// `scale` or `delete`.
    pub verb: &'static str,
    /// The object named.
    pub target: super::Target,
    /// When the first such step came.
    pub first_at: SimTime,
    /// How many steps named it.
    pub steps: u64,
}

impl RunSummary {
    /// Scale and delete steps whose object did not exist.
    pub fn steps_missing_target(&self) -> u64 {
        self.missing_targets.iter().map(|m| m.steps).sum()
    }

    /// Node-hours.
    pub fn node_hours(&self) -> f64 {
        self.node_millis as f64 / 3_600_000.0
    }

    /// Spot node-hours over all node-hours (0 without nodes).
    pub fn spot_share(&self) -> f64 {
        if self.node_millis == 0 {
            0.0
        } else {
            self.spot.spot_node_millis as f64 / self.node_millis as f64
        }
    }
}

/// Everything a run produced.
#[derive(Debug, Clone, PartialEq)]
pub struct RunOutput {
    /// Headline numbers.
    pub summary: RunSummary,
    /// NodeClaims in launch order.
    pub nodeclaims: Vec<NodeClaimRecord>,
    /// Events in time order (empty when they went to an [`super::EventSink`]
    /// during the run).
    pub events: Vec<EventRecord>,
    /// One sample per simulated minute, from 0 to the end.
    pub timeseries: Vec<Sample>,
    /// Per node, the last published reason it was not disrupted, in node order.
    pub disruption: Vec<DisruptionNote>,
    /// `Some` for a Cluster Autoscaler run: CA's unremovable reasons per
    /// node, a row each time a node's reason changes.
    pub scale_down: Option<Vec<super::UnremovableRecord>>,
    /// The cluster at the run's `snapshot_at`, if asked for and reached.
    pub export: Option<super::ClusterExport>,
}

impl Engine<'_> {
    /// A node's name from the ledger (also after the node is gone).
    fn node_meta_name(&self, node: crate::scheduler::NodeId) -> String {
        self.node_meta
            .get(node.0 as usize)
            .and_then(|m| self.ledger.record(m.billing))
            .map_or_else(|| format!("node#{}", node.0), |r| r.node_name().to_string())
    }

    /// Closes the books at `end`.
    pub(super) fn finish(self, end: SimTime) -> RunOutput {
        let totals = self.ledger.totals_at(end);
        let mut node_millis = 0u64;
        let nodeclaims: Vec<NodeClaimRecord> = self
            .node_meta
            .iter()
            .filter_map(|meta| {
                let record = self.ledger.record(meta.billing)?;
                let stop = meta.deleted_at.unwrap_or(end).min(end);
                node_millis += stop
                    .saturating_duration_since(record.launched_at())
                    .as_millis();
                Some(NodeClaimRecord {
                    name: record.node_name().to_string(),
                    nodepool: record.pool().to_string(),
                    instance_type: meta.instance_type.clone(),
                    capacity_type: record.capacity_type(),
                    zone: meta.zone.clone(),
                    price: record.launch_price(),
                    launched_at: record.launched_at(),
                    ready_at: meta.ready_at,
                    deleted_at: meta.deleted_at,
                    reason_deleted: meta.reason_deleted.clone(),
                    cost: record.cost(end),
                    reason_launched: meta.launch_reason.clone(),
                })
            })
            .collect();

        let workload_pods = || {
            self.pod_meta
                .iter()
                .enumerate()
                .filter(|(_, m)| !m.daemonset)
        };
        let pending_samples: Vec<SimDuration> = workload_pods()
            .filter(|(_, m)| !m.bound_before_run)
            .filter_map(|(_, m)| {
                m.first_bound
                    .map(|b| b.saturating_duration_since(m.created_at))
            })
            .collect();
        let pending = SortedSamples::new(pending_samples);
        let mut reasons: BTreeMap<String, (usize, String)> = BTreeMap::new();
        let mut unschedulable = 0;
        for (index, meta) in workload_pods() {
            let still_pending = !meta.removed
                && meta.first_bound.is_none()
                && self
                    .cluster
                    .pod(crate::scheduler::PodId(index as u32))
                    .is_some_and(|p| p.node.is_none() && !p.phase.is_terminal());
            if still_pending {
                unschedulable += 1;
                let id = crate::scheduler::PodId(index as u32);
                let reason = self
                    .attempts
                    .get(&id)
                    .and_then(|a| a.last_reason.as_deref())
                    .unwrap_or("not yet considered by the scheduler")
                    .to_string();
                let entry = reasons
                    .entry(reason)
                    .or_insert_with(|| (0, self.pod_key(id)));
                entry.0 += 1;
            }
        }
        let mut unschedulable_reasons: Vec<ReasonCount> = reasons
            .into_iter()
            .map(|(reason, (pods, example))| ReasonCount {
                reason,
                pods,
                example,
            })
            .collect();
        unschedulable_reasons.sort_by(|a, b| b.pods.cmp(&a.pods).then(a.reason.cmp(&b.reason)));

        let ratio = |num: i128, den: i128| {
            if den > 0 {
                num as f64 / den as f64
            } else {
                0.0
            }
        };
        let summary = RunSummary {
            variant: self.input.variant.clone(),
            duration: self.input.duration,
            total_cost: totals.total,
            cost_by_capacity_type: totals.by_capacity_type,
            cost_by_nodepool: totals.by_pool,
            node_millis,
            peak_nodes: self.record.peak_nodes,
            nodeclaims_launched: self.record.launched,
            launch_failures: self.record.launch_failures,
            jobs_failed: self.owners.jobs_failed,
            cpu_allocation: ratio(
                self.record.usage.cpu_requested_ms,
                self.record.usage.cpu_allocatable_ms,
            ),
            memory_allocation: ratio(
                self.record.usage.memory_requested_ms,
                self.record.usage.memory_allocatable_ms,
            ),
            pods_created: workload_pods().count(),
            pods_scheduled: workload_pods()
                .filter(|(_, m)| m.first_bound.is_some())
                .count(),
            pods_unschedulable: unschedulable,
            pending_p50: pending.percentile(crate::Percentile::P50),
            pending_p95: pending.percentile(crate::Percentile::P95),
            pending_max: pending.percentile(crate::Percentile::MAX),
            unschedulable_reasons,
            events: self.record.events.count(),
            churn: self.record.churn.clone(),
            spot: self.spot_summary(end),
            trace_rows_skipped: 0,
            missing_targets: self
                .owners
                .missing_targets
                .iter()
                .map(|((verb, target), (first_at, steps))| MissingTarget {
                    verb,
                    target: target.clone(),
                    first_at: *first_at,
                    steps: *steps,
                })
                .collect(),
            cost_lower_bound: self.record.bound.total(),
            cost_efficiency: (totals.total.0 > 0)
                .then(|| self.record.bound.total().0 as f64 / totals.total.0 as f64),
        };
        let disruption = self
            .autoscaler
            .karpenter()
            .map(|karpenter| {
                karpenter
                    .disruption
                    .notes
                    .iter()
                    .map(|(node, (time, reason))| DisruptionNote {
                        node: self.node_meta_name(*node),
                        time: *time,
                        reason: reason.clone(),
                    })
                    .collect()
            })
            .unwrap_or_default();
        RunOutput {
            summary,
            nodeclaims,
            export: self.record.export,
            events: self.record.events.into_kept(),
            timeseries: self.record.samples,
            disruption,
            scale_down: match self.autoscaler {
                Autoscaler::ClusterAutoscaler(ca) => Some(ca.unremovable),
                Autoscaler::Karpenter(_) => None,
            },
        }
    }

    /// Adds the usage integrals (and the cost lower bound's) from the last
    /// integration up to `to`.
    pub(super) fn integrate_until(&mut self, to: SimTime) {
        let dt = i128::from(
            to.saturating_duration_since(self.record.usage.integrated_until)
                .as_millis(),
        );
        if dt > 0 {
            // Summed first, multiplied once: Σ(xᵢ·dt) = (Σxᵢ)·dt exactly.
            let totals = self.cluster.node_totals();
            let usage = &mut self.record.usage;
            usage.cpu_requested_ms += i128::from(totals.cpu_requested_millis) * dt;
            usage.cpu_allocatable_ms += i128::from(totals.cpu_allocatable_millis) * dt;
            usage.memory_requested_ms += i128::from(totals.memory_requested_bytes) * dt;
            usage.memory_allocatable_ms += i128::from(totals.memory_allocatable_bytes) * dt;
            self.record.bound.integrate(
                dt as u64,
                totals.cpu_requested_millis,
                totals.memory_requested_bytes,
            );
        }
        self.record.usage.integrated_until = self.record.usage.integrated_until.max(to);
    }
}
