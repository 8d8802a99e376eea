//! Golden report digests: the whole report of every bundled scenario, file
//! by file, pinned by SHA-256 in `tests/golden/reports.sha256`. A change
//! that alters any byte of any report (a number, an event message, a chart
//! pixel, the HTML page) fails here, naming the files that differ, are
//! missing or are new; a change meant to keep reports identical (a
//! refactor) passes only if it does.
//!
//! Every `scenarios/*.yaml` is run with `karpsim run` from the repository
//! root, so a scenario added without digests fails too. `large-week.yaml`
//! (a week, far too long for a debug build) is replaced by
//! `tests/fixtures/scenarios/large-week-first-hours.yaml`, its first two
//! hours; [`large_week_fixture_follows_the_bundled_scenario`] keeps the two
//! in step. One scenario also runs on a single thread (`--jobs 1`) and must
//! give the same digests as on the default thread count.
//!
//! No file is left out: a report holds no path (of the scenario, its
//! inputs or `--out`), no date or duration of the run and nothing of the
//! host (its dates are the simulated ones and the pricing snapshot's), so
//! the runs write into a temporary folder and the digests are the same on
//! every machine and at any `--jobs`.
//!
//! When reports are meant to change, regenerate the digests with
//!
//! ```sh
//! KARPSIM_BLESS=1 cargo test --test cli golden
//! ```
//!
//! and commit the new `tests/golden/reports.sha256` with a message saying
//! why the reports changed.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Instant;

use sha2::{Digest, Sha256};

use crate::util::{karpsim, repo, stderr};

/// The checked-in digests, relative to the repository root.
const DIGESTS_FILE: &str = "tests/golden/reports.sha256";

/// Set (to anything but empty or `0`) to rewrite [`DIGESTS_FILE`] from this
/// run instead of comparing with it.
const BLESS_VARIABLE: &str = "KARPSIM_BLESS";

/// How to regenerate the digests, for failure messages.
const REGENERATE: &str = "KARPSIM_BLESS=1 cargo test --test cli golden";

/// The bundled scenario too long for a debug build, and the copy of its
/// first hours run instead.
const LONG_SCENARIO: &str = "scenarios/large-week.yaml";
const LONG_SCENARIO_STAND_IN: &str = "tests/fixtures/scenarios/large-week-first-hours.yaml";

/// The scenario that also runs with `--jobs 1`: cheap, and with more than
/// one thread its consolidation runs multi-node and single-node side by
/// side.
const SINGLE_THREAD_SCENARIO: &str = "alibaba-replay";

/// One `karpsim run` of the golden set.
struct GoldenRun {
    /// Names its files in the digests: the scenario file's stem.
    label: String,
    /// The scenario file, relative to the repository root.
    scenario: String,
    /// Extra arguments after `run <scenario> --out <dir>`.
    extra_args: &'static [&'static str],
}

/// Every bundled scenario (the long one by its stand-in), sorted by label.
fn golden_scenarios() -> Vec<GoldenRun> {
    let mut runs: Vec<GoldenRun> = fs::read_dir(repo().join("scenarios"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "yaml"))
        .map(|path| {
            let name = path.file_name().unwrap().to_str().unwrap();
            let scenario = format!("scenarios/{name}");
            let scenario = if scenario == LONG_SCENARIO {
                LONG_SCENARIO_STAND_IN.to_string()
            } else {
                scenario
            };
            GoldenRun {
                label: Path::new(&scenario)
                    .file_stem()
                    .unwrap()
                    .to_str()
                    .unwrap()
                    .to_string(),
                scenario,
                extra_args: &[],
            }
        })
        .collect();
    runs.sort_by(|a, b| a.label.cmp(&b.label));
    runs
}

/// Runs `run` into `out` and returns the digest of every file of the
/// report, keyed `<label>/<relative path>`, with the run's wall time.
fn run_and_digest(run: &GoldenRun, out: &Path) -> (BTreeMap<String, String>, f64) {
    let started = Instant::now();
    let mut args = vec!["run", run.scenario.as_str(), "--out", out.to_str().unwrap()];
    args.extend_from_slice(run.extra_args);
    let output = karpsim(&args);
    assert!(
        output.status.success(),
        "karpsim {}: {}",
        args.join(" "),
        stderr(&output)
    );
    let seconds = started.elapsed().as_secs_f64();
    let digests = files_under(out)
        .into_iter()
        .map(|relative| {
            let bytes = fs::read(out.join(&relative)).unwrap();
            (format!("{}/{relative}", run.label), sha256_hex(&bytes))
        })
        .collect();
    (digests, seconds)
}

/// Every file under `dir` as a `/`-separated path relative to it, sorted.
fn files_under(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut pending = vec![PathBuf::new()];
    while let Some(relative) = pending.pop() {
        for entry in fs::read_dir(dir.join(&relative)).unwrap() {
            let entry = entry.unwrap();
            let path = relative.join(entry.file_name());
            if entry.file_type().unwrap().is_dir() {
                pending.push(path);
            } else {
                let parts: Vec<&str> = path
                    .components()
                    .map(|c| c.as_os_str().to_str().expect("UTF-8 file name"))
                    .collect();
                found.push(parts.join("/"));
            }
        }
    }
    found.sort();
    found
}

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The digests file's text: `<hex>  <label>/<relative path>` per line,
/// sorted by name.
fn digests_text(digests: &BTreeMap<String, String>) -> String {
    digests
        .iter()
        .map(|(name, hex)| format!("{hex}  {name}\n"))
        .collect()
}

/// Reads [`DIGESTS_FILE`] into name → digest.
fn read_digests(path: &Path) -> BTreeMap<String, String> {
    let text = fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {DIGESTS_FILE}: {e}\nto create it: {REGENERATE}",));
    text.lines()
        .enumerate()
        .map(|(i, line)| {
            let (hex, name) = line.split_once("  ").unwrap_or_else(|| {
                panic!(
                    "{DIGESTS_FILE}:{}: expected `<sha256>  <file>`: {line:?}",
                    i + 1
                )
            });
            (name.to_string(), hex.to_string())
        })
        .collect()
}

/// Replaces the file at `path` with `text` in one step (a temporary file
/// beside it, then a rename), so an interrupted run leaves the old file.
fn write_atomically(path: &Path, text: &str) {
    let temporary = path.with_extension("sha256.tmp");
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(&temporary, text).unwrap();
    fs::rename(&temporary, path).unwrap();
}

/// What differs between the checked-in digests and this run's: one line
/// per scenario with no digest at all (a newly added one), then one per
/// file that differs, is new or is missing, in name order; empty when
/// they agree.
fn mismatches(
    expected: &BTreeMap<String, String>,
    actual: &BTreeMap<String, String>,
) -> Vec<String> {
    let label = |name: &str| name.split('/').next().unwrap().to_string();
    let known: BTreeSet<String> = expected.keys().map(|name| label(name)).collect();
    let mut new_scenarios: BTreeMap<String, usize> = BTreeMap::new();
    let mut files: Vec<(&str, String)> = Vec::new();
    for (name, hex) in actual {
        match expected.get(name) {
            Some(wanted) if wanted == hex => {}
            Some(wanted) => files.push((
                name,
                format!("differs: {name} (expected {wanted}, got {hex})"),
            )),
            None if !known.contains(&label(name)) => {
                *new_scenarios.entry(label(name)).or_default() += 1;
            }
            None => files.push((name, format!("new:     {name}"))),
        }
    }
    for name in expected.keys().filter(|name| !actual.contains_key(*name)) {
        files.push((name, format!("missing: {name}")));
    }
    files.sort();
    new_scenarios
        .into_iter()
        .map(|(label, count)| {
            format!("no digests for scenario {label} ({count} files): newly added?")
        })
        .chain(files.into_iter().map(|(_, line)| line))
        .collect()
}

/// Every bundled scenario's report matches its checked-in digests, and
/// one scenario's report is the same on one thread as on the default
/// number.
#[test]
fn every_bundled_scenario_report_matches_its_golden_digests() {
    let dir = tempfile::tempdir().unwrap();
    let scenarios = golden_scenarios();
    let single_thread = GoldenRun {
        label: SINGLE_THREAD_SCENARIO.to_string(),
        scenario: format!("scenarios/{SINGLE_THREAD_SCENARIO}.yaml"),
        extra_args: &["--jobs", "1"],
    };
    // All runs side by side, each writing and digesting its own folder.
    let (results, (single_thread_digests, single_thread_seconds)) = std::thread::scope(|scope| {
        // A failed run's panic, with its message, fails the test.
        let finish = |handle: std::thread::ScopedJoinHandle<'_, _>| {
            handle
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        };
        let single = scope.spawn(|| run_and_digest(&single_thread, &dir.path().join("jobs-1")));
        let handles: Vec<_> = scenarios
            .iter()
            .map(|run| scope.spawn(|| run_and_digest(run, &dir.path().join(&run.label))))
            .collect();
        let results: Vec<(BTreeMap<String, String>, f64)> =
            handles.into_iter().map(finish).collect();
        (results, finish(single))
    });
    let mut actual = BTreeMap::new();
    for (run, (digests, seconds)) in scenarios.iter().zip(results) {
        eprintln!("{}: {seconds:.1} s", run.label);
        actual.extend(digests);
    }
    eprintln!("{SINGLE_THREAD_SCENARIO} --jobs 1: {single_thread_seconds:.1} s");

    let on_default_threads: BTreeMap<String, String> = actual
        .iter()
        .filter(|(name, _)| name.starts_with(&format!("{SINGLE_THREAD_SCENARIO}/")))
        .map(|(name, hex)| (name.clone(), hex.clone()))
        .collect();
    let thread_differences = mismatches(&on_default_threads, &single_thread_digests);
    assert!(
        thread_differences.is_empty(),
        "{SINGLE_THREAD_SCENARIO}: the report with --jobs 1 is not the one with the default \
         number of threads (expected: default threads, got: --jobs 1):\n{}",
        thread_differences.join("\n")
    );

    let path = repo().join(DIGESTS_FILE);
    if std::env::var(BLESS_VARIABLE).is_ok_and(|v| !v.is_empty() && v != "0") {
        write_atomically(&path, &digests_text(&actual));
        eprintln!(
            "{BLESS_VARIABLE}: wrote {} digests to {DIGESTS_FILE}",
            actual.len()
        );
        return;
    }
    let expected = read_digests(&path);
    let lines = mismatches(&expected, &actual);
    assert!(
        lines.is_empty(),
        "reports differ from {DIGESTS_FILE}:\n{}\n\
         If the change is meant to alter reports, regenerate the digests with\n  \
         {REGENERATE}\nand commit them saying why the reports changed.",
        lines.join("\n")
    );
}

/// The stand-in for `large-week.yaml` is the bundled scenario but for its
/// length, the storm's time and the paths back to the bundled files, so
/// the golden digests follow any other edit of large-week only once the
/// copy is updated too.
#[test]
fn large_week_fixture_follows_the_bundled_scenario() {
    let from_name = |path: &str| {
        let text = fs::read_to_string(repo().join(path)).unwrap();
        let start = text.find("\nname: ").expect("a name line") + 1;
        text[start..].to_string()
    };
    let expected = from_name(LONG_SCENARIO)
        .replacen("\nduration: 7d\n", "\nduration: 2h\n", 1)
        .replacen("    - at: 3d10h\n", "    - at: 1h\n", 1)
        .replace(" workloads/", " ../../../scenarios/workloads/")
        .replace(" nodepools/", " ../../../scenarios/nodepools/");
    assert!(
        from_name(LONG_SCENARIO_STAND_IN) == expected,
        "{LONG_SCENARIO_STAND_IN} is no longer {LONG_SCENARIO} with only its duration, storm \
         time and paths changed: bring the copy in step (then regenerate the digests: \
         {REGENERATE})"
    );
}
