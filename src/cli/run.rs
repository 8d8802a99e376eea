//! `karpsim run`: load a scenario, simulate each variant, write the report
//! folder (files, charts, `report.html`) and print the summary. The pieces
//! are shared with `karpsim compare`.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use karpsim::report::{chart, html, run as run_report};
use karpsim::scenario::{BundledRegions, Scenario, prepare};
use karpsim::sim::engine::{self, RunOutput};

use super::{OutputFormat, Progress, print_document};

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
    /// How to print the summary: a table, or the variants' summary.json
    /// documents as one JSON or YAML document.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = OutputFormat::Table)]
    pub output: OutputFormat,
    /// No progress bar and no per-variant timing lines.
    #[arg(short, long)]
    pub quiet: bool,
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
    let outputs = simulate(&scenario, args.variant.as_deref(), args.quiet)?;
    let out_dir = args.out.clone().unwrap_or_else(|| default_out(&scenario));
    write_report(&scenario, &outputs, &out_dir)?;
    match args.output {
        OutputFormat::Table => {
            let summaries: Vec<_> = outputs.iter().map(|o| &o.summary).collect();
            let mut stdout = io::BufWriter::new(io::stdout().lock());
            writeln!(stdout, "scenario {} ({})", scenario.name, scenario.duration)?;
            run_report::write_summary_table(&summaries, &mut stdout)?;
            writeln!(stdout, "report: {}", out_dir.display())?;
            stdout.flush()?;
        }
        format => {
            let variants = outputs
                .iter()
                .map(|o| run_report::summary_value(&scenario.name, o))
                .collect::<io::Result<Vec<_>>>()?;
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

/// Simulates the scenario's variants (or only `variant`), in file order.
pub fn simulate(scenario: &Scenario, variant: Option<&str>, quiet: bool) -> Result<Vec<RunOutput>> {
    let prepared = prepare(scenario, variant)?;
    for warning in &prepared.warnings {
        eprintln!("warning: {warning}");
    }
    let total_ms = scenario.duration.as_millis() * prepared.runs.len() as u64;
    let progress = Progress::new(total_ms / 1000, quiet);
    let mut outputs = Vec::new();
    for (index, input) in prepared.runs.iter().enumerate() {
        let started = std::time::Instant::now();
        let offset_ms = scenario.duration.as_millis() * index as u64;
        progress.set_message(&input.variant);
        let output = engine::run(input, &mut |t| {
            progress.set_position((offset_ms + t.as_millis()) / 1000);
        })?;
        if !quiet && !progress.is_visible() {
            eprintln!(
                "variant {}: simulated {} in {:.2}s",
                input.variant,
                scenario.duration,
                started.elapsed().as_secs_f64()
            );
        }
        outputs.push(output);
    }
    progress.finish();
    Ok(outputs)
}

/// Writes the report folder: per variant its files and charts (each
/// folder complete before it replaces an earlier one), then the comparison
/// chart and `report.html` beside them.
pub fn write_report(scenario: &Scenario, outputs: &[RunOutput], out_dir: &Path) -> Result<()> {
    let mut entries: Vec<(String, _)> = outputs
        .iter()
        .map(|output| {
            let name = scenario.name.as_str();
            (output.summary.variant.clone(), move |dir: &Path| {
                run_report::write_variant_files(name, output, dir)?;
                let series = chart::VariantSeries::read_dir(dir).map_err(io::Error::other)?;
                chart::write_variant_charts(&series, dir).map_err(io::Error::other)?;
                Ok(())
            })
        })
        .collect();
    run_report::atomic::write_dirs(out_dir, &mut entries)
        .with_context(|| format!("cannot write the report to {}", out_dir.display()))?;
    let order: Vec<String> = outputs.iter().map(|o| o.summary.variant.clone()).collect();
    let series = order
        .iter()
        .map(|variant| chart::VariantSeries::read_dir(&out_dir.join(variant)))
        .collect::<Result<Vec<_>, _>>()?;
    chart::write_comparison_charts(&series, out_dir)?;
    html::write_report_html_ordered(out_dir, &order)?;
    Ok(())
}
