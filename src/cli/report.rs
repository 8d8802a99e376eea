//! `karpsim report DIR`: (re)writes `DIR/report.html` from a report folder
//! written by `karpsim run`. Also the lock `chart` and `report` take
//! before they write into an existing report folder.

use std::path::{Path, PathBuf};

use anyhow::Result;

use karpsim_report::atomic::{ReportLock, remove_stale_temporaries};
use karpsim_report::html::write_report_html;

#[derive(clap::Args)]
pub struct ReportArgs {
    /// Report directory (as written by `karpsim run --out DIR`).
    pub dir: PathBuf,
}

pub fn report_command(args: &ReportArgs) -> Result<()> {
    let _lock = lock_report_dir(&args.dir)?;
    let path = write_report_html(&args.dir)?;
    println!("report: {}", path.display());
    Ok(())
}

/// Takes the lock of an existing report folder (so no run swaps it away
/// meanwhile) and removes the temporary files killed processes left in it
/// and its variant folders. A missing folder takes no lock: reading it
/// fails with its own message.
pub fn lock_report_dir(dir: &Path) -> Result<Option<ReportLock>> {
    if !dir.is_dir() {
        return Ok(None);
    }
    let lock = ReportLock::acquire(dir)?;
    remove_stale_temporaries(dir, None);
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            if entry.path().is_dir() {
                remove_stale_temporaries(&entry.path(), None);
            }
        }
    }
    Ok(Some(lock))
}
