//! `karpsim pricing`: refresh a region's On-Demand prices from the AWS
//! Price List API, import spot prices from `aws ec2
//! describe-spot-price-history` output, and show which snapshot is in use.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::pricing::{
    SnapshotSummary, bundled_snapshot, default_snapshot_path, spot_import, write_snapshot,
};
use karpsim_input::scenario::{BundledRegions, Scenario};

#[derive(clap::Args)]
pub struct PricingArgs {
    #[command(subcommand)]
    pub command: PricingCommand,
}

#[derive(clap::Subcommand)]
pub enum PricingCommand {
    /// Fetch a region's On-Demand Linux prices from the AWS Price List API
    /// and write a snapshot file (credentials and endpoint from the
    /// standard AWS configuration chain).
    Refresh(RefreshArgs),
    /// Import `aws ec2 describe-spot-price-history` JSON into a snapshot's
    /// per-zone spot prices (the latest price per type and zone).
    ImportSpot(ImportSpotArgs),
    /// Show which pricing snapshot is in use: its date, source and size.
    Show(ShowArgs),
}

#[derive(clap::Args)]
pub struct RefreshArgs {
    /// Region whose prices to fetch.
    #[arg(long)]
    pub region: String,
    /// Snapshot file to write [default: pricing-snapshots/refreshed/<region>.json].
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Price List endpoint to use instead of the configured one.
    #[arg(long, value_name = "URL")]
    pub endpoint_url: Option<String>,
}

#[derive(clap::Args)]
pub struct ImportSpotArgs {
    /// `describe-spot-price-history` output (JSON), or a CSV
    /// `time,instance_type,zone,price` with ISO-8601 times.
    pub file: PathBuf,
    /// Snapshot file to update; created from the bundled On-Demand prices
    /// when missing [default: pricing-snapshots/refreshed/<region>.json].
    #[arg(long, alias = "snapshot", value_name = "FILE")]
    pub out: Option<PathBuf>,
}

#[derive(clap::Args)]
pub struct ShowArgs {
    /// Region of the bundled snapshot to show (default us-east-1; with
    /// --snapshot, checked against the file's region).
    #[arg(long)]
    pub region: Option<String>,
    /// A snapshot file to show instead of the bundled one.
    #[arg(long, value_name = "FILE", conflicts_with = "scenario")]
    pub snapshot: Option<PathBuf>,
    /// Show the snapshot this scenario uses (its pricingSnapshot, or the
    /// bundled one of its region).
    #[arg(long, value_name = "FILE")]
    pub scenario: Option<PathBuf>,
}

pub fn pricing_command(args: &PricingArgs) -> Result<()> {
    match &args.command {
        PricingCommand::Refresh(args) => refresh(args),
        PricingCommand::ImportSpot(args) => import_spot(args),
        PricingCommand::Show(args) => show(args),
    }
}

#[cfg(feature = "aws")]
fn refresh(args: &RefreshArgs) -> Result<()> {
    // Only bundled regions: a catalog needs the region's zones.
    bundled_snapshot(&args.region)?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64 * 1000)
        .unwrap_or(0);
    let snapshot = crate::pricing::fetch::refresh(
        &args.region,
        args.endpoint_url.as_deref(),
        karpsim_sim::spot::Timestamp::from_unix_millis(now),
    )
    .with_context(|| format!("pricing refresh {}", args.region))?;
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| default_snapshot_path(&args.region));
    write_snapshot(&out, &snapshot).with_context(|| format!("cannot write {}", out.display()))?;
    println!(
        "wrote {}: {} On-Demand prices for {} ({})",
        out.display(),
        snapshot.on_demand.len(),
        snapshot.region,
        snapshot.source
    );
    Ok(())
}

#[cfg(not(feature = "aws"))]
fn refresh(_args: &RefreshArgs) -> Result<()> {
    anyhow::bail!(
        "this karpsim was built without AWS support (cargo feature `aws`), so `pricing refresh` \
         is unavailable; rebuild with default features"
    )
}

fn import_spot(args: &ImportSpotArgs) -> Result<()> {
    let shown = args.file.display().to_string();
    let text =
        std::fs::read_to_string(&args.file).with_context(|| format!("cannot read {shown}"))?;
    let import = spot_import::read_spot_history(&text, &shown)?;
    let target = args
        .out
        .clone()
        .unwrap_or_else(|| default_snapshot_path(import.region));
    let (mut snapshot, created) = if target.exists() {
        (
            karpsim_input::price_snapshot::read_price_snapshot(&target)?,
            false,
        )
    } else {
        (bundled_snapshot(import.region)?, true)
    };
    let name = args
        .file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or(shown);
    let counts = spot_import::merge_spot(&mut snapshot, &import, &name)?;
    write_snapshot(&target, &snapshot)
        .with_context(|| format!("cannot write {}", target.display()))?;
    let mut out = io::stdout().lock();
    writeln!(
        out,
        "{} {}: {} zone prices of {} types from {} Linux rows (latest {}){}",
        if created { "created" } else { "updated" },
        target.display(),
        counts.imported,
        import.prices.len(),
        import.rows,
        import.latest,
        if created {
            " over the bundled On-Demand prices"
        } else {
            ""
        }
    )?;
    if counts.without_on_demand > 0 {
        eprintln!(
            "warning: {} imported types have no On-Demand price in the snapshot; runs ignore them",
            counts.without_on_demand
        );
    }
    Ok(())
}

fn show(args: &ShowArgs) -> Result<()> {
    let summary = match (&args.snapshot, &args.scenario) {
        (Some(path), _) => {
            summarize_file(path, path.display().to_string(), args.region.as_deref())?
        }
        (None, Some(scenario_path)) => {
            let scenario = Scenario::load(scenario_path, &BundledRegions)?;
            match &scenario.pricing_snapshot {
                Some(pin) => {
                    summarize_file(&pin.path, pin.written.clone(), Some(&scenario.region))?
                }
                None => SnapshotSummary::of(&scenario.region, None)?,
            }
        }
        (None, None) => SnapshotSummary::of(args.region.as_deref().unwrap_or("us-east-1"), None)?,
    };
    let mut out = io::BufWriter::new(io::stdout().lock());
    summary.write(&mut out)?;
    out.flush()?;
    Ok(())
}

fn summarize_file(path: &Path, shown: String, region: Option<&str>) -> Result<SnapshotSummary> {
    let snapshot = karpsim_input::price_snapshot::read_price_snapshot(path)?;
    if let Some(region) = region
        && region != snapshot.region
    {
        anyhow::bail!("{shown} holds prices for {}, not {region}", snapshot.region);
    }
    Ok(SnapshotSummary::of(
        &snapshot.region,
        Some((&snapshot, shown)),
    )?)
}
