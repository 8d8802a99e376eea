//! Statistics per configuration, the Pareto frontier, and the checks of a
//! merge.

use super::*;
use crate::schema::Decimal;
use crate::schema::sweep::RunIdentity;

fn meta(configurations: usize, seeds: &[u64]) -> SweepMeta {
    SweepMeta {
        sweep: "s".to_string(),
        scenario: "quickstart".to_string(),
        duration_s: 3600.0,
        pricing: None,
        seeds: seeds.to_vec(),
        vary: vec!["spec.disruption.consolidateAfter".to_string()],
        runs_total: (configurations * seeds.len()) as u64,
        configurations: (1..=configurations)
            .map(|i| ConfigurationMeta {
                id: format!("c{i:02}"),
                base: "pools".to_string(),
                node_pools: Some("pools.yaml".to_string()),
                settings: vec![SettingEntry {
                    field: "spec.disruption.consolidateAfter".to_string(),
                    value: format!("{i}m"),
                }],
                label: format!("pools consolidateAfter={i}m"),
            })
            .collect(),
    }
}

/// Run `index` of `meta` with a cost and evictions.
fn row(meta: &SweepMeta, index: usize, cost: f64, evictions: u64) -> SweepRunRow {
    let seeds = meta.seeds.len();
    let configuration = &meta.configurations[index / seeds];
    let seed = meta.seeds[index % seeds];
    let identity = RunIdentity {
        run: index as u64,
        id: format!("{}-s{seed}", configuration.id),
        configuration: configuration.id.clone(),
        label: configuration.label.clone(),
        seed,
    };
    let mut row = SweepRunRow::failed(identity, String::new());
    row.status = crate::schema::sweep::STATUS_OK.to_string();
    row.total_cost_usd = Some(Decimal(cost));
    row.evictions = Some(evictions);
    row.node_hours = Some(Decimal(cost * 2.0));
    row
}

#[test]
fn each_configuration_gets_the_statistics_of_its_own_runs() {
    let meta = meta(2, &[1, 2, 3]);
    let rows = vec![
        row(&meta, 0, 1.0, 4),
        row(&meta, 1, 2.0, 6),
        row(&meta, 2, 3.0, 8),
        row(&meta, 3, 10.0, 0),
        SweepRunRow::failed(
            RunIdentity {
                run: 4,
                id: "c02-s2".to_string(),
                configuration: "c02".to_string(),
                label: String::new(),
                seed: 2,
            },
            "bad value".to_string(),
        ),
        row(&meta, 5, 12.0, 0),
    ];
    let document = meta.document(None, &rows);
    let first = &document.configurations[0];
    assert_eq!((first.runs, first.failed), (3, 0));
    let cost = first.metrics.cost_usd.as_ref().unwrap();
    // 1, 2, 3: mean 2, sd 1, half-width t(0.975, 2) · 1 / √3 = 2.484138.
    assert_eq!((cost.n, cost.mean, cost.sd), (3, 2.0, Some(1.0)));
    assert_eq!(cost.ci95_low, Some(-0.484138));
    assert_eq!(cost.ci95_high, Some(4.484138));
    let evictions = first.metrics.evictions.as_ref().unwrap();
    assert_eq!((evictions.mean, evictions.median), (6.0, 6.0));
    let second = &document.configurations[1];
    assert_eq!((second.runs, second.failed), (2, 1));
    assert_eq!(second.metrics.cost_usd.as_ref().unwrap().mean, 11.0);
    assert_eq!(second.metrics.pending_p95_s, None, "no run has the number");
    assert_eq!(
        document.failed_runs,
        [FailedRunEntry {
            id: "c02-s2".to_string(),
            error: "bad value".to_string()
        }]
    );
    assert_eq!((document.runs, document.runs_failed), (6, 1));
    // Cheaper with churn, dearer without: neither dominates.
    assert!(first.pareto && second.pareto);
}

#[test]
fn the_frontier_leaves_out_dominated_configurations() {
    let meta = meta(4, &[1]);
    // (cost, evictions): c03 is beaten by c01 on both, c04 ties c02's
    // cost with more evictions.
    let rows = vec![
        row(&meta, 0, 5.0, 10),
        row(&meta, 1, 8.0, 2),
        row(&meta, 2, 6.0, 12),
        row(&meta, 3, 8.0, 3),
    ];
    let frontier: Vec<bool> = meta
        .document(None, &rows)
        .configurations
        .iter()
        .map(|c| c.pareto)
        .collect();
    assert_eq!(frontier, [true, true, false, false]);
}

fn shard_folder(meta: &SweepMeta, rows: &[SweepRunRow], index: u64, count: u64) -> ShardFolder {
    let mine: Vec<SweepRunRow> = rows
        .iter()
        .filter(|r| r.run % count == index)
        .cloned()
        .collect();
    ShardFolder {
        dir: PathBuf::from(format!("shard-{index}")),
        document: meta.document(Some(ShardEntry { index, count }), &mine),
        rows: mine,
    }
}

#[test]
fn shards_merge_into_the_rows_in_run_order() {
    let meta = meta(3, &[4, 5]);
    let rows: Vec<SweepRunRow> = (0..6).map(|i| row(&meta, i, i as f64, i as u64)).collect();
    let shards: Vec<ShardFolder> = [2, 0, 1]
        .into_iter()
        .map(|i| shard_folder(&meta, &rows, i, 3))
        .collect();
    let (merged_meta, merged) = merge(&shards).unwrap();
    assert_eq!(merged_meta, meta);
    assert_eq!(merged, rows);
    assert_eq!(meta.document(None, &merged), meta.document(None, &rows));
}

#[test]
fn a_merge_refuses_missing_repeated_or_foreign_shards() {
    let meta = meta(2, &[1, 2]);
    let rows: Vec<SweepRunRow> = (0..4).map(|i| row(&meta, i, 1.0, 1)).collect();
    let error = |shards: &[ShardFolder]| merge(shards).unwrap_err().to_string();
    let zero = shard_folder(&meta, &rows, 0, 2);
    let one = shard_folder(&meta, &rows, 1, 2);
    assert!(error(std::slice::from_ref(&zero)).contains("shard(s) 1 of 2 missing"));
    assert!(error(&[zero.clone(), zero.clone()]).contains("shard 0/2 is also in shard-0"));
    let mut other = one.clone();
    other.document.seeds = vec![1, 3];
    assert!(error(&[zero.clone(), other]).contains("a shard of another sweep"));
    let whole = ShardFolder {
        dir: PathBuf::from("whole"),
        document: meta.document(None, &rows),
        rows: rows.clone(),
    };
    assert!(error(&[whole]).contains("not a shard"));
    let mut short = one.clone();
    short.rows.pop();
    assert!(error(&[zero.clone(), short]).contains("run 3 is in no shard's runs.csv"));
    let mut stray = one;
    stray.rows.push(rows[0].clone());
    assert!(error(&[zero, stray]).contains("which shard 1/2 does not hold"));
}
