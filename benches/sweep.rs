//! Sweep throughput: how many runs per second a sweep of a quickstart-sized
//! scenario gets through.
//!
//! - `sweep_runs`: 20 runs of `scenarios/quickstart.yaml` (its two
//!   variants × seeds 1 to 10, 12 h each) on a thread pool of every core,
//!   each as `karpsim sweep` does one: the variant prepared once, cloned
//!   with the run's seed, simulated with its events dropped, and kept only
//!   as its `runs.csv` row. Prints runs per second once.
//! - `one_run`: one of those runs on one thread.
//!
//! The whole command (`karpsim sweep benches/sweeps/quickstart-seeds.yaml`,
//! 100 runs, outputs and charts included) is timed in benches/README.md.

use std::path::Path;
use std::sync::Once;
use std::time::Instant;

use karpsim_input::scenario::{BundledRegions, Prepared, Scenario, prepare};
use karpsim_report::schema::Summary;
use karpsim_report::schema::sweep::{RunIdentity, SweepRunRow};
use karpsim_sim::engine::{self, EventRecord, EventSink, RunInput};
use rayon::prelude::*;

fn main() {
    divan::main();
}

/// Seeds per variant in `sweep_runs`.
const SEEDS: u64 = 10;

struct NoEvents;

impl EventSink for NoEvents {
    fn record(&mut self, _event: EventRecord) {}
}

fn quickstart() -> (Scenario, Prepared) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/quickstart.yaml");
    let scenario = Scenario::load(&path, &BundledRegions).expect("quickstart loads");
    let prepared = prepare(&scenario, None).expect("quickstart prepares");
    (scenario, prepared)
}

/// One run as a sweep makes it: the prepared variant with `seed`, its
/// summary row.
fn sweep_run(
    scenario: &Scenario,
    prepared: &Prepared,
    template: &RunInput,
    seed: u64,
) -> SweepRunRow {
    let mut input = template.clone();
    input.seed = seed;
    let (output, _) =
        engine::run_to_sink(&input, &mut NoEvents, false, &mut |_| {}).expect("quickstart runs");
    let summary = Summary::of_run(&scenario.name, &prepared.pricing, &output.summary);
    let identity = RunIdentity {
        run: seed,
        id: format!("{}-s{seed}", input.variant),
        configuration: input.variant.clone(),
        label: input.variant.clone(),
        seed,
    };
    SweepRunRow::of_summary(identity, &summary)
}

/// Both variants × [`SEEDS`] seeds on every core.
#[divan::bench(sample_count = 3, sample_size = 1)]
fn sweep_runs(bencher: divan::Bencher) {
    let (scenario, prepared) = quickstart();
    let runs: Vec<(&RunInput, u64)> = prepared
        .runs
        .iter()
        .flat_map(|input| (1..=SEEDS).map(move |seed| (input, seed)))
        .collect();
    let sweep = || -> Vec<SweepRunRow> {
        runs.par_iter()
            .map(|(input, seed)| sweep_run(&scenario, &prepared, input, *seed))
            .collect()
    };
    static PRINTED: Once = Once::new();
    PRINTED.call_once(|| {
        let started = Instant::now();
        let rows = sweep();
        let seconds = started.elapsed().as_secs_f64();
        eprintln!(
            "sweep_runs: {} runs in {seconds:.2} s on {} threads: {:.1} runs/s",
            rows.len(),
            rayon::current_num_threads(),
            rows.len() as f64 / seconds
        );
    });
    bencher.bench(sweep);
}

/// One run on one thread.
#[divan::bench(sample_count = 5, sample_size = 1)]
fn one_run(bencher: divan::Bencher) {
    let (scenario, prepared) = quickstart();
    let template = &prepared.runs[0];
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("one thread");
    bencher.bench(|| pool.install(|| sweep_run(&scenario, &prepared, template, 1)));
}
