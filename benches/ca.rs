//! Cluster Autoscaler benchmark: the `cluster-autoscaler` variant of
//! `scenarios/karpenter-vs-ca.yaml` through the engine, with its CA loop
//! every 10 s (scale-up estimates, scale-down simulation over the node
//! groups). The CA loop's share of such a run is the `cluster-autoscaler`
//! row of `karpsim run --profile`.

use std::path::Path;

use karpsim::scenario::{BundledRegions, Scenario, prepare};
use karpsim::sim::engine::{self, RunInput};

fn main() {
    divan::main();
}

fn variant(name: &str) -> RunInput {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/karpenter-vs-ca.yaml");
    let scenario = Scenario::load(&path, &BundledRegions).expect("karpenter-vs-ca loads");
    prepare(&scenario, Some(name))
        .expect("karpenter-vs-ca prepares")
        .runs
        .remove(0)
}

/// The whole CA variant run (every loop of the scenario's duration).
#[divan::bench(sample_count = 5, sample_size = 1)]
fn cluster_autoscaler_run(bencher: divan::Bencher) {
    let input = variant("cluster-autoscaler");
    bencher.bench(|| engine::run(&input, &mut |_| {}).expect("runs"));
}

/// The Karpenter variant of the same workload, for comparison.
#[divan::bench(sample_count = 5, sample_size = 1)]
fn karpenter_run(bencher: divan::Bencher) {
    let input = variant("karpenter");
    bencher.bench(|| engine::run(&input, &mut |_| {}).expect("runs"));
}
