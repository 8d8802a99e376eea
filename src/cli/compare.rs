//! `karpsim compare`: run one scenario's workload under several NodePool
//! sets (or the scenario's own variants), same seed, and print them side by
//! side with each one's difference from the first.

use std::io::{self, Write};
use std::path::PathBuf;

use anyhow::{Context, Result};

use karpsim_input::scenario::{BundledRegions, Scenario};
use karpsim_report::compare;
use karpsim_report::schema::{SUMMARY_FILE, Summary};

use super::run::{Simulated, SimulationArgs, default_out, print_profile, simulate, write_report};
use super::{OutputFormat, Warnings, print_document};

#[derive(clap::Args)]
pub struct CompareArgs {
    /// Scenario file (YAML) whose workload, seed and cluster settings are
    /// used.
    pub scenario: PathBuf,
    /// A file of karpenter.sh/v1 NodePools (and EC2NodeClasses): one variant
    /// each, named after the file, in the order given; the first is the
    /// base of the deltas. Without it, the scenario's own variants are
    /// compared; with it, the scenario needs no `variants:`.
    #[arg(long = "nodepools", value_name = "FILE")]
    pub nodepools: Vec<PathBuf>,
    /// Report directory [default: reports/<scenario name>-compare].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Skip unusable trace rows instead of stopping at the first.
    #[arg(long)]
    pub skip_bad_rows: bool,
    /// How to print the comparison.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = OutputFormat::Table)]
    pub output: OutputFormat,
    #[command(flatten)]
    pub sim: SimulationArgs,
}

pub fn compare_command(args: &CompareArgs) -> Result<()> {
    let mut scenario = load_scenario(args)?;
    scenario.set_skip_bad_rows(args.skip_bad_rows);
    if !args.nodepools.is_empty() {
        scenario.set_nodepool_variants(&args.nodepools)?;
    }
    if scenario.variants.len() < 2 {
        anyhow::bail!(
            "{}: nothing to compare: one variant (give --nodepools FILE twice or more)",
            args.scenario.display()
        );
    }
    let out_dir = args.out.clone().unwrap_or_else(|| {
        let mut dir = default_out(&scenario);
        dir.set_file_name(format!("{}-compare", scenario.name));
        dir
    });
    let Simulated {
        outputs,
        profile,
        pricing,
        staged,
    } = simulate(
        &scenario,
        None,
        &args.sim,
        &out_dir,
        &mut Warnings::new(args.sim.quiet),
    )?;
    let report_started = std::time::Instant::now();
    write_report(&scenario, &pricing, &outputs, staged, &out_dir)?;
    if let Some(profile) = profile {
        print_profile(&profile, report_started.elapsed());
    }
    let summaries = outputs
        .iter()
        .map(|output| {
            let path = out_dir.join(&output.summary.variant).join(SUMMARY_FILE);
            Summary::read(&path).with_context(|| format!("cannot read {}", path.display()))
        })
        .collect::<Result<Vec<_>>>()?;
    match args.output {
        OutputFormat::Table => {
            let mut stdout = io::BufWriter::new(io::stdout().lock());
            writeln!(
                stdout,
                "scenario {} ({}), seed {}: {} vs {}",
                scenario.name,
                scenario.duration,
                scenario.seed,
                summaries[0].variant,
                summaries[1..]
                    .iter()
                    .map(|s| s.variant.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )?;
            compare::write_comparison_table(&summaries, &mut stdout)?;
            writeln!(stdout, "cost chart: {}", out_dir.join("cost.svg").display())?;
            writeln!(stdout, "report: {}", out_dir.join("report.html").display())?;
            stdout.flush()?;
        }
        format => {
            let document = serde_json::json!({
                "scenario": scenario.name,
                "seed": scenario.seed,
                "base": summaries[0].variant,
                "variants": summaries.iter().map(|s| s.variant.as_str()).collect::<Vec<_>>(),
                "report_dir": out_dir.display().to_string(),
                "rows": compare::comparison_json_rows(&summaries),
            });
            print_document(format, &document)?;
        }
    }
    Ok(())
}

/// Reads the scenario. With `--nodepools`, a scenario without `variants:`
/// is accepted: the NodePool files are its variants.
fn load_scenario(args: &CompareArgs) -> Result<Scenario> {
    Ok(if args.nodepools.is_empty() {
        Scenario::load(&args.scenario, &BundledRegions)?
    } else {
        Scenario::load_without_variants(&args.scenario, &BundledRegions)?
    })
}
