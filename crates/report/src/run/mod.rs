//! The report of `karpsim run`: a summary table for the terminal (with
//! deltas against the first variant) and, per variant, `summary.json`,
//! `nodeclaims.csv`, `events.csv`, `timeseries.csv` and `disruption.csv`,
//! written atomically (see [`crate::atomic`]). A Cluster Autoscaler variant writes
//! `nodes.csv` (the columns of `nodeclaims.csv`, `nodepool` being the node
//! group) in place of `nodeclaims.csv`, and `scaledown.csv` (CA's
//! unremovable reasons) in place of `disruption.csv`. `karpsim run` writes
//! `events.csv` into the temporary folder while the run goes on (see
//! [`EventsCsv`]), so the event log is never held in memory.
//!
//! Numbers are written from exact integers with fixed decimals (money with
//! six, times with three), so the same run always gives the same bytes.

mod events;

pub use events::{EVENTS_FILE, EventsCsv};

#[cfg(test)]
mod tests;

use std::io::{self, Write};

use serde::Serialize;

use std::collections::BTreeMap;

use super::table::{Align, write_table};
use crate::sim::engine::{Churn, RunOutput, RunSummary, SpotSummary};
use crate::sim::ledger::MicroUsd;
use crate::sim::time::{SimDuration, SimTime};
use crate::snapshot::SnapshotIdentity;

/// Names of the files written per variant.
pub const FILES: [&str; 5] = [
    "summary.json",
    "nodeclaims.csv",
    "events.csv",
    "timeseries.csv",
    "disruption.csv",
];

/// `12.345678`: micro-USD as dollars, exact.
pub fn usd(amount: MicroUsd) -> String {
    let sign = if amount.0 < 0 { "-" } else { "" };
    let abs = amount.0.unsigned_abs();
    format!("{sign}{}.{:06}", abs / 1_000_000, abs % 1_000_000)
}

/// `90.500`: milliseconds as seconds, exact.
pub fn seconds(ms: u64) -> String {
    format!("{}.{:03}", ms / 1000, ms % 1000)
}

fn time_s(t: SimTime) -> String {
    seconds(t.as_millis())
}

fn opt_time_s(t: Option<SimTime>) -> String {
    t.map(time_s).unwrap_or_default()
}

/// Rounds for JSON: keeps files short and stable.
fn round(value: f64, decimals: i32) -> f64 {
    let scale = 10f64.powi(decimals);
    (value * scale).round() / scale
}

fn usd_f64(amount: MicroUsd) -> f64 {
    amount.0 as f64 / 1e6
}

fn secs_f64(d: Option<SimDuration>) -> Option<f64> {
    d.map(|d| round(d.as_millis() as f64 / 1000.0, 3))
}

#[derive(Serialize)]
struct SummaryJson<'a> {
    scenario: &'a str,
    variant: &'a str,
    /// The pricing snapshot the run's catalogs were built from.
    pricing: &'a SnapshotIdentity,
    duration_s: f64,
    total_cost_usd: f64,
    cost_by_capacity_type: BTreeMap<&'static str, f64>,
    cost_by_nodepool: BTreeMap<&'a str, f64>,
    cost_lower_bound_usd: f64,
    cost_efficiency: Option<f64>,
    node_hours: f64,
    peak_nodes: usize,
    nodeclaims_launched: u64,
    launch_failures: u64,
    jobs_failed: u64,
    cpu_allocation: f64,
    memory_allocation: f64,
    pods_created: usize,
    pods_scheduled: usize,
    pods_unschedulable: usize,
    pending_seconds_p50: Option<f64>,
    pending_seconds_p95: Option<f64>,
    pending_seconds_max: Option<f64>,
    unschedulable_reasons: Vec<ReasonJson<'a>>,
    events: usize,
    churn: ChurnJson<'a>,
    trace_rows_skipped: u64,
    steps_missing_target: u64,
    spot: SpotJson<'a>,
}

/// The spot block of `summary.json` (definitions: the engine's
/// `spot_metrics` module).
#[derive(Serialize)]
struct SpotJson<'a> {
    interruptions: u64,
    interruptions_by_source: BTreeMap<&'a str, u64>,
    rebalance_recommendations: u64,
    pods_disrupted: u64,
    pods_killed_at_reclaim: u64,
    pod_seconds_without_replica: f64,
    pod_seconds_without_replica_by_owner: BTreeMap<&'a str, f64>,
    replacement_latency_seconds_p50: Option<f64>,
    replacement_latency_seconds_p95: Option<f64>,
    replacements_not_running: u64,
    overlap_cost_usd: f64,
    spot_node_hours: f64,
    spot_share_of_node_hours: f64,
    savings_vs_on_demand_usd: f64,
    price_changes: u64,
    outage_launch_failures: u64,
    trace_rows_skipped: u64,
}

fn spot_json(summary: &RunSummary) -> SpotJson<'_> {
    let spot: &SpotSummary = &summary.spot;
    let ms_to_s = |ms: u64| round(ms as f64 / 1000.0, 3);
    SpotJson {
        interruptions: spot.interruptions(),
        interruptions_by_source: counts(&spot.interruptions_by_source),
        rebalance_recommendations: spot.rebalance_recommendations,
        pods_disrupted: spot.pods_disrupted,
        pods_killed_at_reclaim: spot.pods_killed_at_reclaim,
        pod_seconds_without_replica: ms_to_s(spot.pod_millis_without_replica_total()),
        pod_seconds_without_replica_by_owner: spot
            .pod_millis_without_replica
            .iter()
            .map(|(owner, ms)| (owner.as_str(), ms_to_s(*ms)))
            .collect(),
        replacement_latency_seconds_p50: secs_f64(spot.replacement_latency_p50),
        replacement_latency_seconds_p95: secs_f64(spot.replacement_latency_p95),
        replacements_not_running: spot.replacements_not_running,
        overlap_cost_usd: usd_f64(spot.overlap_cost),
        spot_node_hours: round(spot.spot_node_millis as f64 / 3_600_000.0, 4),
        spot_share_of_node_hours: round(summary.spot_share(), 4),
        savings_vs_on_demand_usd: usd_f64(spot.savings_vs_on_demand),
        price_changes: spot.price_changes,
        outage_launch_failures: spot.outage_launch_failures,
        trace_rows_skipped: spot.trace_rows_skipped,
    }
}

#[derive(Serialize)]
struct ChurnJson<'a> {
    evictions: u64,
    evictions_by_reason: BTreeMap<&'a str, u64>,
    nodeclaims_launched_by_reason: BTreeMap<&'a str, u64>,
    /// The sum of `nodeclaims_terminated_by_reason`.
    nodeclaims_terminated: u64,
    nodeclaims_terminated_by_reason: BTreeMap<&'a str, u64>,
    pod_restarts: BTreeMap<&'a str, u64>,
    pdb_blocked_evictions: u64,
    forced_pod_deletions: u64,
    bare_pods_lost: u64,
    disruption_commands_by_method: BTreeMap<&'a str, u64>,
    disruption_commands_failed: u64,
    consolidation_savings_usd_per_hour: f64,
    consolidation_savings_usd: f64,
    consolidation_evictions: u64,
    consolidation_savings_usd_per_eviction: Option<f64>,
}

fn counts(map: &BTreeMap<String, u64>) -> BTreeMap<&str, u64> {
    map.iter().map(|(k, v)| (k.as_str(), *v)).collect()
}

fn churn_json(churn: &Churn) -> ChurnJson<'_> {
    let evictions = churn.consolidation_evictions();
    let saved = usd_f64(churn.consolidation_savings);
    ChurnJson {
        evictions: churn.evictions(),
        evictions_by_reason: counts(&churn.evictions_by_reason),
        nodeclaims_launched_by_reason: counts(&churn.nodeclaims_launched_by_reason),
        nodeclaims_terminated: churn.nodeclaims_terminated_by_reason.values().sum(),
        nodeclaims_terminated_by_reason: counts(&churn.nodeclaims_terminated_by_reason),
        pod_restarts: counts(&churn.pod_restarts),
        pdb_blocked_evictions: churn.pdb_blocked_evictions,
        forced_pod_deletions: churn.forced_pod_deletions,
        bare_pods_lost: churn.bare_pods_lost,
        disruption_commands_by_method: counts(&churn.commands_by_method),
        disruption_commands_failed: churn.commands_failed,
        consolidation_savings_usd_per_hour: usd_f64(MicroUsd(
            churn.consolidation_savings_per_hour.micros(),
        )),
        consolidation_savings_usd: saved,
        consolidation_evictions: evictions,
        consolidation_savings_usd_per_eviction: (evictions > 0)
            .then(|| round(saved / evictions as f64, 6)),
    }
}

#[derive(Serialize)]
struct ReasonJson<'a> {
    reason: &'a str,
    pods: usize,
    example: &'a str,
}

/// Writes `summary.json`; `pricing` names the snapshot the run used.
pub fn write_summary_json(
    scenario: &str,
    pricing: &SnapshotIdentity,
    run: &RunOutput,
    out: &mut impl Write,
) -> io::Result<()> {
    let s = &run.summary;
    let json = SummaryJson {
        scenario,
        variant: &s.variant,
        pricing,
        duration_s: round(s.duration.as_millis() as f64 / 1000.0, 3),
        total_cost_usd: usd_f64(s.total_cost),
        cost_by_capacity_type: s
            .cost_by_capacity_type
            .iter()
            .map(|(ct, cost)| (ct.label(), usd_f64(*cost)))
            .collect(),
        cost_by_nodepool: s
            .cost_by_nodepool
            .iter()
            .map(|(pool, cost)| (pool.as_str(), usd_f64(*cost)))
            .collect(),
        cost_lower_bound_usd: usd_f64(s.cost_lower_bound),
        cost_efficiency: s.cost_efficiency.map(|e| round(e, 6)),
        node_hours: round(s.node_hours(), 4),
        peak_nodes: s.peak_nodes,
        nodeclaims_launched: s.nodeclaims_launched,
        launch_failures: s.launch_failures,
        jobs_failed: s.jobs_failed,
        cpu_allocation: round(s.cpu_allocation, 4),
        memory_allocation: round(s.memory_allocation, 4),
        pods_created: s.pods_created,
        pods_scheduled: s.pods_scheduled,
        pods_unschedulable: s.pods_unschedulable,
        pending_seconds_p50: secs_f64(s.pending_p50),
        pending_seconds_p95: secs_f64(s.pending_p95),
        pending_seconds_max: secs_f64(s.pending_max),
        unschedulable_reasons: s
            .unschedulable_reasons
            .iter()
            .map(|r| ReasonJson {
                reason: &r.reason,
                pods: r.pods,
                example: &r.example,
            })
            .collect(),
        events: s.events,
        churn: churn_json(&s.churn),
        spot: spot_json(s),
        trace_rows_skipped: s.trace_rows_skipped,
        steps_missing_target: s.steps_missing_target(),
    };
    serde_json::to_writer_pretty(&mut *out, &json).map_err(io::Error::other)?;
    writeln!(out)
}

/// The `summary.json` document as a JSON value, keys in file order (for
/// `-o json|yaml`).
pub fn summary_value(
    scenario: &str,
    pricing: &SnapshotIdentity,
    run: &RunOutput,
) -> io::Result<serde_json::Value> {
    let mut text = Vec::new();
    write_summary_json(scenario, pricing, run, &mut text)?;
    serde_json::from_slice(&text).map_err(io::Error::other)
}

/// Writes `nodeclaims.csv`.
pub fn write_nodeclaims_csv(run: &RunOutput, out: &mut impl Write) -> io::Result<()> {
    let mut csv = csv::Writer::from_writer(out);
    csv.write_record([
        "name",
        "nodepool",
        "instance_type",
        "capacity_type",
        "zone",
        "price_usd_per_hour",
        "launched_at_s",
        "ready_at_s",
        "deleted_at_s",
        "reason_deleted",
        "cost_usd",
        "reason_launched",
    ])
    .map_err(io::Error::other)?;
    for claim in &run.nodeclaims {
        csv.write_record([
            claim.name.as_str(),
            &claim.nodepool,
            &claim.instance_type,
            claim.capacity_type.label(),
            &claim.zone,
            &usd(MicroUsd(claim.price.micros())),
            &time_s(claim.launched_at),
            &opt_time_s(claim.ready_at),
            &opt_time_s(claim.deleted_at),
            &claim.reason_deleted,
            &usd(claim.cost),
            &claim.reason_launched,
        ])
        .map_err(io::Error::other)?;
    }
    csv.flush()
}

/// Writes `events.csv` from a run that kept its events.
pub fn write_events_csv(run: &RunOutput, out: &mut impl Write) -> io::Result<()> {
    let mut file = EventsCsv::new(out)?;
    for event in &run.events {
        file.write(event)?;
    }
    file.finish()?.flush()
}

/// Writes `timeseries.csv`: one row per simulated minute.
pub fn write_timeseries_csv(run: &RunOutput, out: &mut impl Write) -> io::Result<()> {
    let mut csv = csv::Writer::from_writer(out);
    csv.write_record([
        "time_s",
        "nodes",
        "nodes_ready",
        "cost_usd_per_hour",
        "cpu_requested",
        "cpu_allocatable",
        "memory_requested_gib",
        "memory_allocatable_gib",
        "pending_pods",
        "lower_bound_usd_per_hour",
    ])
    .map_err(io::Error::other)?;
    let cores = |m: i64| format!("{}.{:03}", m / 1000, m % 1000);
    let gib = |b: i64| format!("{:.3}", b as f64 / (1u64 << 30) as f64);
    for s in &run.timeseries {
        csv.write_record([
            time_s(s.time),
            s.nodes.to_string(),
            s.nodes_ready.to_string(),
            usd(MicroUsd(s.hourly_rate.micros())),
            cores(s.cpu_requested_millis),
            cores(s.cpu_allocatable_millis),
            gib(s.memory_requested_bytes),
            gib(s.memory_allocatable_bytes),
            s.pending_pods.to_string(),
            usd(MicroUsd(s.lower_bound_rate.micros())),
        ])
        .map_err(io::Error::other)?;
    }
    csv.flush()
}

/// Writes `disruption.csv`: per node, the last published reason the
/// disruption controller did not disrupt it (or dropped its command), with
/// the time.
pub fn write_disruption_csv(run: &RunOutput, out: &mut impl Write) -> io::Result<()> {
    let mut csv = csv::Writer::from_writer(out);
    csv.write_record(["node", "time_s", "reason"])
        .map_err(io::Error::other)?;
    for note in &run.disruption {
        csv.write_record([note.node.as_str(), &time_s(note.time), &note.reason])
            .map_err(io::Error::other)?;
    }
    csv.flush()
}

/// Names of the files a Cluster Autoscaler variant writes.
pub const CA_FILES: [&str; 5] = [
    "summary.json",
    "nodes.csv",
    "events.csv",
    "timeseries.csv",
    "scaledown.csv",
];

/// Writes `scaledown.csv`: a row each time a node's unremovable reason
/// (as Cluster Autoscaler names it) changes.
pub fn write_scaledown_csv(run: &RunOutput, out: &mut impl Write) -> io::Result<()> {
    let mut csv = csv::Writer::from_writer(out);
    csv.write_record(["time_s", "node", "reason"])
        .map_err(io::Error::other)?;
    for row in run.scale_down.iter().flatten() {
        csv.write_record([time_s(row.time).as_str(), &row.node, &row.reason])
            .map_err(io::Error::other)?;
    }
    csv.flush()
}

/// Writes every file of one variant into `dir` (which must exist).
pub fn write_variant_files(
    scenario: &str,
    pricing: &SnapshotIdentity,
    run: &RunOutput,
    dir: &std::path::Path,
) -> io::Result<()> {
    let mut f = io::BufWriter::new(std::fs::File::create(dir.join(EVENTS_FILE))?);
    write_events_csv(run, &mut f)?;
    f.flush()?;
    write_variant_files_but_events(scenario, pricing, run, dir)
}

/// Writes the files of one variant into `dir` (which must exist) except
/// `events.csv`, which was written while the run went on (see
/// [`EventsCsv`]).
pub fn write_variant_files_but_events(
    scenario: &str,
    pricing: &SnapshotIdentity,
    run: &RunOutput,
    dir: &std::path::Path,
) -> io::Result<()> {
    let names = if run.scale_down.is_some() {
        CA_FILES
    } else {
        FILES
    };
    type Writer<'w> = dyn FnOnce(&mut io::BufWriter<std::fs::File>) -> io::Result<()> + 'w;
    let files: [(&str, Box<Writer>); 4] = [
        (
            names[0],
            Box::new(|f| write_summary_json(scenario, pricing, run, f)),
        ),
        (names[1], Box::new(|f| write_nodeclaims_csv(run, f))),
        (names[3], Box::new(|f| write_timeseries_csv(run, f))),
        (
            names[4],
            Box::new(|f| {
                if run.scale_down.is_some() {
                    write_scaledown_csv(run, f)
                } else {
                    write_disruption_csv(run, f)
                }
            }),
        ),
    ];
    debug_assert_eq!(names[2], EVENTS_FILE);
    for (name, write) in files {
        let path = dir.join(name);
        std::fs::File::create(&path)
            .map(io::BufWriter::new)
            .and_then(|mut f| {
                write(&mut f)?;
                f.flush()
            })
            .map_err(|e| with_path(&path, e))?;
    }
    Ok(())
}

/// `error` with `path` in front, keeping its kind (a full disk, a closed
/// pipe stay recognisable).
pub fn with_path(path: &std::path::Path, error: io::Error) -> io::Error {
    io::Error::new(error.kind(), format!("{}: {error}", path.display()))
}

/// The spot rows of the terminal summary: the spot share and savings when
/// any variant ran spot nodes, the interruption measures when any variant
/// was interrupted.
fn spot_rows(runs: &[&RunSummary]) -> Vec<Vec<String>> {
    let row = |label: &str, cell: &dyn Fn(&RunSummary) -> String| -> Vec<String> {
        let mut cells = vec![label.to_string()];
        cells.extend(runs.iter().map(|r| cell(r)));
        cells
    };
    let mut rows = Vec::new();
    if runs.iter().any(|r| r.spot.spot_node_millis > 0) {
        rows.push(row("spot share of node-hours", &|r| pct(r.spot_share())));
        rows.push(row("savings vs on-demand", &|r| {
            format!("${}", usd(r.spot.savings_vs_on_demand))
        }));
    }
    if !runs.iter().any(|r| r.spot.interruptions() > 0) {
        return rows;
    }
    let mut sources: Vec<&str> = runs
        .iter()
        .flat_map(|r| r.spot.interruptions_by_source.keys().map(String::as_str))
        .collect();
    sources.sort_unstable();
    sources.dedup();
    rows.push(row("interruptions", &|r| {
        r.spot.interruptions().to_string()
    }));
    for source in &sources {
        rows.push(row(&format!("  {source}"), &|r| {
            count_of(&r.spot.interruptions_by_source, source)
        }));
    }
    rows.extend([
        row("pods disrupted", &|r| r.spot.pods_disrupted.to_string()),
        row("  killed at reclaim", &|r| {
            r.spot.pods_killed_at_reclaim.to_string()
        }),
        row("pod-s without replica", &|r| {
            format!(
                "{:.1}",
                r.spot.pod_millis_without_replica_total() as f64 / 1000.0
            )
        }),
        row("replacement p50", &|r| {
            secs_text(r.spot.replacement_latency_p50)
        }),
        row("replacement p95", &|r| {
            secs_text(r.spot.replacement_latency_p95)
        }),
        row("overlap cost", &|r| {
            format!("${}", usd(r.spot.overlap_cost))
        }),
    ]);
    rows
}

fn count_of(map: &BTreeMap<String, u64>, key: &str) -> String {
    map.get(key).copied().unwrap_or_default().to_string()
}

fn pct(ratio: f64) -> String {
    format!("{:.1}%", ratio * 100.0)
}

fn secs_text(d: Option<SimDuration>) -> String {
    d.map_or_else(|| "-".to_string(), |d| format!("{:.1}s", d.as_secs_f64()))
}

/// A signed difference, `+1.50` / `-0.25`, with `decimals` digits.
fn signed(value: f64, decimals: usize) -> String {
    let text = format!("{value:+.decimals$}");
    // `-0.00` reads as a change; show no change as `0`.
    if text
        .trim_start_matches(['+', '-'])
        .chars()
        .all(|c| c == '0' || c == '.')
    {
        "0".to_string()
    } else {
        text
    }
}

/// With several variants, each one's difference from the first: cost,
/// node-hours, peak nodes, evictions and pending p95 (the first column
/// shows `-`).
fn delta_rows(runs: &[&RunSummary]) -> Vec<Vec<String>> {
    let Some(first) = runs.first().filter(|_| runs.len() > 1) else {
        return Vec::new();
    };
    let row = |label: &str, cell: &dyn Fn(&RunSummary) -> String| -> Vec<String> {
        let mut cells = vec![label.to_string(), "-".to_string()];
        cells.extend(runs.iter().skip(1).map(|r| cell(r)));
        cells
    };
    let p95 = |r: &RunSummary| r.pending_p95.map(|d| d.as_secs_f64());
    vec![
        row(&format!("vs {}: cost", first.variant), &|r| {
            let (base, cost) = (usd_f64(first.total_cost), usd_f64(r.total_cost));
            let sign = if cost < base { "-" } else { "+" };
            let percent = if base > 0.0 {
                format!(" ({}%)", signed((cost - base) / base * 100.0, 1))
            } else {
                String::new()
            };
            format!("{sign}${:.2}{percent}", (cost - base).abs())
        }),
        row("  node-hours", &|r| {
            signed(r.node_hours() - first.node_hours(), 2)
        }),
        row("  peak nodes", &|r| {
            signed(r.peak_nodes as f64 - first.peak_nodes as f64, 0)
        }),
        row("  evictions", &|r| {
            signed(
                r.churn.evictions() as f64 - first.churn.evictions() as f64,
                0,
            )
        }),
        row("  pending p95", &|r| match (p95(r), p95(first)) {
            (Some(a), Some(b)) => format!("{}s", signed(a - b, 1)),
            _ => "-".to_string(),
        }),
    ]
}

/// The terminal summary: one column per variant, deltas against the first
/// variant when there are several, then why pods stayed pending.
pub fn write_summary_table(runs: &[&RunSummary], out: &mut impl Write) -> io::Result<()> {
    let mut header: Vec<(&str, Align)> = vec![("", Align::Left)];
    header.extend(runs.iter().map(|r| (r.variant.as_str(), Align::Right)));
    let row = |label: &str, cell: &dyn Fn(&RunSummary) -> String| -> Vec<String> {
        let mut cells = vec![label.to_string()];
        cells.extend(runs.iter().map(|r| cell(r)));
        cells
    };
    let mut capacity_types: Vec<crate::cloud::CapacityType> = runs
        .iter()
        .flat_map(|r| r.cost_by_capacity_type.keys().copied())
        .collect();
    capacity_types.sort();
    capacity_types.dedup();
    let mut rows = vec![row("total cost", &|r| format!("${}", usd(r.total_cost)))];
    for ct in capacity_types {
        rows.push(row(&format!("  {ct}"), &move |r| {
            format!(
                "${}",
                usd(r
                    .cost_by_capacity_type
                    .get(&ct)
                    .copied()
                    .unwrap_or_default())
            )
        }));
    }
    rows.extend([
        row("cost lower bound", &|r| {
            format!("${}", usd(r.cost_lower_bound))
        }),
        row("cost efficiency", &|r| {
            r.cost_efficiency.map_or("-".to_string(), pct)
        }),
        row("node-hours", &|r| format!("{:.2}", r.node_hours())),
        row("peak nodes", &|r| r.peak_nodes.to_string()),
        row("nodeclaims launched", &|r| {
            r.nodeclaims_launched.to_string()
        }),
        row("launch failures", &|r| r.launch_failures.to_string()),
        row("cpu allocation", &|r| pct(r.cpu_allocation)),
        row("memory allocation", &|r| pct(r.memory_allocation)),
        row("pods scheduled", &|r| r.pods_scheduled.to_string()),
        row("pending p50", &|r| secs_text(r.pending_p50)),
        row("pending p95", &|r| secs_text(r.pending_p95)),
        row("pending max", &|r| secs_text(r.pending_max)),
        row("pods never scheduled", &|r| {
            r.pods_unschedulable.to_string()
        }),
    ]);
    let mut reasons: Vec<&str> = runs
        .iter()
        .flat_map(|r| {
            r.churn
                .evictions_by_reason
                .keys()
                .chain(r.churn.nodeclaims_terminated_by_reason.keys())
                .map(String::as_str)
        })
        .collect();
    reasons.sort_unstable();
    reasons.dedup();
    rows.push(row("evictions", &|r| r.churn.evictions().to_string()));
    for reason in &reasons {
        rows.push(row(&format!("  {reason}"), &|r| {
            count_of(&r.churn.evictions_by_reason, reason)
        }));
    }
    rows.push(row("nodeclaims terminated", &|r| {
        r.churn
            .nodeclaims_terminated_by_reason
            .values()
            .sum::<u64>()
            .to_string()
    }));
    for reason in &reasons {
        rows.push(row(&format!("  {reason}"), &|r| {
            count_of(&r.churn.nodeclaims_terminated_by_reason, reason)
        }));
    }
    rows.extend([
        row("pod restarts", &|r| {
            r.churn.pod_restarts.values().sum::<u64>().to_string()
        }),
        row("pdb-blocked evictions", &|r| {
            r.churn.pdb_blocked_evictions.to_string()
        }),
        row("bare pods lost", &|r| r.churn.bare_pods_lost.to_string()),
        row("consolidation saves/h", &|r| {
            format!(
                "${}",
                usd(MicroUsd(r.churn.consolidation_savings_per_hour.micros()))
            )
        }),
        row("consolidation saved", &|r| {
            format!("${}", usd(r.churn.consolidation_savings))
        }),
        row("  per eviction caused", &|r| {
            let evictions = r.churn.consolidation_evictions();
            if evictions == 0 {
                "-".to_string()
            } else {
                format!(
                    "${:.4}",
                    usd_f64(r.churn.consolidation_savings) / evictions as f64
                )
            }
        }),
    ]);
    rows.extend(spot_rows(runs));
    rows.extend(delta_rows(runs));
    write_table(out, &header, &rows)?;
    for run in runs {
        for reason in run.unschedulable_reasons.iter().take(5) {
            writeln!(
                out,
                "{}: {} pod(s) never scheduled (e.g. {}): {}",
                run.variant, reason.pods, reason.example, reason.reason
            )?;
        }
    }
    Ok(())
}
