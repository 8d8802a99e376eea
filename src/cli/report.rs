//! `karpsim report DIR`: (re)writes `DIR/report.html` from a report folder
//! written by `karpsim run`.

use std::path::PathBuf;

use anyhow::Result;

use karpsim::report::html::write_report_html;

#[derive(clap::Args)]
pub struct ReportArgs {
    /// Report directory (as written by `karpsim run --out DIR`).
    pub dir: PathBuf,
}

pub fn report_command(args: &ReportArgs) -> Result<()> {
    let path = write_report_html(&args.dir)?;
    println!("report: {}", path.display());
    Ok(())
}
