//! `karpsim run`: load a scenario, simulate each variant, print the summary
//! table and write the report folder.

use std::io::{self, Write};
use std::path::PathBuf;

use anyhow::{Context, Result};

use karpsim::report::run as run_report;
use karpsim::scenario::{BundledRegions, Scenario, prepare};
use karpsim::sim::engine;

use super::progress_bar;

#[derive(clap::Args)]
pub struct RunArgs {
    /// Scenario file (YAML).
    pub scenario: PathBuf,
    /// Report directory; each variant gets a folder inside it
    /// [default: reports/<scenario name>].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Run only this variant.
    #[arg(long, value_name = "NAME")]
    pub variant: Option<String>,
    /// Skip unusable trace rows (counted as trace_rows_skipped in
    /// summary.json) instead of stopping at the first.
    #[arg(long)]
    pub skip_bad_rows: bool,
    /// Print the wall time of each engine component (scheduler,
    /// provisioning, disruption, ...) and of writing the report on stderr.
    #[arg(long)]
    pub profile: bool,
    /// Variants simulated at the same time [default: the number of cores].
    /// The report is the same whatever the number.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub jobs: Option<u32>,
}

pub fn run_command(args: &RunArgs) -> Result<()> {
    let mut scenario = Scenario::load(&args.scenario, &BundledRegions)?;
    scenario.set_skip_bad_rows(args.skip_bad_rows);
    if let Some(name) = &args.variant
        && !scenario.variants.iter().any(|v| &v.name == name)
    {
        let known: Vec<&str> = scenario.variants.iter().map(|v| v.name.as_str()).collect();
        anyhow::bail!(
            "{}: no variant named {name:?} (variants: {})",
            args.scenario.display(),
            known.join(", ")
        );
    }
    let prepared = prepare(&scenario, args.variant.as_deref())?;
    for warning in &prepared.warnings {
        eprintln!("warning: {warning}");
    }
    let bar = progress_bar(scenario.duration.as_millis() * prepared.runs.len() as u64 / 1000);
    if let Some(bar) = &bar {
        bar.set_message(match prepared.runs.as_slice() {
            [only] => only.variant.clone(),
            runs => format!("{} variants", runs.len()),
        });
    }
    let results = simulate_variants(&prepared.runs, args, bar.as_ref())?;
    let show_times = args.profile || bar.is_none();
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    let mut profile = engine::Profile::default();
    let mut outputs = Vec::new();
    for ((output, variant_profile, elapsed), input) in results.into_iter().zip(&prepared.runs) {
        if show_times {
            eprintln!(
                "variant {}: simulated {} in {:.2}s",
                input.variant,
                scenario.duration,
                elapsed.as_secs_f64()
            );
        }
        profile.merge(&variant_profile);
        outputs.push(output);
    }
    let report_started = std::time::Instant::now();
    let out_dir = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("reports").join(&scenario.name));
    let mut entries: Vec<(String, _)> = outputs
        .iter()
        .map(|output| {
            let name = scenario.name.as_str();
            (
                output.summary.variant.clone(),
                move |dir: &std::path::Path| run_report::write_variant_files(name, output, dir),
            )
        })
        .collect();
    run_report::atomic::write_dirs(&out_dir, &mut entries)
        .with_context(|| format!("cannot write the report to {}", out_dir.display()))?;
    if args.profile {
        print_profile(&profile, report_started.elapsed());
    }
    let summaries: Vec<_> = outputs.iter().map(|o| &o.summary).collect();
    let mut stdout = io::BufWriter::new(io::stdout().lock());
    writeln!(stdout, "scenario {} ({})", scenario.name, scenario.duration)?;
    run_report::write_summary_table(&summaries, &mut stdout)?;
    writeln!(stdout, "report: {}", out_dir.display())?;
    stdout.flush()?;
    Ok(())
}

/// One variant's output, its component profile and its wall time.
type VariantResult = (engine::RunOutput, engine::Profile, std::time::Duration);

/// Simulates the variants, up to `--jobs` at a time, and returns their
/// results in variant order (each run is independent, so the order they
/// finish in does not matter). The bar shows the simulated time summed over
/// the variants.
fn simulate_variants(
    runs: &[engine::RunInput],
    args: &RunArgs,
    bar: Option<&indicatif::ProgressBar>,
) -> Result<Vec<VariantResult>> {
    use rayon::prelude::*;
    use std::sync::atomic::{AtomicU64, Ordering};
    let done_ms: Vec<AtomicU64> = runs.iter().map(|_| AtomicU64::new(0)).collect();
    let simulate = |index: usize, input: &engine::RunInput| -> Result<VariantResult> {
        let started = std::time::Instant::now();
        let mut progress = |t: karpsim::sim::time::SimTime| {
            if let Some(bar) = bar {
                done_ms[index].store(t.as_millis(), Ordering::Relaxed);
                let total: u64 = done_ms.iter().map(|d| d.load(Ordering::Relaxed)).sum();
                bar.set_position(total / 1000);
            }
        };
        let (output, profile) = if args.profile {
            engine::run_profiled(input, &mut progress)?
        } else {
            (
                engine::run(input, &mut progress)?,
                engine::Profile::default(),
            )
        };
        Ok((output, profile, started.elapsed()))
    };
    let jobs = args.jobs.map_or_else(
        || std::thread::available_parallelism().map_or(1, usize::from),
        |n| n as usize,
    );
    if jobs <= 1 || runs.len() <= 1 {
        return runs
            .iter()
            .enumerate()
            .map(|(i, input)| simulate(i, input))
            .collect();
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs.min(runs.len()))
        .build()
        .context("cannot start the variant threads")?;
    pool.install(|| {
        runs.par_iter()
            .enumerate()
            .map(|(i, input)| simulate(i, input))
            .collect()
    })
}

/// The `--profile` table on stderr: wall time per engine component summed
/// over the variants, then the report writing.
fn print_profile(profile: &engine::Profile, reporting: std::time::Duration) {
    let total: f64 = engine::Component::ALL
        .iter()
        .map(|c| profile.time(*c).as_secs_f64())
        .sum::<f64>()
        + reporting.as_secs_f64();
    eprintln!(
        "{:<20} {:>10} {:>7} {:>12}",
        "component", "seconds", "share", "events"
    );
    let rows = engine::Component::ALL
        .iter()
        .map(|c| (c.name(), profile.time(*c), Some(profile.events(*c))))
        .chain([("reporting", reporting, None)]);
    for (name, time, events) in rows {
        let share = if total > 0.0 {
            100.0 * time.as_secs_f64() / total
        } else {
            0.0
        };
        let events = events.map_or_else(String::new, |e| e.to_string());
        eprintln!(
            "{name:<20} {:>10.3} {share:>6.1}% {events:>12}",
            time.as_secs_f64()
        );
    }
    eprintln!("{:<20} {total:>10.3}", "total");
}

/// The simulation allocates and frees many small values per decision (the
/// placement views of every node in each consolidation what-if); mimalloc
/// does this with far less time than the system allocator. The allocator
/// changes no output.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
