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
