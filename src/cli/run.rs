//! `karpsim run`: load a scenario, simulate its variants (in parallel),
//! write the report folder (files, charts, `report.html`) and print the
//! summary. The pieces are shared with `karpsim compare`.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use karpsim_catalog::snapshot::SnapshotIdentity;
use karpsim_input::scenario::{BundledRegions, Scenario, prepare};
use karpsim_report::chart::data::Eviction;
use karpsim_report::html::EventDigest;
use karpsim_report::schema::{EVENTS_FILE, Summary};
use karpsim_report::{atomic, chart, html, run as run_report};
use karpsim_sim::engine::{self, RunOutput};

use super::{OutputFormat, Progress, Warnings, print_document};

#[derive(clap::Args)]
pub struct RunArgs {
    /// Scenario file (YAML).
    pub scenario: PathBuf,
    /// Report directory, replaced as a whole when the run is done; each
    /// variant gets a folder inside it [default: reports/<scenario name>].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Run only this variant.
    #[arg(long, value_name = "NAME")]
    pub variant: Option<String>,
    /// Skip unusable trace rows (counted as trace_rows_skipped in
    /// summary.json) instead of stopping at the first.
    #[arg(long)]
    pub skip_bad_rows: bool,
    /// How to print the summary: a table, or the variants' summary.json
    /// documents as one JSON or YAML document.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = OutputFormat::Table)]
    pub output: OutputFormat,
    #[command(flatten)]
    pub sim: SimulationArgs,
}

/// Options of how variants are simulated, shared by `run` and `compare`.
#[derive(clap::Args)]
pub struct SimulationArgs {
    /// Errors only: no warnings, no progress bar, no per-variant timing
    /// lines.
    #[arg(short, long)]
    pub quiet: bool,
    /// Print the wall time of each engine component (scheduler,
    /// provisioning, disruption, ...) and of writing the report on stderr.
    #[arg(long)]
    pub profile: bool,
    /// Threads to simulate on [default: the number of cores]: variants run
    /// side by side, and a variant's consolidation simulations are spread
    /// over the threads. The report is the same whatever the number.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub jobs: Option<u32>,
    /// Also write each variant's cluster at this simulated time (`6h`) as
    /// a kubectl-shaped List, `snapshot.yaml` in its folder, which `karpsim
    /// plan` (or a scenario's `initialState`) reads.
    #[arg(long, value_name = "DURATION", value_parser = parse_sim_duration)]
    pub snapshot_at: Option<karpsim_sim::time::SimDuration>,
}

fn parse_sim_duration(text: &str) -> Result<karpsim_sim::time::SimDuration, String> {
    karpsim_sim::time::parse_duration(text).map_err(|e| e.to_string())
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
    let out_dir = args.out.clone().unwrap_or_else(|| default_out(&scenario));
    let Simulated {
        outputs,
        profile,
        pricing,
        staged,
    } = simulate(
        &scenario,
        args.variant.as_deref(),
        &args.sim,
        &out_dir,
        &mut Warnings::new(args.sim.quiet),
    )?;
    let report_started = Instant::now();
    write_report(&scenario, &pricing, &outputs, staged, &out_dir)?;
    if let Some(profile) = profile {
        print_profile(&profile, report_started.elapsed());
    }
    match args.output {
        OutputFormat::Table => {
            let summaries: Vec<_> = outputs.iter().map(|o| &o.summary).collect();
            let mut stdout = io::BufWriter::new(io::stdout().lock());
            writeln!(stdout, "scenario {} ({})", scenario.name, scenario.duration)?;
            writeln!(stdout, "pricing: {pricing}")?;
            run_report::write_summary_table(&summaries, &mut stdout)?;
            writeln!(stdout, "report: {}", out_dir.display())?;
            stdout.flush()?;
        }
        format => {
            let variants: Vec<_> = outputs
                .iter()
                .map(|o| run_report::summary_value(&scenario.name, &pricing, o))
                .collect();
            let document = serde_json::json!({
                "scenario": scenario.name,
                "report_dir": out_dir.display().to_string(),
                "variants": variants,
            });
            print_document(format, &document)?;
        }
    }
    Ok(())
}

/// `reports/<scenario name>`.
pub fn default_out(scenario: &Scenario) -> PathBuf {
    PathBuf::from("reports").join(&scenario.name)
}

/// What simulating a scenario gives.
pub struct Simulated {
    /// One output per variant, in file order whatever order they finished in
    /// (their events are in the staged `events.csv` files, not here).
    pub outputs: Vec<RunOutput>,
    /// With `--profile`, the component times summed over the variants.
    pub profile: Option<engine::Profile>,
    /// The pricing snapshot every variant used.
    pub pricing: SnapshotIdentity,
    /// The report folder being written.
    pub staged: StagedReport,
}

/// A report folder being written: the whole tree in one temporary folder
/// beside `--out`, with one folder per variant (in variant order) already
/// holding the variant's complete `events.csv` (whose evictions are kept
/// for the charts). Dropped without [`write_report`], it leaves nothing
/// behind.
pub struct StagedReport {
    tree: atomic::ReportTree,
    dirs: Vec<PathBuf>,
    /// Per variant, the evictions among its events, in file order.
    evictions: Vec<Vec<Eviction>>,
    /// Per variant, what `report.html` takes of its events (none when it
    /// grew too large to keep: the page reads `events.csv` back).
    digests: Vec<Option<EventDigest>>,
    /// Variants not run this time whose folders the previous report had
    /// (kept with `--variant`).
    kept: Vec<String>,
}

/// Simulates the scenario's variants (or only `variant`), streaming each
/// variant's events into its `events.csv` in the temporary report folder
/// as they happen, so memory does not grow with the event log. The
/// scenario's warnings go to `warnings`.
pub fn simulate(
    scenario: &Scenario,
    variant: Option<&str>,
    options: &SimulationArgs,
    out_dir: &Path,
    warnings: &mut Warnings,
) -> Result<Simulated> {
    let mut prepared = prepare(scenario, variant)?;
    if let Some(at) = options.snapshot_at {
        if at > scenario.duration {
            anyhow::bail!(
                "--snapshot-at {at} is after the end of the run ({})",
                scenario.duration
            );
        }
        for run in &mut prepared.runs {
            run.snapshot_at = Some(karpsim_sim::time::SimTime::ZERO + at);
        }
    }
    let variant_names: Vec<&str> = prepared.runs.iter().map(|r| r.variant.as_str()).collect();
    for warning in &prepared.warnings {
        warnings.add(warning, &variant_names);
    }
    warnings.flush();
    let cannot_write = || format!("cannot write the report to {}", out_dir.display());
    let tree = atomic::ReportTree::begin(out_dir).with_context(cannot_write)?;
    // A run of one variant completes the earlier report of the others.
    let mut kept = Vec::new();
    if variant.is_some() {
        for other in &scenario.variants {
            if !variant_names.contains(&other.name.as_str())
                && tree.keep_previous(&other.name).with_context(cannot_write)?
            {
                kept.push(other.name.clone());
            }
        }
    }
    let mut dirs = Vec::new();
    let mut sinks = Vec::new();
    for input in &prepared.runs {
        let dir = tree.add_dir(&input.variant).with_context(cannot_write)?;
        let path = dir.join(EVENTS_FILE);
        let file = std::fs::File::create(&path)
            .and_then(|file| run_report::EventsCsv::new(io::BufWriter::new(file)))
            .map_err(|e| run_report::with_path(&path, e))
            .with_context(cannot_write)?;
        dirs.push(dir);
        sinks.push(file);
    }
    let total_ms = scenario.duration.as_millis() * prepared.runs.len() as u64;
    let progress = Progress::new(total_ms / 1000, options.quiet);
    progress.set_message(&match prepared.runs.as_slice() {
        [only] => only.variant.clone(),
        runs => format!("{} variants", runs.len()),
    });
    let results = simulate_variants(&prepared.runs, &mut sinks, options, &progress)?;
    progress.finish();
    let mut evictions = Vec::new();
    let mut digests = Vec::new();
    for (mut sink, dir) in sinks.into_iter().zip(&dirs) {
        let path = dir.join(EVENTS_FILE);
        evictions.push(sink.take_evictions());
        digests.push(sink.take_digest());
        sink.finish()
            .and_then(|mut file| file.flush())
            .map_err(|e| run_report::with_path(&path, e))
            .with_context(cannot_write)?;
    }
    let show_times = options.profile || (!options.quiet && !progress.is_visible());
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
        for missing in &output.summary.missing_targets {
            eprintln!(
                "warning: variant {}: {} {} step(s) from {} on named {}/{} in namespace {}, which did not exist (counted as steps_missing_target in summary.json)",
                input.variant,
                missing.steps,
                missing.verb,
                missing.first_at,
                missing.target.kind.resource(),
                missing.target.name,
                missing.target.namespace
            );
        }
        profile.merge(&variant_profile);
        outputs.push(output);
    }
    Ok(Simulated {
        outputs,
        profile: options.profile.then_some(profile),
        pricing: prepared.pricing,
        staged: StagedReport {
            tree,
            dirs,
            evictions,
            digests,
            kept,
        },
    })
}

/// Finishes the report in its temporary folder (per variant its other
/// files and charts, then the comparison chart and `report.html` over the
/// variants run and those kept) and swaps it in place of `out_dir` in one
/// step.
pub fn write_report(
    scenario: &Scenario,
    pricing: &SnapshotIdentity,
    outputs: &[RunOutput],
    staged: StagedReport,
    out_dir: &Path,
) -> Result<()> {
    let cannot_write = || format!("cannot write the report to {}", out_dir.display());
    let StagedReport {
        tree,
        dirs,
        evictions,
        digests,
        kept,
    } = staged;
    // Each variant's chart data, from its output, feeds the comparison
    // chart too.
    let mut series = Vec::new();
    let mut written = Vec::new();
    for (((output, dir), evictions), digest) in
        outputs.iter().zip(&dirs).zip(evictions).zip(digests)
    {
        let (name, drawn) = write_variant_dir(&scenario.name, pricing, output, evictions, dir)
            .with_context(cannot_write)?;
        if let Some(digest) = digest {
            written.push((name.clone(), digest));
        }
        series.push((name, drawn));
    }
    for name in kept {
        let read = chart::VariantSeries::read_dir(&tree.root().join(&name))
            .map_err(io::Error::other)
            .with_context(cannot_write)?;
        series.push((name, read));
    }
    // Scenario order, whichever variants ran this time.
    series.sort_by_key(|(name, _)| scenario.variants.iter().position(|v| &v.name == name));
    write_report_root(tree.root(), series, written).with_context(cannot_write)?;
    tree.commit().with_context(cannot_write)?;
    Ok(())
}

/// Writes one variant's files but `events.csv` (already in `dir`), its
/// cluster snapshot if taken, and its charts; returns its name and chart
/// data, which the comparison chart draws too.
pub fn write_variant_dir(
    scenario: &str,
    pricing: &SnapshotIdentity,
    output: &RunOutput,
    evictions: Vec<Eviction>,
    dir: &Path,
) -> Result<(String, chart::VariantSeries)> {
    let summary = Summary::of_run(scenario, pricing, &output.summary);
    run_report::write_variant_files_but_events(&summary, output, dir)?;
    if let Some(export) = &output.export {
        write_cluster_snapshot(export, &dir.join("snapshot.yaml"))?;
    }
    let drawn = chart::VariantSeries::of_run(&summary, output, evictions);
    chart::write_variant_charts(&drawn, dir).map_err(io::Error::other)?;
    Ok((summary.variant, drawn))
}

/// Writes the comparison chart and `report.html` of the report folder
/// `root` over its variants' chart data, in the order given; `digests`:
/// what the page takes of the events of the variants just run (the others'
/// `events.csv` is read).
pub fn write_report_root(
    root: &Path,
    series: Vec<(String, chart::VariantSeries)>,
    digests: Vec<(String, EventDigest)>,
) -> Result<()> {
    let (order, series): (Vec<String>, Vec<_>) = series.into_iter().unzip();
    chart::write_comparison_charts(&series, root)?;
    html::write_report_html_digested(root, &order, digests)?;
    Ok(())
}

/// One variant's output, its component profile and its wall time.
type VariantResult = (RunOutput, engine::Profile, Duration);

/// Simulates the variants, up to `--jobs` at a time, each writing its
/// events into its own `events.csv`, and returns their results in variant
/// order (each run is independent, so the order they finish in does not
/// matter). The bar shows the simulated time summed over the variants.
fn simulate_variants<W: Write + Send>(
    runs: &[engine::RunInput],
    sinks: &mut [run_report::EventsCsv<W>],
    options: &SimulationArgs,
    progress: &Progress,
) -> Result<Vec<VariantResult>> {
    use rayon::prelude::*;
    let done_ms: Vec<AtomicU64> = runs.iter().map(|_| AtomicU64::new(0)).collect();
    let simulate = |index: usize,
                    input: &engine::RunInput,
                    sink: &mut run_report::EventsCsv<W>|
     -> Result<VariantResult> {
        let started = Instant::now();
        let mut report_progress = |t: karpsim_sim::time::SimTime| {
            if progress.is_visible() {
                done_ms[index].store(t.as_millis(), Ordering::Relaxed);
                let total: u64 = done_ms.iter().map(|d| d.load(Ordering::Relaxed)).sum();
                progress.set_position(total / 1000);
            }
        };
        let (output, profile) =
            engine::run_to_sink(input, sink, options.profile, &mut report_progress)?;
        Ok((output, profile.unwrap_or_default(), started.elapsed()))
    };
    let jobs = options.jobs.map_or_else(
        || std::thread::available_parallelism().map_or(1, usize::from),
        |n| n as usize,
    );
    // Every thread of the pool serves both levels: variants side by side,
    // and within a variant its consolidation simulations.
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs.max(1))
        .build()
        .context("cannot start the simulation threads")?;
    // On one thread, or with one variant, the variants simply run in turn
    // (results are collected in variant order either way).
    pool.install(|| {
        runs.par_iter()
            .zip(sinks.par_iter_mut())
            .enumerate()
            .map(|(i, (input, sink))| simulate(i, input, sink))
            .collect()
    })
}

/// The `--profile` table on stderr: wall time per engine component summed
/// over the variants, then the report writing.
pub fn print_profile(profile: &engine::Profile, reporting: std::time::Duration) {
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

/// The wall-clock instant t = 0 stands for in a written snapshot: the
/// snapshot's own for a run that began from one, else a fixed instant, so
/// that the same run writes the same bytes.
const DEFAULT_EPOCH_UNIX_MILLIS: i64 = 1_767_225_600_000; // 2026-01-01T00:00:00Z

/// Writes the cluster a run exported as a kubectl List.
fn write_cluster_snapshot(export: &karpsim_sim::engine::ClusterExport, path: &Path) -> Result<()> {
    let epoch = export
        .state
        .time
        .as_deref()
        .and_then(|t| karpsim_sim::spot::timestamp::Timestamp::parse(t).ok())
        .map_or(DEFAULT_EPOCH_UNIX_MILLIS, |t| t.unix_millis());
    let text = karpsim_input::snapshot_write::write_snapshot(
        &karpsim_input::snapshot_write::SnapshotParts {
            state: &export.state,
            nodepools: &export.nodepools,
            nodeclasses: &[],
            names: &Default::default(),
            epoch_unix_millis: epoch,
            now: export.at,
        },
    )?;
    std::fs::write(path, text)?;
    Ok(())
}
