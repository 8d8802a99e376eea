//! The `karpsim` command line: parse arguments, call the library, print.
//! Every failure becomes one `error:` line on stderr and exit status 1
//! (usage errors exit 2, as clap does).

use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand, ValueEnum};

use karpsim::karpenter::manifests;
use karpsim::report::instance_types::{self, SortBy};
use karpsim::report::run as run_report;
use karpsim::scenario::{BundledRegions, Scenario, prepare};
use karpsim::sim::engine;

#[derive(Parser)]
#[command(
    name = "karpsim",
    version,
    about = "Offline cluster-cost simulator for Kubernetes autoscaling (Karpenter and Cluster Autoscaler)"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// List the instance types of a region, or those a NodePool allows.
    InstanceTypes(InstanceTypesArgs),
    /// Simulate a scenario and write its report.
    Run(RunArgs),
}

#[derive(clap::Args)]
struct RunArgs {
    /// Scenario file (YAML).
    scenario: PathBuf,
    /// Report directory; each variant gets a folder inside it
    /// [default: reports/<scenario name>].
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Run only this variant.
    #[arg(long, value_name = "NAME")]
    variant: Option<String>,
    /// Skip unusable trace rows (counted as trace_rows_skipped in
    /// summary.json) instead of stopping at the first.
    #[arg(long)]
    skip_bad_rows: bool,
}

#[derive(clap::Args)]
struct InstanceTypesArgs {
    /// AWS region of the catalog.
    #[arg(long, default_value = "us-east-1")]
    region: String,
    /// YAML file with karpenter.sh/v1 NodePools (and their EC2NodeClasses);
    /// lists only the types they allow and explains the exclusions on stderr.
    #[arg(long, value_name = "FILE")]
    nodepool: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Output::Table)]
    output: Output,
    /// Row order.
    #[arg(long, value_enum, default_value_t = Sort::Name)]
    sort: Sort,
}

#[derive(Clone, Copy, ValueEnum)]
enum Output {
    Table,
    Csv,
    Json,
}

#[derive(Clone, Copy, ValueEnum)]
enum Sort {
    Name,
    Price,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::InstanceTypes(args) => instance_types_command(&args),
        Command::Run(args) => run_command(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) if is_broken_pipe(&error) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {}", one_line(&error));
            ExitCode::FAILURE
        }
    }
}

fn instance_types_command(args: &InstanceTypesArgs) -> Result<()> {
    let sort = match args.sort {
        Sort::Name => SortBy::Name,
        Sort::Price => SortBy::Price,
    };
    let listing = match &args.nodepool {
        None => instance_types::catalog_listing(&args.region, sort)?,
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read {}", path.display()))?;
            let loaded = manifests::load_str(&path.display().to_string(), &text)?;
            for warning in &loaded.warnings {
                eprintln!("warning: {warning}");
            }
            if loaded.nodepools.is_empty() {
                anyhow::bail!(
                    "{}: no karpenter.sh/v1 NodePool in this file",
                    path.display()
                );
            }
            instance_types::nodepool_listing(&args.region, &loaded, sort)?
        }
    };
    let written = write_listing(&listing, args.output);
    // The summary goes to stderr even when stdout was closed early (`| head`).
    instance_types::write_nodepool_summaries(&listing, &mut io::stderr().lock())?;
    match written {
        Err(error) if error.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        other => Ok(other?),
    }
}

fn run_command(args: &RunArgs) -> Result<()> {
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
    let total_ms = scenario.duration.as_millis() * prepared.runs.len() as u64;
    let bar = progress_bar(total_ms / 1000);
    let mut outputs = Vec::new();
    for (index, input) in prepared.runs.iter().enumerate() {
        let started = std::time::Instant::now();
        let offset_ms = scenario.duration.as_millis() * index as u64;
        if let Some(bar) = &bar {
            bar.set_message(input.variant.clone());
        }
        let output = engine::run(input, &mut |t| {
            if let Some(bar) = &bar {
                bar.set_position((offset_ms + t.as_millis()) / 1000);
            }
        })?;
        if bar.is_none() {
            eprintln!(
                "variant {}: simulated {} in {:.2}s",
                input.variant,
                scenario.duration,
                started.elapsed().as_secs_f64()
            );
        }
        outputs.push(output);
    }
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
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
    let summaries: Vec<_> = outputs.iter().map(|o| &o.summary).collect();
    let mut stdout = io::BufWriter::new(io::stdout().lock());
    writeln!(stdout, "scenario {} ({})", scenario.name, scenario.duration)?;
    run_report::write_summary_table(&summaries, &mut stdout)?;
    writeln!(stdout, "report: {}", out_dir.display())?;
    stdout.flush()?;
    Ok(())
}

/// A progress bar on stderr, only when stderr is a terminal.
fn progress_bar(total_seconds: u64) -> Option<indicatif::ProgressBar> {
    use std::io::IsTerminal;
    if !io::stderr().is_terminal() {
        return None;
    }
    let bar = indicatif::ProgressBar::new(total_seconds);
    let style = indicatif::ProgressStyle::with_template(
        "{msg:>16} [{bar:40}] {percent:>3}% simulated, {elapsed} elapsed",
    )
    .map(|s| s.progress_chars("=> "))
    .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
    bar.set_style(style);
    Some(bar)
}

fn write_listing(listing: &instance_types::Listing, output: Output) -> io::Result<()> {
    let mut out = io::BufWriter::new(io::stdout().lock());
    match output {
        Output::Table => instance_types::write_table_text(listing, &mut out)?,
        Output::Csv => instance_types::write_csv(listing, &mut out)?,
        Output::Json => instance_types::write_json(listing, &mut out)?,
    }
    out.flush()
}

/// The error and its causes on one line.
fn one_line(error: &anyhow::Error) -> String {
    let mut text = error.to_string();
    for cause in error.chain().skip(1) {
        let cause = cause.to_string();
        if !text.contains(&cause) {
            text.push_str(": ");
            text.push_str(&cause);
        }
    }
    text.replace('\n', " ")
}

fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error
        .chain()
        .filter_map(|c| c.downcast_ref::<io::Error>())
        .any(|e| e.kind() == io::ErrorKind::BrokenPipe)
}
