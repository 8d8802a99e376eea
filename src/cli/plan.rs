//! `karpsim plan SNAPSHOT [--nodepools FILE]... [--region R] [-o table|json|yaml]`:
//! what Karpenter would do next on a cluster snapshot.

use std::io::{self, Write};
use std::path::PathBuf;

use anyhow::Result;

use karpsim_input::scenario::prepare::prepare_plan;
use karpsim_report::plan::{PlanContext, PlanReport};

use super::OutputFormat;

#[derive(clap::Args)]
pub struct PlanArgs {
    /// `kubectl get nodes,pods,pdb,deployments,replicasets,statefulsets,daemonsets,jobs,nodeclaims,nodepools,ec2nodeclasses -A -o yaml`
    /// output (YAML or JSON), or a folder of such files.
    pub snapshot: PathBuf,
    /// Proposed NodePools (and EC2NodeClasses) replacing the snapshot's.
    #[arg(long = "nodepools", value_name = "FILE")]
    pub nodepools: Vec<PathBuf>,
    /// AWS region [default: the nodes' topology.kubernetes.io/region].
    #[arg(long)]
    pub region: Option<String>,
    /// Zones Karpenter may launch in, comma-separated [default: every zone
    /// of the region] (a snapshot does not say which zones its subnets
    /// cover).
    #[arg(long, value_delimiter = ',', value_name = "ZONE,...")]
    pub zones: Vec<String>,
    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value_t = OutputFormat::Table)]
    pub output: OutputFormat,
    /// Errors only.
    #[arg(short, long)]
    pub quiet: bool,
}

pub fn plan_command(args: &PlanArgs) -> Result<()> {
    let input = prepare_plan(
        &args.snapshot,
        &args.nodepools,
        args.region.as_deref(),
        &args.zones,
    )?;
    let mut warnings = super::Warnings::new(args.quiet);
    for warning in &input.warnings {
        warnings.add(warning, &[]);
    }
    warnings.flush();
    let plan = karpsim_sim::engine::plan(&input.run, input.proposed.clone())?;
    let state = input.run.initial.as_deref();
    let context = PlanContext {
        source: &args.snapshot.display().to_string(),
        time: state.and_then(|s| s.time.as_deref()).unwrap_or(""),
        region: &input.region,
        allocatable: &input.allocatable_differences,
    };
    let report = PlanReport::new(&plan, &context);
    match args.output {
        OutputFormat::Table => {
            let mut out = io::stdout().lock();
            out.write_all(report.table().as_bytes())?;
            out.flush()?;
            Ok(())
        }
        format => super::print_document(format, &serde_json::to_value(&report)?),
    }
}
