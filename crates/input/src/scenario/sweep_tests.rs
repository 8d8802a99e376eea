//! Sweep files: the schema, the enumeration order and ids, shards, and
//! `vary` reaching the NodePools a run is prepared with.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::*;
use crate::scenario::{BundledRegions, prepare};

fn scenarios_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios")
}

/// A sweep file written in a folder beside the bundled scenarios' (so its
/// relative paths reach them).
fn sweep(text: &str) -> Result<SweepFile, ScenarioError> {
    SweepFile::parse(text, &scenarios_dir().join("sweeps/test.yaml"))
}

const EXAMPLE: &str = "\
sweep: consolidate-after
scenario: ../consolidation-day.yaml
seeds: {from: 1, to: 3}
nodePools:
  - ../nodepools/shop-consolidating.yaml
  - ../nodepools/shop-never-consolidate.yaml
vary:
  - field: spec.disruption.consolidateAfter
    values: [30s, 5m, 1h]
  - field: spec.disruption.budgets[0].nodes
    values: [\"10%\", \"1\"]
";

fn plan_of(file: &SweepFile) -> SweepPlan {
    let scenario = Scenario::load_without_variants(&file.scenario, &BundledRegions).unwrap();
    file.plan(&scenario).unwrap()
}

#[test]
fn the_example_reads_with_its_seeds_files_and_values() {
    let file = sweep(EXAMPLE).unwrap();
    assert_eq!(file.name, "consolidate-after");
    assert_eq!(file.seeds, [1, 2, 3]);
    assert!(file.scenario.ends_with("sweeps/../consolidation-day.yaml"));
    let written: Vec<&str> = file.node_pools.iter().map(|p| p.written.as_str()).collect();
    assert_eq!(
        written,
        [
            "../nodepools/shop-consolidating.yaml",
            "../nodepools/shop-never-consolidate.yaml"
        ]
    );
    assert_eq!(file.vary.len(), 2);
    let texts: Vec<&str> = file.vary[1]
        .values
        .iter()
        .map(|v| v.text.as_str())
        .collect();
    assert_eq!(texts, ["10%", "1"]);
    let listed = sweep(&EXAMPLE.replace("{from: 1, to: 3}", "[9, 2, 5]")).unwrap();
    assert_eq!(listed.seeds, [9, 2, 5], "a list keeps its order");
}

/// The documented order: bases in file order, then the vary product with
/// the last entry changing fastest; runs configuration-major.
#[test]
fn configurations_and_runs_are_enumerated_in_the_documented_order() {
    let plan = plan_of(&sweep(EXAMPLE).unwrap());
    let labels: Vec<String> = plan
        .configurations
        .iter()
        .map(|c| format!("{} {}", c.id, c.label))
        .collect();
    let mut expected = Vec::new();
    for base in ["shop-consolidating", "shop-never-consolidate"] {
        for after in ["30s", "5m", "1h"] {
            for nodes in ["10%", "1"] {
                expected.push(format!(
                    "c{:02} {base} consolidateAfter={after} nodes={nodes}",
                    expected.len() + 1
                ));
            }
        }
    }
    assert_eq!(labels, expected);
    assert_eq!(plan.run_count(), 12 * 3);
    let ids: Vec<String> = plan.runs().take(4).map(|r| plan.run_id(r)).collect();
    assert_eq!(ids, ["c01-s1", "c01-s2", "c01-s3", "c02-s1"]);
    let last = plan.run(35);
    assert_eq!((last.configuration, last.seed), (11, 3));
    assert_eq!(plan.run_id(last), "c12-s3");
    // The same file gives the same plan.
    assert_eq!(plan, plan_of(&sweep(EXAMPLE).unwrap()));
    let settings = &plan.configurations[3].settings;
    assert_eq!(
        settings,
        &[
            Setting {
                field: "spec.disruption.consolidateAfter".into(),
                value: "5m".into()
            },
            Setting {
                field: "spec.disruption.budgets[0].nodes".into(),
                value: "1".into()
            },
        ]
    );
}

#[test]
fn ids_take_as_many_digits_as_the_count_needs() {
    let values: Vec<String> = (1..=120).map(|i| format!("{i}s")).collect();
    let text = format!(
        "sweep: wide\nscenario: ../quickstart.yaml\nseeds: [1]\nvary:\n  - field: spec.disruption.consolidateAfter\n    values: [{}]\n",
        values.join(", ")
    );
    let plan = plan_of(&sweep(&text).unwrap());
    // Two scenario variants × 120 values.
    assert_eq!(plan.configurations.len(), 240);
    assert_eq!(plan.configurations[0].id, "c001");
    assert_eq!(plan.configurations[239].id, "c240");
    assert_eq!(plan.configurations[0].base, "on-demand");
    assert_eq!(plan.configurations[120].base, "spot-first");
}

#[test]
fn shards_are_disjoint_and_together_hold_every_run() {
    let plan = plan_of(&sweep(EXAMPLE).unwrap());
    for count in [1, 2, 5, 36, 40] {
        let mut seen = vec![0; plan.run_count()];
        for index in 0..count {
            let shard = Shard::new(index, count).unwrap();
            for run in plan.runs().filter(|r| shard.contains(r.index)) {
                seen[run.index] += 1;
            }
        }
        assert!(seen.iter().all(|n| *n == 1), "{count} shards: {seen:?}");
    }
    assert_eq!(Shard::parse("2/8"), Ok(Shard { index: 2, count: 8 }));
    for bad in ["8/8", "1/0", "a/2", "1", "-1/2", "1/2/3", ""] {
        assert!(Shard::parse(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn vary_edits_every_nodepool_the_run_reads() {
    let text = "\
sweep: t
scenario: ../consolidation-day.yaml
seeds: [1]
nodePools: ../nodepools/shop-consolidating.yaml
vary:
  - field: spec.disruption.consolidateAfter
    values: [5m]
  - field: spec.disruption.budgets[0].nodes
    values: [\"1\"]
";
    let file = sweep(text).unwrap();
    let plan = plan_of(&file);
    let mut scenario = Scenario::load_without_variants(&file.scenario, &BundledRegions).unwrap();
    scenario.variants = vec![plan.configurations[0].variant.clone()];
    let prepared = prepare(&scenario, None).unwrap();
    let pool = &prepared.runs[0].nodepools[0].pool;
    assert_eq!(
        pool.disruption.consolidate_after,
        Some(Duration::from_secs(300))
    );
    assert_eq!(pool.disruption.budgets.len(), 1);
    assert_eq!(
        pool.disruption.budgets[0].nodes,
        crate::nodepool::BudgetNodes::Count(1)
    );
}

#[test]
fn a_value_karpenter_refuses_fails_the_prepare_naming_the_field() {
    let text = "\
sweep: t
scenario: ../consolidation-day.yaml
seeds: [1]
nodePools: ../nodepools/shop-consolidating.yaml
vary:
  - field: spec.disruption.consolidateAfter
    values: [soon]
";
    let file = sweep(text).unwrap();
    let plan = plan_of(&file);
    let mut scenario = Scenario::load_without_variants(&file.scenario, &BundledRegions).unwrap();
    scenario.variants = vec![plan.configurations[0].variant.clone()];
    let error = prepare(&scenario, None).unwrap_err().to_string();
    assert!(error.contains("shop-consolidating.yaml:"), "{error}");
    assert!(
        error.contains("spec.disruption.consolidateAfter"),
        "{error}"
    );
}

#[test]
fn vary_over_a_cluster_autoscaler_variant_is_refused() {
    let file = sweep(
        "sweep: t\nscenario: ../karpenter-vs-ca.yaml\nseeds: [1]\nvary:\n  - field: spec.limits.cpu\n    values: [\"100\"]\n",
    )
    .unwrap();
    let scenario = Scenario::load(&file.scenario, &BundledRegions).unwrap();
    let error = file.plan(&scenario).unwrap_err().to_string();
    assert!(error.contains("runs the Cluster Autoscaler"), "{error}");
}

#[test]
fn too_many_runs_are_refused_with_the_limit() {
    let file =
        sweep("sweep: t\nscenario: ../quickstart.yaml\nseeds: {from: 1, to: 50001}\n").unwrap();
    let scenario = Scenario::load(&file.scenario, &BundledRegions).unwrap();
    let error = file.plan(&scenario).unwrap_err().to_string();
    assert!(
        error.contains("2 configurations × 50001 seeds = 100002 runs is over the limit of 100000"),
        "{error}"
    );
}

/// Every schema error names the file, the line and column, and the field.
#[test]
fn bad_sweep_files_are_refused_with_file_line_and_field() {
    let cases: [(&str, &str); 12] = [
        (
            "sweep: t\nscenario: ../quickstart.yaml\nseeds: [1]\nseed: 2\n",
            "test.yaml:4:1: unknown key \"seed\" (valid keys: sweep, scenario, seeds, nodePools, vary)",
        ),
        (
            "scenario: ../quickstart.yaml\nseeds: [1]\n",
            "test.yaml:1:1: missing required key \"sweep\"",
        ),
        (
            "sweep: t\nscenario: ../missing.yaml\nseeds: [1]\n",
            "test.yaml:2:11: scenario: file \"../missing.yaml\" not found",
        ),
        (
            "sweep: t\nscenario: ../quickstart.yaml\nseeds: {from: 5, to: 2}\n",
            "test.yaml:3:22: seeds.to: to (2) must not be less than from (5)",
        ),
        (
            "sweep: t\nscenario: ../quickstart.yaml\nseeds: {from: 1, upto: 2}\n",
            "test.yaml:3:18: seeds: unknown key \"upto\"",
        ),
        (
            "sweep: t\nscenario: ../quickstart.yaml\nseeds: [1, 2, 1]\n",
            "test.yaml:3:15: seeds[2]: \"1\" is listed twice",
        ),
        (
            "sweep: t\nscenario: ../quickstart.yaml\nseeds: [-1]\n",
            "test.yaml:3:9: seeds[0]: must not be negative",
        ),
        (
            "sweep: t\nscenario: ../quickstart.yaml\nseeds: [1]\nvary:\n  - field: metadata.name\n    values: [a]\n",
            "test.yaml:5:12: vary[0].field: \"metadata.name\" is not under spec",
        ),
        (
            "sweep: t\nscenario: ../quickstart.yaml\nseeds: [1]\nvary:\n  - field: spec.limits[cpu]\n    values: [a]\n",
            "test.yaml:5:12: vary[0].field: invalid field path \"spec.limits[cpu]\"",
        ),
        (
            "sweep: t\nscenario: ../quickstart.yaml\nseeds: [1]\nvary:\n  - field: spec.limits.cpu\n    values: []\n",
            "test.yaml:6:13: vary[0].values: needs at least one entry",
        ),
        (
            "sweep: t\nscenario: ../quickstart.yaml\nseeds: [1]\nvary:\n  - field: spec.limits.cpu\n    values: [\"1\"]\n  - field: spec.limits.cpu\n    values: [\"2\"]\n",
            "test.yaml:7:12: vary[1].field: \"spec.limits.cpu\" is already varied by vary[0]",
        ),
        (
            "sweep: t\nscenario: ../quickstart.yaml\nseeds: [1]\nvary:\n  - field: spec.limits.cpu\n    value: [\"1\"]\n",
            "test.yaml:6:5: vary[0]: unknown key \"value\" (valid keys: field, values)",
        ),
    ];
    for (text, expected) in cases {
        let error = sweep(text).unwrap_err().to_string();
        assert!(
            error.contains(expected),
            "{text}\n  gave: {error}\n  want: {expected}"
        );
    }
    assert!(sweep("").unwrap_err().to_string().ends_with(
        "test.yaml:1:1: the file is empty; a sweep needs at least sweep, scenario and seeds"
    ));
}
