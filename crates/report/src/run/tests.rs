//! Tests of the run report writers: summary table, deltas, CSV and JSON files, atomic writes.

use std::collections::BTreeMap;

use super::*;
use crate::cloud::{CapacityType, Price};
use crate::sim::engine::{Churn, NodeClaimRecord, RunOutput, RunSummary, SpotSummary};
use crate::sim::time::SimTime;

fn output() -> RunOutput {
    let claim = NodeClaimRecord {
        name: "default-00001".into(),
        nodepool: "default".into(),
        instance_type: "m5.large".into(),
        capacity_type: CapacityType::OnDemand,
        zone: "us-east-1a".into(),
        price: Price::from_micros(96_000),
        launched_at: SimTime::from_millis(1_500),
        ready_at: Some(SimTime::from_millis(41_500)),
        deleted_at: None,
        reason_deleted: String::new(),
        cost: MicroUsd(96_000),
        reason_launched: "provisioning".into(),
    };
    RunOutput {
        export: None,
        summary: RunSummary {
            variant: "v".into(),
            duration: SimDuration::from_hours(1),
            total_cost: MicroUsd(96_000),
            cost_by_capacity_type: BTreeMap::from([(CapacityType::OnDemand, MicroUsd(96_000))]),
            cost_by_nodepool: BTreeMap::from([("default".to_string(), MicroUsd(96_000))]),
            node_millis: 3_600_000,
            peak_nodes: 1,
            nodeclaims_launched: 1,
            launch_failures: 0,
            jobs_failed: 0,
            cpu_allocation: 0.5,
            memory_allocation: 0.25,
            pods_created: 1,
            pods_scheduled: 1,
            pods_unschedulable: 0,
            pending_p50: Some(SimDuration::from_millis(41_500)),
            pending_p95: Some(SimDuration::from_millis(41_500)),
            pending_max: Some(SimDuration::from_millis(41_500)),
            unschedulable_reasons: Vec::new(),
            events: 0,
            churn: Churn::default(),
            spot: SpotSummary::default(),
            trace_rows_skipped: 0,
            missing_targets: Vec::new(),
            cost_lower_bound: MicroUsd(48_000),
            cost_efficiency: Some(0.5),
        },
        nodeclaims: vec![claim],
        events: Vec::new(),
        timeseries: Vec::new(),
        disruption: Vec::new(),
        scale_down: None,
    }
}

#[test]
fn money_and_time_are_exact_decimals() {
    assert_eq!(usd(MicroUsd(96_000)), "0.096000");
    assert_eq!(usd(MicroUsd(12_345_678)), "12.345678");
}

#[test]
fn nodeclaims_csv_has_the_documented_columns() {
    let mut out = Vec::new();
    write_nodeclaims_csv(&output(), &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    assert_eq!(
        text,
        "name,nodepool,instance_type,capacity_type,zone,price_usd_per_hour,launched_at_s,ready_at_s,deleted_at_s,reason_deleted,cost_usd,reason_launched\n\
         default-00001,default,m5.large,on-demand,us-east-1a,0.096000,1.500,41.500,,,0.096000,provisioning\n"
    );
}

#[test]
fn summary_json_carries_the_headline_numbers() {
    let mut out = Vec::new();
    let pricing = crate::snapshot::bundled_identity("us-east-1").unwrap();
    write_summary_json("demo", &pricing, &output(), &mut out).unwrap();
    let json: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(json["pricing"]["region"], "us-east-1");
    assert_eq!(json["pricing"]["date"], "2026-07-20");
    assert!(json["pricing"].get("file").is_none());
    assert_eq!(json["total_cost_usd"], 0.096);
    assert_eq!(json["node_hours"], 1.0);
    assert_eq!(json["cost_by_capacity_type"]["on-demand"], 0.096);
    assert_eq!(json["pending_seconds_p50"], 41.5);
    assert_eq!(json["pods_unschedulable"], 0);
    assert_eq!(json["cost_lower_bound_usd"], 0.048);
    assert_eq!(json["cost_efficiency"], 0.5);
}

/// Nothing paid: the efficiency is `null` in `summary.json` and `-` in the
/// table.
#[test]
fn efficiency_without_cost_is_null() {
    let mut run = output();
    run.summary.cost_efficiency = None;
    let mut out = Vec::new();
    let pricing = crate::snapshot::bundled_identity("us-east-1").unwrap();
    write_summary_json("demo", &pricing, &run, &mut out).unwrap();
    let json: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert!(json["cost_efficiency"].is_null());
    let mut out = Vec::new();
    write_summary_table(&[&run.summary], &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    let row = text
        .lines()
        .find(|l| l.starts_with("cost efficiency"))
        .unwrap();
    assert_eq!(row.split_whitespace().last(), Some("-"));
    assert!(text.contains("cost lower bound"));
}

/// `timeseries.csv` ends with the bound's rate at each sample.
#[test]
fn timeseries_ends_with_the_lower_bound_rate() {
    let mut run = output();
    run.timeseries = vec![crate::sim::engine::Sample {
        time: SimTime::from_millis(60_000),
        lower_bound_rate: Price::from_micros(49_740),
        ..Default::default()
    }];
    let mut out = Vec::new();
    write_timeseries_csv(&run, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    let mut lines = text.lines();
    assert!(
        lines
            .next()
            .unwrap()
            .ends_with(",pending_pods,lower_bound_usd_per_hour")
    );
    assert!(lines.next().unwrap().ends_with(",0,0.049740"));
}

/// Two variants: the second column of the delta rows is the difference
/// from the first (cost +$0.096, node-hours +1.00, peak nodes +1, pending
/// p95 +10.0 s); the first column shows `-`.
#[test]
fn several_variants_show_deltas_against_the_first() {
    let first = output().summary;
    let mut second = output().summary;
    second.variant = "ca".into();
    second.total_cost = MicroUsd(192_000);
    second.node_millis = 7_200_000;
    second.peak_nodes = 2;
    second.pending_p95 = Some(SimDuration::from_millis(51_500));
    let mut out = Vec::new();
    write_summary_table(&[&first, &second], &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    let line = |label: &str| -> Vec<String> {
        text.lines()
            .find(|l| l.trim_start().starts_with(label))
            .unwrap_or_else(|| panic!("no {label:?} row in\n{text}"))
            .split_whitespace()
            .map(str::to_string)
            .collect()
    };
    assert_eq!(line("vs v: cost")[3..], ["-", "+$0.10", "(+100.0%)"]);
    assert_eq!(line("node-hours")[1..], ["1.00", "2.00"]);
    assert_eq!(line("peak nodes")[2..], ["1", "2"]);
    let rows: Vec<&str> = text.lines().collect();
    let deltas = rows
        .iter()
        .position(|l| l.starts_with("vs v: cost"))
        .unwrap();
    let after: Vec<Vec<&str>> = rows[deltas + 1..deltas + 5]
        .iter()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(after[0], ["node-hours", "-", "+1.00"]);
    assert_eq!(after[1], ["peak", "nodes", "-", "+1"]);
    assert_eq!(after[2], ["evictions", "-", "0"]);
    assert_eq!(after[3], ["pending", "p95", "-", "+10.0s"]);
}

/// A single variant has no delta rows.
#[test]
fn one_variant_has_no_deltas() {
    let mut out = Vec::new();
    write_summary_table(&[&output().summary], &mut out).unwrap();
    assert!(!String::from_utf8(out).unwrap().contains("vs "));
}

/// `scaledown.csv` lists CA's reasons with the time in seconds.
#[test]
fn scaledown_csv_lists_reasons() {
    let mut run = output();
    run.scale_down = Some(vec![crate::sim::engine::UnremovableRecord {
        time: SimTime::from_millis(20_000),
        node: "general-00001".into(),
        reason: "NotUnderutilized".into(),
    }]);
    let mut out = Vec::new();
    write_scaledown_csv(&run, &mut out).unwrap();
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "time_s,node,reason\n20.000,general-00001,NotUnderutilized\n"
    );
}

/// What a run's files read back as is what was written: the summary, and
/// the chart data drawn right after the run (memory at a GiB tie, 64 MiB,
/// which `{:.3}` rounds to even).
#[test]
fn files_read_back_as_the_run_they_were_written_from() {
    let mut run = output();
    run.timeseries = (0..3)
        .map(|minute| crate::sim::engine::Sample {
            time: SimTime::from_millis(minute * 60_000),
            nodes: 1,
            nodes_ready: 1,
            hourly_rate: Price::from_micros(96_000),
            cpu_requested_millis: 1_250,
            cpu_allocatable_millis: 1_930,
            memory_requested_bytes: 64 << 20,
            memory_allocatable_bytes: 7_000_000_000 + minute as i64,
            pending_pods: 2,
            lower_bound_rate: Price::from_micros(49_740),
        })
        .collect();
    run.events = vec![crate::sim::engine::EventRecord {
        time: SimTime::from_millis(90_000),
        kind: crate::sim::engine::EventType::Normal,
        reason: "Evicted".into(),
        object: "pod/default/web-1".into(),
        message: "Evicted pod from node default-00001: underutilized".into(),
    }];
    let pricing = crate::snapshot::bundled_identity("us-east-1").unwrap();
    let summary = Summary::of_run("demo", &pricing, &run.summary);
    let dir = tempfile::tempdir().unwrap();
    write_variant_files(&summary, &run, dir.path()).unwrap();
    assert_eq!(
        Summary::read(&dir.path().join(SUMMARY_FILE)).unwrap(),
        summary
    );

    let mut events = EventsCsv::new(Vec::new()).unwrap();
    for event in &run.events {
        events.write(event).unwrap();
    }
    let drawn = crate::chart::VariantSeries::of_run(&summary, &run, events.take_evictions());
    let read = crate::chart::VariantSeries::read_dir(dir.path()).unwrap();
    assert_eq!(drawn, read);
    assert_eq!(drawn.evictions[0].reason, "underutilized");
    assert_eq!(read.samples[0].memory_requested_gib.to_string(), "0.062");
}
