//! Whole-scenario benchmark: `scenarios/large-week.yaml` through the engine,
//! one variant per iteration, cut to its first simulated 15 minutes (the
//! cluster ramps to about 230 nodes) so a sample stays affordable on a
//! small machine (the full week is measured with
//! `karpsim run --profile`; see `benches/README.md`). Loading the scenario
//! and the catalog is outside the measured part.

use std::path::Path;

use karpsim_input::scenario::{BundledRegions, Scenario, prepare};
use karpsim_sim::SimDuration;
use karpsim_sim::engine::{self, RunInput};

fn main() {
    divan::main();
}

/// The named variant of large-week, stopped after `minutes` simulated
/// minutes.
fn large_week(variant: &str, minutes: u64) -> RunInput {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/large-week.yaml");
    let scenario = Scenario::load(&path, &BundledRegions).expect("large-week loads");
    let mut prepared = prepare(&scenario, Some(variant)).expect("large-week prepares");
    let mut input = prepared.runs.remove(0);
    input.duration = SimDuration::from_mins(minutes);
    input
}

/// Spot + on-demand with interruptions: the first 15 simulated minutes.
#[divan::bench(sample_count = 2, sample_size = 1)]
fn spot_and_on_demand_first_15_minutes(bencher: divan::Bencher) {
    let input = large_week("spot-and-on-demand", 15);
    bencher.bench(|| engine::run(&input, &mut |_| {}).expect("runs"));
}

/// On-demand only: the first 15 simulated minutes.
#[divan::bench(sample_count = 2, sample_size = 1)]
fn on_demand_first_15_minutes(bencher: divan::Bencher) {
    let input = large_week("on-demand", 15);
    bencher.bench(|| engine::run(&input, &mut |_| {}).expect("runs"));
}
