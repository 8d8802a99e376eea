//! `karpsim instance-types`: list a region's catalog, or what NodePools allow.

use std::io::{self, Write};
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::ValueEnum;

use karpsim_input::nodepools;
use karpsim_report::instance_types::{self, SortBy};

#[derive(clap::Args)]
pub struct InstanceTypesArgs {
    /// AWS region of the catalog.
    #[arg(long, default_value = "us-east-1")]
    pub region: String,
    /// YAML file with karpenter.sh/v1 NodePools (and their EC2NodeClasses);
    /// lists only the types they allow and explains the exclusions on stderr.
    #[arg(long = "nodepools", alias = "nodepool", value_name = "FILE")]
    pub nodepools: Option<PathBuf>,
    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value_t = Output::Table)]
    pub output: Output,
    /// Row order.
    #[arg(long, value_enum, default_value_t = Sort::Name)]
    pub sort: Sort,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum Output {
    Table,
    Csv,
    Json,
    Yaml,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum Sort {
    Name,
    Price,
}

pub fn instance_types_command(args: &InstanceTypesArgs) -> Result<()> {
    let sort = match args.sort {
        Sort::Name => SortBy::Name,
        Sort::Price => SortBy::Price,
    };
    let listing = match &args.nodepools {
        None => instance_types::catalog_listing(&args.region, sort)?,
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read {}", path.display()))?;
            let loaded = nodepools::load_str(&path.display().to_string(), &text)?;
            let mut warnings = super::Warnings::new(false);
            for warning in &loaded.warnings {
                warnings.add(&warning.to_string(), &[]);
            }
            warnings.flush();
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
        Output::Yaml => {
            let text = serde_saphyr::to_string(listing).map_err(io::Error::other)?;
            out.write_all(text.as_bytes())?;
        }
    }
    out.flush()
}
