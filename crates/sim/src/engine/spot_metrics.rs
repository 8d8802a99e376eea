//! What spot cost and saved in a run, computed when the books close.
//!
//! Definitions (all from recorded events; "the end" is the end of the run):
//!
//! - **Interruptions**: notices delivered to a node still in the cluster
//!   and not noticed before, by source (`advisor-hazard`, `storm`,
//!   `trace`).
//! - **Pods disrupted**: workload (non-DaemonSet) pods running and not
//!   terminating on a node at its notice.
//! - **Pods killed at reclaim**: of those, the ones still running when EC2
//!   reclaimed the instance 120 s later (no graceful eviction: a PDB held
//!   them, or their grace ran past the reclaim).
//! - **Pod-seconds without a running replica**, per owner: for each
//!   disrupted pod that left its node (evicted, force-deleted or killed),
//!   from the moment it stopped running (its termination grace over, or the
//!   reclaim) until its replacement — the next pod its owner created after
//!   it left — was bound to a node; zero when the replacement ran first.
//!   Open gaps count until the end; a replacement removed before it ran
//!   (scaled away) closes the gap then. Bare pods have no replacement and
//!   are counted in `bare_pods_lost` instead.
//! - **Replacement latency** p50/p95: notice → replacement bound, over the
//!   disrupted pods whose replacement ran before the end.
//! - **Overlap cost**: for each interrupted node, its bill between the
//!   launch of the first node that ran one of its replacement pods
//!   (launched at or after the notice) and its own billing stop: the time
//!   old and new capacity were both paid for.
//! - **Spot node-hours**: lifetime of spot nodes within the run; the spot
//!   share divides it by all node-hours.
//! - **Savings vs on-demand**: Σ over spot nodes of what the same lifetime
//!   would have cost at the type's on-demand price (60 s minimum included)
//!   minus its actual bill, i.e. Σ node-hours × (on-demand price − price
//!   paid).

use std::collections::BTreeMap;

use super::Engine;
use crate::ledger::{BillingRecord, MINIMUM_BILLED, MicroUsd};
use crate::percentile::{Percentile, SortedSamples};
use crate::time::{SimDuration, SimTime};

/// Milliseconds per hour.
const MS_PER_HOUR: i128 = 3_600_000;

/// The spot numbers of a run (see the module documentation).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SpotSummary {
    /// Interruption notices by source.
    pub interruptions_by_source: BTreeMap<String, u64>,
    /// Rebalance recommendations given.
    pub rebalance_recommendations: u64,
    /// Workload pods on nodes at their notice.
    pub pods_disrupted: u64,
    /// Workload pods still running at the reclaim.
    pub pods_killed_at_reclaim: u64,
    /// Milliseconds without a running replica, per owner
    /// (`deployment/<ns>/<name>`).
    pub pod_millis_without_replica: BTreeMap<String, u64>,
    /// Notice → replacement bound: median.
    pub replacement_latency_p50: Option<SimDuration>,
    /// 95th percentile.
    pub replacement_latency_p95: Option<SimDuration>,
    /// Disrupted pods whose replacement had not run by the end.
    pub replacements_not_running: u64,
    /// Bills of interrupted nodes while their replacements ran.
    pub overlap_cost: MicroUsd,
    /// Lifetime of spot nodes, milliseconds.
    pub spot_node_millis: u64,
    /// What spot nodes would have cost on demand minus what they cost.
    pub savings_vs_on_demand: MicroUsd,
    /// Spot price changes applied.
    pub price_changes: u64,
    /// Launches refused by a storm outage.
    pub outage_launch_failures: u64,
    /// Trace rows that found no node to interrupt.
    pub trace_rows_skipped: u64,
}

impl SpotSummary {
    /// All interruption notices.
    pub fn interruptions(&self) -> u64 {
        self.interruptions_by_source.values().sum()
    }

    /// Milliseconds without a running replica, over all owners.
    pub fn pod_millis_without_replica_total(&self) -> u64 {
        self.pod_millis_without_replica.values().sum()
    }
}

/// The bill of `record` over `[from, to)` at the prices in force, in
/// micro-USD·ms per hour (no minimum).
fn window_cost_exact(record: &BillingRecord, from: SimTime, to: SimTime) -> i128 {
    let segments = record.segments();
    let mut exact = 0i128;
    for (i, segment) in segments.iter().enumerate() {
        let start = segment.from.max(from);
        let stop = segments.get(i + 1).map_or(to, |next| next.from).min(to);
        let ms = stop.saturating_duration_since(start).as_millis();
        exact += i128::from(segment.price.micros()) * i128::from(ms);
    }
    exact
}

fn round_micros(exact: i128) -> MicroUsd {
    MicroUsd(i64::try_from((exact + MS_PER_HOUR / 2) / MS_PER_HOUR).unwrap_or(i64::MAX))
}

impl Engine<'_> {
    /// The spot numbers at `end`.
    pub(super) fn spot_summary(&self, end: SimTime) -> SpotSummary {
        let spot = &self.spot;
        let mut summary = SpotSummary {
            interruptions_by_source: spot.counts.interruptions_by_source.clone(),
            rebalance_recommendations: spot.counts.rebalance_recommendations,
            pods_disrupted: spot.interrupted.values().map(|i| i.pods.len() as u64).sum(),
            pods_killed_at_reclaim: spot.counts.pods_killed_at_reclaim,
            price_changes: spot.counts.price_changes,
            outage_launch_failures: spot.counts.outage_launch_failures,
            trace_rows_skipped: spot.counts.trace_rows_skipped,
            ..SpotSummary::default()
        };

        let mut latencies = Vec::new();
        for gap in &spot.gaps {
            let owner = self.owners.workloads[gap.workload].object();
            let entry = summary.pod_millis_without_replica.entry(owner).or_default();
            match gap.running {
                Some((at, _)) => latencies.push(at.saturating_duration_since(gap.notice)),
                None if gap.dropped.is_none() => summary.replacements_not_running += 1,
                None => {}
            }
            let Some(stopped) = gap.stopped else {
                continue;
            };
            let closed = gap
                .running
                .map(|(at, _)| at)
                .or(gap.dropped)
                .unwrap_or(end)
                .min(end);
            *entry += closed.saturating_duration_since(stopped).as_millis();
        }
        let latencies = SortedSamples::new(latencies);
        summary.replacement_latency_p50 = latencies.percentile(Percentile::P50);
        summary.replacement_latency_p95 = latencies.percentile(Percentile::P95);

        let launched_at = |node: crate::scheduler::NodeId| {
            self.node_meta
                .get(node.0 as usize)
                .and_then(|m| self.ledger.record(m.billing))
                .map(BillingRecord::launched_at)
        };
        for (&node, interrupted) in &spot.interrupted {
            let first_replacement = spot
                .gaps
                .iter()
                .filter(|g| g.node == node)
                .filter_map(|g| g.running.map(|(_, r)| r))
                .filter_map(launched_at)
                .filter(|&at| at >= interrupted.notice)
                .min();
            let Some(from) = first_replacement else {
                continue;
            };
            let Some(record) = self
                .node_meta
                .get(node.0 as usize)
                .and_then(|m| self.ledger.record(m.billing))
            else {
                continue;
            };
            let stop = record.terminated_at().unwrap_or(end).min(end);
            summary.overlap_cost += round_micros(window_cost_exact(record, from, stop));
        }

        for (&node, facts) in &spot.nodes {
            let Some(record) = self
                .node_meta
                .get(node.0 as usize)
                .and_then(|m| self.ledger.record(m.billing))
            else {
                continue;
            };
            let stop = record.terminated_at().unwrap_or(end).min(end);
            let lifetime = stop.saturating_duration_since(record.launched_at());
            summary.spot_node_millis += lifetime.as_millis();
            let billed = lifetime.max(MINIMUM_BILLED).as_millis();
            let on_demand =
                round_micros(i128::from(facts.on_demand_price.micros()) * i128::from(billed));
            summary.savings_vs_on_demand.0 += on_demand.0 - record.cost(end).0;
        }
        summary
    }
}
