//! `karpsim sweep`: run a sweep file's configurations × seeds (all of
//! them, or one shard) on all cores, keeping per run only its summary row,
//! and write `runs.csv`, `sweep.json`, the charts and `report.html`
//! (`sweep merge` puts shard folders together, `sweep job` prints the
//! Kubernetes Jobs that run the shards on a cluster).

use std::io::{self, Write};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result};

use karpsim_catalog::snapshot::SnapshotIdentity;
use karpsim_input::scenario::sweep::{Shard, SweepFile, SweepPlan, SweepRun};
use karpsim_input::scenario::{BundledRegions, Scenario, prepare, pricing_identity};
use karpsim_report::atomic::ReportTree;
use karpsim_report::run as run_report;
use karpsim_report::schema::sweep::{
    RUNS_DIR, RunIdentity, SettingEntry, ShardEntry, SweepDocument, SweepRunRow,
};
use karpsim_report::schema::{EVENTS_FILE, Summary};
use karpsim_report::sweep::{
    ConfigurationMeta, SWEEP_ENTRIES, ShardFolder, SweepMeta, merge, write_sweep_files,
    write_sweep_table,
};
use karpsim_sim::engine::{self, EventRecord, EventSink, RunInput};

use super::run::{write_report_root, write_variant_dir};
use super::{OutputFormat, Progress, Warnings, print_document};

#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct SweepArgs {
    #[command(subcommand)]
    pub command: Option<SweepCommand>,
    #[command(flatten)]
    pub run: SweepRunArgs,
}

#[derive(clap::Subcommand)]
pub enum SweepCommand {
    /// Put the folders of a sharded sweep's shards together into the
    /// folder the whole sweep writes (the same bytes).
    Merge(MergeArgs),
    /// Print a Kubernetes Indexed Job that runs the sweep in shards, and
    /// the Job that merges them.
    Job(super::sweep_job::JobArgs),
}

/// Where the shard index and count of `--shard auto` come from.
const INDEX_VARIABLES: [&str; 3] = [
    "JOB_COMPLETION_INDEX",
    "AWS_BATCH_JOB_ARRAY_INDEX",
    "SLURM_ARRAY_TASK_ID",
];

#[derive(clap::Args)]
pub struct SweepRunArgs {
    /// Sweep file (YAML; schema in scenarios/README.md).
    #[arg(required = true)]
    pub sweep: Option<PathBuf>,
    /// Output folder, replaced as a whole when the sweep is done [default:
    /// reports/<sweep name>, or reports/<sweep name>-shard-<I>-of-<N>].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Threads to run on [default: the number of cores]; the outputs are
    /// the same whatever the number.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub jobs: Option<u32>,
    /// Run only shard I of N (from 0): the runs whose index is I modulo N.
    /// `auto` takes I from JOB_COMPLETION_INDEX (Kubernetes Indexed Job),
    /// AWS_BATCH_JOB_ARRAY_INDEX or SLURM_ARRAY_TASK_ID (less
    /// SLURM_ARRAY_TASK_MIN), and N from --shards, KARPSIM_SHARDS or
    /// SLURM_ARRAY_TASK_COUNT.
    #[arg(long, value_name = "I/N|auto")]
    pub shard: Option<String>,
    /// The shard count for `--shard auto`.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub shards: Option<u64>,
    /// Also keep each run's full report (events, charts, report.html) in
    /// runs/<run id>/ of the output folder.
    #[arg(long)]
    pub keep_reports: bool,
    /// Exit 0 even when runs failed (they are still listed in runs.csv,
    /// sweep.json and on stderr): for shards whose merge reports them.
    #[arg(long)]
    pub allow_failed_runs: bool,
    /// How to print the result: a table, or the sweep.json document.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = OutputFormat::Table)]
    pub output: OutputFormat,
    /// Errors only: no warnings, no progress bar.
    #[arg(short, long)]
    pub quiet: bool,
}

#[derive(clap::Args)]
pub struct MergeArgs {
    /// The shard folders, every shard of the sweep once.
    #[arg(required = true, value_name = "DIR")]
    pub shards: Vec<PathBuf>,
    /// The merged folder.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Exit 0 even when runs failed.
    #[arg(long)]
    pub allow_failed_runs: bool,
    /// How to print the result: a table, or the sweep.json document.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = OutputFormat::Table)]
    pub output: OutputFormat,
    /// Errors only.
    #[arg(short, long)]
    pub quiet: bool,
}

pub fn sweep_command(args: &SweepArgs) -> Result<()> {
    match &args.command {
        Some(SweepCommand::Merge(merge)) => merge_command(merge),
        Some(SweepCommand::Job(job)) => super::sweep_job::job_command(job),
        None => run_sweep(&args.run),
    }
}

/// A sweep file with its scenario and enumeration.
pub struct LoadedSweep {
    pub file: SweepFile,
    pub scenario: Scenario,
    pub plan: SweepPlan,
}

/// Reads the sweep file and its scenario and enumerates the runs.
pub fn load_sweep(path: &Path) -> Result<LoadedSweep> {
    let file = SweepFile::load(path)?;
    let scenario = if file.node_pools.is_empty() {
        Scenario::load(&file.scenario, &BundledRegions)?
    } else {
        Scenario::load_without_variants(&file.scenario, &BundledRegions)?
    };
    let plan = file.plan(&scenario)?;
    Ok(LoadedSweep {
        file,
        scenario,
        plan,
    })
}

/// The shard of `--shard` (and `--shards` for `auto`).
fn resolve_shard(args: &SweepRunArgs) -> Result<Shard> {
    let Some(text) = &args.shard else {
        if args.shards.is_some() {
            anyhow::bail!("--shards is the count for --shard auto; give --shard too");
        }
        return Ok(Shard::ALL);
    };
    if text != "auto" {
        if args.shards.is_some() {
            anyhow::bail!("--shards goes with --shard auto; --shard {text} names its count");
        }
        return Ok(Shard::parse(text)?);
    }
    let variable = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    let number = |name: &str, value: String| -> Result<u64> {
        value
            .trim()
            .parse()
            .with_context(|| format!("--shard auto: {name}={value:?} is not a whole number"))
    };
    let Some((name, value)) = INDEX_VARIABLES
        .iter()
        .find_map(|name| variable(name).map(|v| (*name, v)))
    else {
        anyhow::bail!(
            "--shard auto: none of {} is set (give --shard I/N outside a Job or job array)",
            INDEX_VARIABLES.join(", ")
        );
    };
    let mut index = number(name, value)?;
    if name == "SLURM_ARRAY_TASK_ID"
        && let Some(min) = variable("SLURM_ARRAY_TASK_MIN")
    {
        let min = number("SLURM_ARRAY_TASK_MIN", min)?;
        index = index.checked_sub(min).with_context(|| {
            format!("--shard auto: SLURM_ARRAY_TASK_ID {index} is below SLURM_ARRAY_TASK_MIN {min}")
        })?;
    }
    let count = match args.shards {
        Some(count) => count,
        None => match variable("KARPSIM_SHARDS") {
            Some(value) => number("KARPSIM_SHARDS", value)?,
            None => match variable("SLURM_ARRAY_TASK_COUNT") {
                Some(value) => number("SLURM_ARRAY_TASK_COUNT", value)?,
                None => anyhow::bail!(
                    "--shard auto: {name} gives the index {index}, but nothing gives the count: add --shards N (or set KARPSIM_SHARDS)"
                ),
            },
        },
    };
    let as_usize = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
    Shard::new(as_usize(index), as_usize(count)).with_context(|| format!("--shard auto ({name})"))
}

/// The sweep's description for its `sweep.json`.
fn sweep_meta(loaded: &LoadedSweep, pricing: &SnapshotIdentity) -> SweepMeta {
    let plan = &loaded.plan;
    SweepMeta {
        sweep: loaded.file.name.clone(),
        scenario: loaded.scenario.name.clone(),
        duration_s: loaded.scenario.duration.as_millis() as f64 / 1000.0,
        pricing: Some(serde_json::to_value(pricing).expect("a snapshot identity is a JSON object")),
        seeds: plan.seeds.clone(),
        vary: loaded
            .file
            .vary
            .iter()
            .map(|v| v.field.to_string())
            .collect(),
        runs_total: plan.run_count() as u64,
        configurations: plan
            .configurations
            .iter()
            .map(|c| ConfigurationMeta {
                id: c.id.clone(),
                base: c.base.clone(),
                node_pools: c.node_pools.clone(),
                settings: c
                    .settings
                    .iter()
                    .map(|s| SettingEntry {
                        field: s.field.clone(),
                        value: s.value.clone(),
                    })
                    .collect(),
                label: c.label.clone(),
            })
            .collect(),
    }
}

/// Drops a run's events: only its summary is kept.
struct NoEvents;

impl EventSink for NoEvents {
    fn record(&mut self, _event: EventRecord) {}
}

/// One configuration's prepared run, made when its first run starts and
/// dropped when its last run ends, so that only the configurations being
/// run hold their catalogs.
struct PreparedSlot {
    input: Mutex<Option<Arc<Result<RunInput, String>>>>,
    remaining: AtomicUsize,
}

/// What one run gives: its row, and whether its full report was kept.
struct RunResult {
    row: SweepRunRow,
    kept: bool,
}

/// Everything a run needs to start.
struct SweepContext<'a> {
    loaded: &'a LoadedSweep,
    pricing: &'a SnapshotIdentity,
    slots: &'a [PreparedSlot],
    warnings: &'a Mutex<Vec<Vec<String>>>,
    /// The temporary output folder, where `--keep-reports` puts runs/.
    keep_in: Option<&'a Path>,
    /// Simulated milliseconds done, over all runs.
    done_ms: &'a AtomicU64,
    progress: &'a Progress,
}

impl SweepContext<'_> {
    fn identity(&self, run: SweepRun) -> RunIdentity {
        let configuration = &self.loaded.plan.configurations[run.configuration];
        RunIdentity {
            run: run.index as u64,
            id: self.loaded.plan.run_id(run),
            configuration: configuration.id.clone(),
            label: configuration.label.clone(),
            seed: run.seed,
        }
    }

    /// The configuration's prepared run (prepared now if no run of it has
    /// started yet).
    fn prepared(&self, configuration: usize) -> Arc<Result<RunInput, String>> {
        let slot = &self.slots[configuration];
        let mut input = slot.input.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(prepared) = input.as_ref() {
            return prepared.clone();
        }
        let mut scenario = self.loaded.scenario.clone();
        scenario.variants = vec![
            self.loaded.plan.configurations[configuration]
                .variant
                .clone(),
        ];
        let prepared = match prepare(&scenario, None) {
            Ok(mut prepared) if prepared.runs.len() == 1 => {
                let mut all = self.warnings.lock().unwrap_or_else(|p| p.into_inner());
                all[configuration] = std::mem::take(&mut prepared.warnings);
                Ok(prepared.runs.remove(0))
            }
            Ok(_) => Err("the configuration gave no run".to_string()),
            Err(error) => Err(error.to_string()),
        };
        let prepared = Arc::new(prepared);
        *input = Some(prepared.clone());
        prepared
    }

    /// Marks one run of the configuration done.
    fn finished(&self, configuration: usize) {
        let slot = &self.slots[configuration];
        if slot.remaining.fetch_sub(1, Ordering::AcqRel) == 1 {
            slot.input.lock().unwrap_or_else(|p| p.into_inner()).take();
        }
    }

    /// Runs one run; a failure of the run itself (its configuration does
    /// not prepare, the engine stops, a panic) is its row's error, an
    /// error writing its kept report stops the sweep.
    fn run(&self, run: SweepRun) -> Result<RunResult> {
        let identity = self.identity(run);
        let prepared = self.prepared(run.configuration);
        let outcome = match prepared.as_ref() {
            Err(error) => {
                // The bar counts a run that cannot start as done.
                let duration_ms = self.loaded.scenario.duration.as_millis();
                self.done_ms.fetch_add(duration_ms, Ordering::Relaxed);
                Ok(Err(error.clone()))
            }
            Ok(template) => self.simulate(template, run, &identity.id),
        };
        self.finished(run.configuration);
        Ok(match outcome? {
            Ok((summary, kept)) => RunResult {
                row: SweepRunRow::of_summary(identity, &summary),
                kept,
            },
            Err(error) => RunResult {
                row: SweepRunRow::failed(identity, error),
                kept: false,
            },
        })
    }

    /// Simulates the run (writing its full report with `--keep-reports`)
    /// and returns its summary, or why it failed.
    fn simulate(
        &self,
        template: &RunInput,
        run: SweepRun,
        id: &str,
    ) -> Result<std::result::Result<(Summary, bool), String>> {
        let mut input = template.clone();
        input.seed = run.seed;
        let mut last_ms = 0u64;
        let mut report_progress = |t: karpsim_sim::time::SimTime| {
            let now = t.as_millis();
            self.done_ms
                .fetch_add(now.saturating_sub(last_ms), Ordering::Relaxed);
            last_ms = now;
            if self.progress.is_visible() {
                self.progress
                    .set_position(self.done_ms.load(Ordering::Relaxed) / 1000);
            }
        };
        let scenario = &self.loaded.scenario.name;
        let Some(root) = self.keep_in else {
            let simulated = catch_unwind(AssertUnwindSafe(|| {
                engine::run_to_sink(&input, &mut NoEvents, false, &mut report_progress)
            }));
            let duration_ms = self.loaded.scenario.duration.as_millis();
            self.done_ms
                .fetch_add(duration_ms.saturating_sub(last_ms), Ordering::Relaxed);
            return Ok(match simulated {
                Ok(Ok((output, _))) => Ok((
                    Summary::of_run(scenario, self.pricing, &output.summary),
                    false,
                )),
                Ok(Err(error)) => Err(error.to_string()),
                Err(panic) => Err(panic_text(panic)),
            });
        };
        let run_dir = root.join(RUNS_DIR).join(id);
        let variant_dir = run_dir.join(&input.variant);
        let cannot_write = || format!("cannot write the report of run {id}");
        std::fs::create_dir_all(&variant_dir).with_context(cannot_write)?;
        let path = variant_dir.join(EVENTS_FILE);
        let mut sink = std::fs::File::create(&path)
            .and_then(|file| run_report::EventsCsv::new(io::BufWriter::new(file)))
            .map_err(|e| run_report::with_path(&path, e))
            .with_context(cannot_write)?;
        let simulated = catch_unwind(AssertUnwindSafe(|| {
            engine::run_to_sink(&input, &mut sink, false, &mut report_progress)
        }));
        let duration_ms = self.loaded.scenario.duration.as_millis();
        self.done_ms
            .fetch_add(duration_ms.saturating_sub(last_ms), Ordering::Relaxed);
        let failed = |error: String| {
            // A failed run keeps no half-written report.
            karpsim_report::cleanup::remove_path(&run_dir);
            Ok(Err(error))
        };
        let output = match simulated {
            Ok(Ok((output, _))) => output,
            Ok(Err(error)) => return failed(error.to_string()),
            Err(panic) => return failed(panic_text(panic)),
        };
        let evictions = sink.take_evictions();
        let digest = sink.take_digest();
        sink.finish()
            .and_then(|mut file| file.flush())
            .map_err(|e| run_report::with_path(&path, e))
            .with_context(cannot_write)?;
        let series = write_variant_dir(scenario, self.pricing, &output, evictions, &variant_dir)
            .with_context(cannot_write)?;
        let digests = digest.map(|d| (series.0.clone(), d)).into_iter().collect();
        write_report_root(&run_dir, vec![series], digests).with_context(cannot_write)?;
        Ok(Ok((
            Summary::of_run(scenario, self.pricing, &output.summary),
            true,
        )))
    }
}

/// A panic's message as a run's error.
fn panic_text(panic: Box<dyn std::any::Any + Send>) -> String {
    let message = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_string());
    format!("internal error (karpsim panicked): {message}")
}

fn run_sweep(args: &SweepRunArgs) -> Result<()> {
    let path = args.sweep.as_ref().expect("clap requires SWEEP");
    let loaded = load_sweep(path)?;
    let shard = resolve_shard(args)?;
    let plan = &loaded.plan;
    let runs: Vec<SweepRun> = plan.runs().filter(|r| shard.contains(r.index)).collect();
    let shard_entry = (shard != Shard::ALL).then_some(ShardEntry {
        index: shard.index as u64,
        count: shard.count as u64,
    });
    let out_dir = args.out.clone().unwrap_or_else(|| {
        let name = match shard_entry {
            None => loaded.file.name.clone(),
            Some(s) => format!("{}-shard-{}-of-{}", loaded.file.name, s.index, s.count),
        };
        PathBuf::from("reports").join(name)
    });
    let pricing = pricing_identity(&loaded.scenario)?;
    let meta = sweep_meta(&loaded, &pricing);
    let cannot_write = || format!("cannot write the sweep to {}", out_dir.display());
    let tree = ReportTree::begin_with(&out_dir, &SWEEP_ENTRIES).with_context(cannot_write)?;
    if args.keep_reports {
        tree.add_dir(RUNS_DIR).with_context(cannot_write)?;
    }
    let slots: Vec<PreparedSlot> = plan
        .configurations
        .iter()
        .enumerate()
        .map(|(index, _)| PreparedSlot {
            input: Mutex::new(None),
            remaining: AtomicUsize::new(runs.iter().filter(|r| r.configuration == index).count()),
        })
        .collect();
    let warnings = Mutex::new(vec![Vec::new(); plan.configurations.len()]);
    let duration_ms = loaded.scenario.duration.as_millis();
    let progress = Progress::new(duration_ms * runs.len() as u64 / 1000, args.quiet);
    progress.set_message(&format!("{} runs", runs.len()));
    let done_ms = AtomicU64::new(0);
    let context = SweepContext {
        loaded: &loaded,
        pricing: &pricing,
        slots: &slots,
        warnings: &warnings,
        keep_in: args.keep_reports.then(|| tree.root()),
        done_ms: &done_ms,
        progress: &progress,
    };
    let jobs = args.jobs.map_or_else(
        || std::thread::available_parallelism().map_or(1, usize::from),
        |n| n as usize,
    );
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs.max(1))
        .build()
        .context("cannot start the simulation threads")?;
    let results: Vec<RunResult> = pool.install(|| {
        use rayon::prelude::*;
        runs.par_iter()
            .map(|run| context.run(*run))
            .collect::<Result<Vec<_>>>()
    })?;
    progress.finish();
    let mut shown = Warnings::new(args.quiet);
    let names: Vec<&str> = plan
        .configurations
        .iter()
        .map(|c| c.base.as_str())
        .collect();
    // Configurations of one base read the same files: a warning they
    // share is shown once.
    let mut seen = std::collections::BTreeSet::new();
    for warning in warnings
        .into_inner()
        .unwrap_or_else(|p| p.into_inner())
        .iter()
        .flatten()
    {
        if seen.insert(warning.clone()) {
            shown.add(warning, &names);
        }
    }
    shown.flush();
    let kept: Vec<String> = results
        .iter()
        .filter(|r| r.kept)
        .map(|r| r.row.id.clone())
        .collect();
    let rows: Vec<SweepRunRow> = results.into_iter().map(|r| r.row).collect();
    let document = write_sweep_files(tree.root(), &meta, shard_entry, &rows, &kept)
        .with_context(cannot_write)?;
    tree.commit().with_context(cannot_write)?;
    finish(
        &document,
        &out_dir,
        args.output,
        args.allow_failed_runs,
        args.quiet,
    )
}

fn merge_command(args: &MergeArgs) -> Result<()> {
    let shards = args
        .shards
        .iter()
        .map(|dir| ShardFolder::read(dir))
        .collect::<Result<Vec<_>, _>>()?;
    let (meta, rows) = merge(&shards)?;
    let cannot_write = || format!("cannot write the sweep to {}", args.out.display());
    let tree = ReportTree::begin_with(&args.out, &SWEEP_ENTRIES).with_context(cannot_write)?;
    // The shards' kept run reports, in run order.
    let mut kept = Vec::new();
    for row in &rows {
        let found = shards
            .iter()
            .map(|s| s.dir.join(RUNS_DIR).join(&row.id))
            .find(|dir| dir.is_dir());
        if let Some(from) = found {
            if kept.is_empty() {
                tree.add_dir(RUNS_DIR).with_context(cannot_write)?;
            }
            tree.link_in(&from, &Path::new(RUNS_DIR).join(&row.id))
                .with_context(cannot_write)?;
            kept.push(row.id.clone());
        }
    }
    let document =
        write_sweep_files(tree.root(), &meta, None, &rows, &kept).with_context(cannot_write)?;
    tree.commit().with_context(cannot_write)?;
    finish(
        &document,
        &args.out,
        args.output,
        args.allow_failed_runs,
        args.quiet,
    )
}

/// Prints the result and, unless allowed, fails when runs failed.
fn finish(
    document: &SweepDocument,
    out_dir: &Path,
    format: OutputFormat,
    allow_failed_runs: bool,
    quiet: bool,
) -> Result<()> {
    const SHOWN_FAILURES: usize = 10;
    if !quiet || !allow_failed_runs {
        for failed in document.failed_runs.iter().take(SHOWN_FAILURES) {
            eprintln!("run {} failed: {}", failed.id, failed.error);
        }
        if document.failed_runs.len() > SHOWN_FAILURES {
            eprintln!(
                "… and {} more failed runs (all in runs.csv)",
                document.failed_runs.len() - SHOWN_FAILURES
            );
        }
    }
    match format {
        OutputFormat::Table => {
            let mut stdout = io::BufWriter::new(io::stdout().lock());
            let shard = document
                .shard
                .map(|s| format!(", shard {} of {}", s.index, s.count))
                .unwrap_or_default();
            writeln!(
                stdout,
                "sweep {} over scenario {}: {} configurations × {} seeds{shard}: {} runs, {} failed",
                document.sweep,
                document.scenario,
                document.configurations.len(),
                document.seeds.len(),
                document.runs,
                document.runs_failed
            )?;
            write_sweep_table(document, &mut stdout)?;
            writeln!(stdout, "report: {}", out_dir.display())?;
            stdout.flush()?;
        }
        OutputFormat::Json => {
            let mut stdout = io::BufWriter::new(io::stdout().lock());
            document.write(&mut stdout)?;
            stdout.flush()?;
        }
        OutputFormat::Yaml => {
            print_document(format, &serde_json::to_value(document)?)?;
        }
    }
    if document.runs_failed > 0 && !allow_failed_runs {
        anyhow::bail!(
            "{} of {} runs failed (the first: {}); the others are in {}",
            document.runs_failed,
            document.runs,
            document.failed_runs[0].id,
            out_dir.display()
        );
    }
    Ok(())
}
