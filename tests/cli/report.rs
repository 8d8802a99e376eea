//! `karpsim report` and the report readers on real runs: the comparison's
//! deltas are the differences of the summaries, and `report.html` is one
//! self-contained, deterministic page showing the runs' reasons.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use karpsim_report::compare::{comparison_rows, write_comparison_table};
use karpsim_report::html::escape;
use karpsim_report::schema::Summary;

use crate::util::{karpsim, single_error_line, stderr, stdout};

/// Runs a bundled scenario once per test process into the cargo test
/// scratch folder and returns the report folder.
fn run_once(scenario: &str, cell: &'static OnceLock<PathBuf>) -> &'static Path {
    cell.get_or_init(|| {
        let scratch = Path::new(env!("CARGO_TARGET_TMPDIR"));
        remove_reports_of_finished_runs(scratch, scenario);
        let out = scratch.join(format!("report-{scenario}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&out);
        let output = karpsim(&[
            "run",
            &format!("scenarios/{scenario}.yaml"),
            "--out",
            out.to_str().unwrap(),
        ]);
        assert!(output.status.success(), "{}", stderr(&output));
        out
    })
}

/// Removes the folders earlier test processes left (statics are never
/// dropped), where the system tells which processes are gone.
fn remove_reports_of_finished_runs(scratch: &Path, scenario: &str) {
    let processes = Path::new("/proc");
    let (Ok(entries), true) = (fs::read_dir(scratch), processes.is_dir()) else {
        return;
    };
    let prefix = format!("report-{scenario}-");
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(pid) = name.strip_prefix(&prefix)
            && pid.bytes().all(|b| b.is_ascii_digit())
            && !processes.join(pid).exists()
        {
            let _ = fs::remove_dir_all(entry.path());
        }
    }
}

/// The quickstart's report folder (variants `on-demand`, `spot-first`).
pub fn quickstart_report() -> &'static Path {
    static CELL: OnceLock<PathBuf> = OnceLock::new();
    run_once("quickstart", &CELL)
}

/// The karpenter-vs-ca report folder (a Karpenter and a CA variant).
fn karpenter_vs_ca_report() -> &'static Path {
    static CELL: OnceLock<PathBuf> = OnceLock::new();
    run_once("karpenter-vs-ca", &CELL)
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&fs::read_to_string(path).unwrap()).unwrap()
}

fn number(value: &serde_json::Value, pointer: &str) -> f64 {
    value
        .pointer(pointer)
        .and_then(serde_json::Value::as_f64)
        .unwrap_or_else(|| panic!("{pointer}"))
}

/// Each delta of the comparison equals the second summary's field minus
/// the first's, read straight from the JSON, and its text shows that
/// difference rounded.
#[test]
fn comparison_deltas_are_differences_of_the_summaries() {
    let dir = quickstart_report();
    let paths = [
        dir.join("on-demand/summary.json"),
        dir.join("spot-first/summary.json"),
    ];
    let summaries: Vec<Summary> = paths.iter().map(|p| Summary::read(p).unwrap()).collect();
    let (a, b) = (json(&paths[0]), json(&paths[1]));
    let rows = comparison_rows(&summaries);
    let checks = [
        ("total cost", "/total_cost_usd"),
        ("node-hours", "/node_hours"),
        ("peak nodes", "/peak_nodes"),
        ("evictions", "/churn/evictions"),
        ("nodeclaims launched", "/nodeclaims_launched"),
        ("spot share of node-hours", "/spot/spot_share_of_node_hours"),
        ("cpu allocation", "/cpu_allocation"),
        ("memory allocation", "/memory_allocation"),
    ];
    for (label, pointer) in checks {
        let row = rows.iter().find(|r| r.label == label).unwrap();
        let delta = row.deltas[0].as_ref().unwrap();
        let expected = number(&b, pointer) - number(&a, pointer);
        assert_eq!(delta.absolute, expected, "{label}");
        if number(&a, pointer) != 0.0 {
            let percent = delta.percent.unwrap();
            assert!((percent - expected / number(&a, pointer).abs() * 100.0).abs() < 1e-9);
        }
    }
    let cost = &rows[0];
    assert_eq!(cost.label, "total cost");
    let expected = number(&b, "/total_cost_usd") - number(&a, "/total_cost_usd");
    let text = &cost.deltas[0].as_ref().unwrap().text;
    let sign = if expected < 0.0 { "-" } else { "+" };
    let decimals = if expected.abs() >= 1.0 { 2 } else { 4 };
    assert!(
        text.starts_with(&format!("{sign}${:.*}", decimals, expected.abs())),
        "{text} vs {expected}"
    );
    let mut table = Vec::new();
    write_comparison_table(&summaries, &mut table).unwrap();
    let table = String::from_utf8(table).unwrap();
    assert!(
        table.lines().next().unwrap().contains("Δ spot-first"),
        "{table}"
    );
    assert!(table.contains(text.as_str()), "{table}");
}

/// `karpsim report` writes one self-contained page naming every variant,
/// with the reasons of disruption.csv / scaledown.csv, and the same page
/// again when run again.
#[test]
fn report_html_is_self_contained_and_deterministic() {
    let dir = karpenter_vs_ca_report();
    let output = karpsim(&["report", dir.to_str().unwrap()]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stdout(&output).contains("report.html"));
    let html = fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    for external in ["src=\"http", "href=\"http", "<script", "<link"] {
        assert!(!html.contains(external), "{external}");
    }
    for variant in ["karpenter", "cluster-autoscaler"] {
        assert!(
            html.contains(&format!("id=\"variant-{variant}\"")),
            "{variant}"
        );
    }
    assert!(html.contains("Why not consolidated") && html.contains("Why not removed"));
    for (file, column) in [
        ("karpenter/disruption.csv", 2),
        ("cluster-autoscaler/scaledown.csv", 2),
    ] {
        let mut reader = csv::Reader::from_path(dir.join(file)).unwrap();
        let reasons: Vec<String> = reader
            .records()
            .map(|r| r.unwrap()[column].to_string())
            .filter(|r| !r.contains('/'))
            .collect();
        assert!(!reasons.is_empty(), "{file} has reasons");
        for reason in reasons {
            assert!(html.contains(&escape(&reason)), "{reason}");
        }
    }
    let again = karpsim(&["report", dir.to_str().unwrap()]);
    assert!(again.status.success());
    assert_eq!(fs::read_to_string(dir.join("report.html")).unwrap(), html);
}

/// Two runs of the same scenario into different folders give the same
/// page: nothing of the folder's path or the clock gets in.
#[test]
fn report_html_is_the_same_for_the_same_run() {
    let first = quickstart_report();
    let dir = tempfile::tempdir().unwrap();
    let second = dir.path().join("elsewhere");
    let output = karpsim(&[
        "run",
        "scenarios/quickstart.yaml",
        "--out",
        second.to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    for report in [first, second.as_path()] {
        let output = karpsim(&["report", report.to_str().unwrap()]);
        assert!(output.status.success(), "{}", stderr(&output));
    }
    let read = |dir: &Path| fs::read(dir.join("report.html")).unwrap();
    assert_eq!(read(first), read(&second));
}

/// Charts found in the folders are inlined as SVG, without their prolog.
#[test]
fn report_html_inlines_charts() {
    let source = quickstart_report();
    let dir = tempfile::tempdir().unwrap();
    for variant in ["on-demand", "spot-first"] {
        let to = dir.path().join(variant);
        fs::create_dir_all(&to).unwrap();
        for entry in fs::read_dir(source.join(variant)).unwrap() {
            let entry = entry.unwrap();
            fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
        }
    }
    fs::write(
        dir.path().join("cost.svg"),
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 4 4\"><rect width=\"4\" height=\"2\"/></svg>\n",
    )
    .unwrap();
    let output = karpsim(&["report", dir.path().to_str().unwrap()]);
    assert!(output.status.success(), "{}", stderr(&output));
    let html = fs::read_to_string(dir.path().join("report.html")).unwrap();
    assert!(html.contains("<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 4 4\">"));
    assert!(!html.contains("<?xml"));
}

#[test]
fn report_of_a_folder_without_variants_fails_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let line = single_error_line(&karpsim(&["report", dir.path().to_str().unwrap()]));
    assert!(line.contains("no report here"), "{line}");
    assert!(!dir.path().join("report.html").exists());
}
