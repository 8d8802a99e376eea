//! The `karpsim` command line: parse arguments, call the library, print.
//! Every failure becomes one `error:` line on stderr and exit status 1
//! (usage errors exit 2, as clap does).

mod cli;
mod pricing;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use cli::chart::ChartArgs;
use cli::compare::CompareArgs;
use cli::explain::ExplainArgs;
use cli::instance_types::InstanceTypesArgs;
use cli::pricing::PricingArgs;
use cli::report::ReportArgs;
use cli::run::RunArgs;

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
    /// Simulate a scenario and write its report.
    Run(RunArgs),
    /// Run a scenario's workload under several NodePool sets and compare them.
    Compare(CompareArgs),
    /// Redraw the charts (SVG and PNG) of a report written by `run`.
    Chart(ChartArgs),
    /// (Re)write DIR/report.html: one self-contained page for a report folder.
    Report(ReportArgs),
    /// Show one NodeClaim's or pod's decision history from a report folder.
    Explain(ExplainArgs),
    /// What Karpenter would do next on a cluster snapshot (kubectl get … -o yaml).
    Plan(cli::plan::PlanArgs),
    /// Run a sweep (configurations × seeds) or one shard of it; merge
    /// shards; print the Kubernetes Jobs that run it on a cluster.
    Sweep(cli::sweep::SweepArgs),
    /// Refresh, import and inspect pricing snapshots.
    Pricing(PricingArgs),
    /// List the instance types of a region, or those a NodePool allows.
    InstanceTypes(InstanceTypesArgs),
    /// Check a recording (audit log, SimKube trace, kubereplay capture, trace CSV) before replaying it.
    Trace(cli::trace::TraceArgs),
}

/// The simulation allocates and frees many small values per decision (the
/// placement views of every node in each consolidation what-if); mimalloc
/// does this with far less time than the system allocator. The allocator
/// changes no output.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    // Before any thread starts, so every thread leaves stop requests to
    // the watcher.
    cli::signals::install();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Chart(args) => cli::chart::chart_command(&args),
        Command::Compare(args) => cli::compare::compare_command(&args),
        Command::InstanceTypes(args) => cli::instance_types::instance_types_command(&args),
        Command::Run(args) => cli::run::run_command(&args),
        Command::Report(args) => cli::report::report_command(&args),
        Command::Explain(args) => cli::explain::explain_command(&args),
        Command::Plan(args) => cli::plan::plan_command(&args),
        Command::Pricing(args) => cli::pricing::pricing_command(&args),
        Command::Sweep(args) => cli::sweep::sweep_command(&args),
        Command::Trace(args) => cli::trace::trace_command(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) if cli::is_broken_pipe(&error) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {}", cli::one_line(&error));
            ExitCode::FAILURE
        }
    }
}
