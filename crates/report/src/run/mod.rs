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
//! Each file is written from its definition in [`crate::schema`]: the
//! [`Summary`] and one row type per CSV file.

mod events;

pub use events::EventsCsv;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::io::{self, Write};

use super::table::{Align, write_table};
use crate::schema::{
    DISRUPTION_FILE, DisruptionRow, EVENTS_FILE, EventRow, NODECLAIMS_FILE, NODES_FILE,
    NodeClaimRow, SCALEDOWN_FILE, SUMMARY_FILE, ScaleDownRow, Summary, TIMESERIES_FILE,
    TimeseriesRow, Usd, write_rows,
};
use crate::sim::engine::{RunOutput, RunSummary};
use crate::sim::ledger::MicroUsd;
use crate::sim::time::SimDuration;
use crate::snapshot::SnapshotIdentity;

/// Names of the files written per variant.
pub const FILES: [&str; 5] = [
    SUMMARY_FILE,
    NODECLAIMS_FILE,
    EVENTS_FILE,
    TIMESERIES_FILE,
    DISRUPTION_FILE,
];

/// `12.345678`: micro-USD as dollars, exact.
pub fn usd(amount: MicroUsd) -> String {
    Usd::from(amount).to_string()
}

fn usd_f64(amount: MicroUsd) -> f64 {
    Usd::from(amount).dollars()
}

/// Writes `summary.json`; `pricing` names the snapshot the run used.
pub fn write_summary_json(
    scenario: &str,
    pricing: &SnapshotIdentity,
    run: &RunOutput,
    out: &mut impl Write,
) -> io::Result<()> {
    Summary::of_run(scenario, pricing, &run.summary).write(out)
}

/// The `summary.json` document as a JSON value, keys in file order (for
/// `-o json|yaml`).
pub fn summary_value(
    scenario: &str,
    pricing: &SnapshotIdentity,
    run: &RunOutput,
) -> serde_json::Value {
    Summary::of_run(scenario, pricing, &run.summary).to_value()
}

/// Writes `nodeclaims.csv`.
pub fn write_nodeclaims_csv(run: &RunOutput, out: &mut impl Write) -> io::Result<()> {
    write_rows(out, run.nodeclaims.iter().map(NodeClaimRow::from))
}

/// Writes `events.csv` from a run that kept its events.
pub fn write_events_csv(run: &RunOutput, out: &mut impl Write) -> io::Result<()> {
    write_rows(out, run.events.iter().map(EventRow::from))
}

/// Writes `timeseries.csv`: one row per simulated minute.
pub fn write_timeseries_csv(run: &RunOutput, out: &mut impl Write) -> io::Result<()> {
    write_rows(out, run.timeseries.iter().map(TimeseriesRow::from))
}

/// Writes `disruption.csv`: per node, the last published reason the
/// disruption controller did not disrupt it (or dropped its command), with
/// the time.
pub fn write_disruption_csv(run: &RunOutput, out: &mut impl Write) -> io::Result<()> {
    write_rows(out, run.disruption.iter().map(DisruptionRow::from))
}

/// Names of the files a Cluster Autoscaler variant writes.
pub const CA_FILES: [&str; 5] = [
    SUMMARY_FILE,
    NODES_FILE,
    EVENTS_FILE,
    TIMESERIES_FILE,
    SCALEDOWN_FILE,
];

/// Writes `scaledown.csv`: a row each time a node's unremovable reason
/// (as Cluster Autoscaler names it) changes.
pub fn write_scaledown_csv(run: &RunOutput, out: &mut impl Write) -> io::Result<()> {
    write_rows(out, run.scale_down.iter().flatten().map(ScaleDownRow::from))
}

/// Writes every file of one variant into `dir` (which must exist).
pub fn write_variant_files(
    summary: &Summary,
    run: &RunOutput,
    dir: &std::path::Path,
) -> io::Result<()> {
    let mut f = io::BufWriter::new(std::fs::File::create(dir.join(EVENTS_FILE))?);
    write_events_csv(run, &mut f)?;
    f.flush()?;
    write_variant_files_but_events(summary, run, dir)
}

/// Writes the files of one variant into `dir` (which must exist) except
/// `events.csv`, which was written while the run went on (see
/// [`EventsCsv`]); `summary` is the run's (see [`Summary::of_run`]).
pub fn write_variant_files_but_events(
    summary: &Summary,
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
        (names[0], Box::new(|f| summary.write(f))),
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
