//! `karpsim chart`: redraw the charts of a report folder written by
//! `karpsim run`, and list the files written.

use std::io::{self, Write};
use std::path::PathBuf;

use anyhow::Result;

use karpsim_report::chart;

use super::report::lock_report_dir;

#[derive(clap::Args)]
pub struct ChartArgs {
    /// Report directory (as written by `karpsim run`), holding one folder
    /// per variant.
    pub report_dir: PathBuf,
}

pub fn chart_command(args: &ChartArgs) -> Result<()> {
    let _lock = lock_report_dir(&args.report_dir)?;
    let written = chart::redraw(&args.report_dir)?;
    let mut stdout = io::BufWriter::new(io::stdout().lock());
    for path in &written {
        writeln!(stdout, "{}", path.display())?;
    }
    stdout.flush()?;
    Ok(())
}
