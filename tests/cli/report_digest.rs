//! Report digests: every report file of the shipped quickstart and
//! consolidation-day scenarios (all variants), hashed. Speed work on the
//! solve and the disruption simulations must keep every decision, so these
//! reports must stay byte-for-byte the same.
//!
//! The expected digests were produced by the code before the solve inputs
//! were prepared once and reused across solves (the pre-optimisation
//! implementation that rebuilt templates and topology domains on every
//! solve); they are not derived by hand. A change to either means some
//! decision, timing or message in a report changed.

use std::fs;
use std::path::{Path, PathBuf};

use crate::util::{karpsim, stderr};

/// FNV-1a, 64 bits, over each file's path relative to `root` and its bytes,
/// files in path order.
fn digest_dir(root: &Path) -> String {
    let mut files: Vec<PathBuf> = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files.sort();
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut feed = |bytes: &[u8]| {
        for &byte in bytes {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    };
    for file in &files {
        let relative = file.strip_prefix(root).unwrap().to_string_lossy();
        feed(relative.replace('\\', "/").as_bytes());
        feed(b"\n");
        feed(&fs::read(file).unwrap());
    }
    format!("{hash:016x} over {} files", files.len())
}

fn report_digest(scenario: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("report");
    let output = karpsim(&[
        "run",
        &format!("scenarios/{scenario}.yaml"),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    digest_dir(&out)
}

/// Both quickstart variants, every report file.
#[test]
fn quickstart_reports_match_pinned_digest() {
    assert_eq!(
        report_digest("quickstart"),
        "57094ace5c086a2f over 10 files"
    );
}

/// Both consolidation-day variants, every report file: consolidation
/// decisions (multi- and single-node simulations) shape these reports.
#[test]
fn consolidation_day_reports_match_pinned_digest() {
    assert_eq!(
        report_digest("consolidation-day"),
        "2acb74b1b25bff80 over 10 files"
    );
}
