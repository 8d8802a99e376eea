//! The `karpsim` command line: parse arguments, call the library, print.
//! Every failure becomes one `error:` line on stderr and exit status 1
//! (usage errors exit 2, as clap does).

mod cli;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use cli::instance_types::InstanceTypesArgs;
use cli::pricing::PricingArgs;
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
    /// List the instance types of a region, or those a NodePool allows.
    InstanceTypes(InstanceTypesArgs),
    /// Simulate a scenario and write its report.
    Run(RunArgs),
    /// Refresh, import and inspect pricing snapshots.
    Pricing(PricingArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::InstanceTypes(args) => cli::instance_types::instance_types_command(&args),
        Command::Run(args) => cli::run::run_command(&args),
        Command::Pricing(args) => cli::pricing::pricing_command(&args),
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
