//! `karpsim compare` and the `-o json|yaml` / `--quiet` options of `run`.

use std::path::Path;

use crate::util::{karpsim, single_error_line, stderr, stdout};

fn json_file(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn number(value: &serde_json::Value, pointer: &str) -> f64 {
    value
        .pointer(pointer)
        .and_then(serde_json::Value::as_f64)
        .unwrap_or_else(|| panic!("{pointer} missing"))
}

/// The compare document's deltas are the differences of the two runs'
/// summary.json numbers, its variants are named after the NodePool files
/// in the order given, and the overlaid cost chart names both.
#[test]
fn compare_deltas_match_the_two_runs() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("cmp");
    let output = karpsim(&[
        "compare",
        "scenarios/quickstart.yaml",
        "--nodepools",
        "scenarios/nodepools/spot-first.yaml",
        "--nodepools",
        "scenarios/nodepools/on-demand.yaml",
        "--out",
        out.to_str().unwrap(),
        "-o",
        "json",
        "--quiet",
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stderr(&output), "", "--quiet prints nothing on stderr");
    let document: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(document["base"], "spot-first");
    assert_eq!(
        document["variants"],
        serde_json::json!(["spot-first", "on-demand"])
    );
    let base = json_file(&out.join("spot-first/summary.json"));
    let other = json_file(&out.join("on-demand/summary.json"));
    let rows = document["rows"].as_array().unwrap();
    for (key, pointer) in [
        ("total_cost_usd", "/total_cost_usd"),
        ("node_hours", "/node_hours"),
        ("peak_nodes", "/peak_nodes"),
        ("churn.evictions", "/churn/evictions"),
        ("cost_lower_bound_usd", "/cost_lower_bound_usd"),
    ] {
        let row = rows
            .iter()
            .find(|r| r["key"] == key)
            .unwrap_or_else(|| panic!("no row {key}"));
        let expected = number(&other, pointer) - number(&base, pointer);
        let delta = number(row, "/deltas_vs_first/on-demand/absolute");
        assert!(
            (delta - expected).abs() < 1e-9,
            "{key}: {delta} vs {expected}"
        );
        assert_eq!(number(row, "/values/spot-first"), number(&base, pointer));
    }
    // Every row is a summary.json key, once, with the file's very number;
    // whole numbers stay whole.
    let mut keys: Vec<&str> = rows.iter().map(|r| r["key"].as_str().unwrap()).collect();
    let count = keys.len();
    keys.sort_unstable();
    keys.dedup();
    assert_eq!(keys.len(), count, "no key twice: {keys:?}");
    assert!(keys.contains(&"cost_by_capacity_type.spot") && !keys.contains(&"spot"));
    for row in rows {
        let pointer = format!("/{}", row["key"].as_str().unwrap().replace('.', "/"));
        for (name, summary) in [("spot-first", &base), ("on-demand", &other)] {
            let in_file = summary.pointer(&pointer);
            let value = &row["values"][name];
            match in_file {
                Some(number) => assert_eq!(value, number, "{pointer} of {name}"),
                // A sub-row key one summary lacks counts as zero.
                None => assert_eq!(value.as_f64(), Some(0.0), "{pointer} of {name}"),
            }
        }
        if row["unit"] == "count" {
            assert!(row["values"]["on-demand"].is_u64(), "{row}");
            assert!(
                row["deltas_vs_first"]["on-demand"]["absolute"].is_i64(),
                "{row}"
            );
        }
    }
    let chart = std::fs::read_to_string(out.join("cost.svg")).unwrap();
    assert!(chart.contains("spot-first") && chart.contains("on-demand"));
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.find("spot-first").unwrap() < html.find("on-demand").unwrap());
}

/// A missing NodePool file is one error line naming it, and no report
/// folder is created.
#[test]
fn compare_missing_nodepool_file_is_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("cmp");
    let output = karpsim(&[
        "compare",
        "scenarios/quickstart.yaml",
        "--nodepools",
        "scenarios/nodepools/on-demand.yaml",
        "--nodepools",
        "nodepools/missing.yaml",
        "--out",
        out.to_str().unwrap(),
    ]);
    let line = single_error_line(&output);
    assert!(
        line.contains("nodepools/missing.yaml: cannot read NodePool file"),
        "{line}"
    );
    assert!(!out.exists());
}

/// One NodePool set alone is nothing to compare.
#[test]
fn compare_needs_two_variants() {
    let output = karpsim(&[
        "compare",
        "scenarios/quickstart.yaml",
        "--nodepools",
        "scenarios/nodepools/on-demand.yaml",
    ]);
    assert!(single_error_line(&output).contains("nothing to compare"));
}

/// `run -o json` prints the variants' summary.json documents unchanged
/// (same keys in the same order), `-o yaml` the same data as YAML, and the
/// table is not printed.
#[test]
fn run_prints_summaries_as_json_and_yaml() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("q");
    let run = |format: &str| {
        let output = karpsim(&[
            "run",
            "scenarios/quickstart.yaml",
            "--variant",
            "on-demand",
            "--out",
            out.to_str().unwrap(),
            "-o",
            format,
        ]);
        assert!(output.status.success(), "{}", stderr(&output));
        stdout(&output)
    };
    let json: serde_json::Value = serde_json::from_str(&run("json")).unwrap();
    let written = std::fs::read_to_string(out.join("on-demand/summary.json")).unwrap();
    assert_eq!(
        serde_json::to_string_pretty(&json["variants"][0]).unwrap() + "\n",
        written,
        "same document, same key order"
    );
    let yaml = run("yaml");
    assert!(!yaml.contains("total cost"), "no table in YAML output");
    let parsed: serde_json::Value = serde_saphyr::from_str(&yaml).unwrap();
    assert_eq!(parsed["variants"][0]["variant"], "on-demand");
    assert_eq!(
        parsed["variants"][0]["total_cost_usd"],
        json["variants"][0]["total_cost_usd"]
    );
}

/// `compare --nodepools` on a scenario without `variants:`: the NodePool
/// files are the variants.
#[test]
fn compare_needs_no_variants_in_the_scenario() {
    let dir = tempfile::tempdir().unwrap();
    let scenarios = crate::util::repo().join("scenarios");
    let text = std::fs::read_to_string(scenarios.join("quickstart.yaml")).unwrap();
    let workload = text.split("variants:").next().unwrap().replace(
        "manifests: workloads/",
        &format!("manifests: {}/workloads/", scenarios.display()),
    );
    std::fs::write(dir.path().join("workload.yaml"), workload).unwrap();
    let pools = |name: &str| scenarios.join("nodepools").join(name).display().to_string();
    let output = crate::util::karpsim_in(
        dir.path(),
        &[
            "compare",
            "workload.yaml",
            "--nodepools",
            &pools("on-demand.yaml"),
            "--nodepools",
            &pools("spot-first.yaml"),
            "--out",
            "cmp",
            "-q",
            "-o",
            "json",
        ],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let document: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(
        document["variants"],
        serde_json::json!(["on-demand", "spot-first"])
    );
    assert!(dir.path().join("cmp/spot-first/summary.json").is_file());
    // Without --nodepools the missing key is still the error.
    let alone = crate::util::karpsim_in(dir.path(), &["compare", "workload.yaml"]);
    assert!(single_error_line(&alone).contains("missing required key \"variants\""));
}
