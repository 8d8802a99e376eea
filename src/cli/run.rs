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
    let pricing = &prepared.pricing;
    let mut entries: Vec<(String, _)> = outputs
        .iter()
        .map(|output| {
            let name = scenario.name.as_str();
            (
                output.summary.variant.clone(),
                move |dir: &std::path::Path| {
                    run_report::write_variant_files(name, pricing, output, dir)
                },
            )
        })
        .collect();
    run_report::atomic::write_dirs(&out_dir, &mut entries)
        .with_context(|| format!("cannot write the report to {}", out_dir.display()))?;
    let summaries: Vec<_> = outputs.iter().map(|o| &o.summary).collect();
    let mut stdout = io::BufWriter::new(io::stdout().lock());
    writeln!(stdout, "scenario {} ({})", scenario.name, scenario.duration)?;
    writeln!(stdout, "pricing: {pricing}")?;
    run_report::write_summary_table(&summaries, &mut stdout)?;
    writeln!(stdout, "report: {}", out_dir.display())?;
    stdout.flush()?;
    Ok(())
}
