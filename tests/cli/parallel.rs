//! `karpsim run --jobs`: variants simulated in parallel write the same
//! report, byte for byte, as variants simulated one after another, and
//! `--profile` adds its table on stderr without changing a byte either.

use std::fs;
use std::path::{Path, PathBuf};

use crate::util::{karpsim, repo, stderr, stdout};

/// Every file under `dir`, as (path relative to `dir`, contents), sorted.
fn tree(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(current) = stack.pop() {
        for entry in fs::read_dir(&current).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let relative = path.strip_prefix(dir).unwrap().to_path_buf();
                files.push((relative, fs::read(&path).unwrap()));
            }
        }
    }
    files.sort();
    files
}

fn run(scenario: &str, out: &Path, extra: &[&str]) -> String {
    let mut args = vec!["run", scenario, "--out", out.to_str().unwrap()];
    args.extend_from_slice(extra);
    let output = karpsim(&args);
    assert!(output.status.success(), "{}", stderr(&output));
    stdout(&output).replace(out.to_str().unwrap(), "OUT")
}

/// The Karpenter and Cluster Autoscaler variants of karpenter-vs-ca on
/// their own threads give the same files and summary table as on one.
#[test]
fn parallel_variants_match_sequential_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let (sequential, parallel) = (dir.path().join("seq"), dir.path().join("par"));
    let table_seq = run(
        "scenarios/karpenter-vs-ca.yaml",
        &sequential,
        &["--jobs", "1"],
    );
    let table_par = run(
        "scenarios/karpenter-vs-ca.yaml",
        &parallel,
        &["--jobs", "3"],
    );
    assert_eq!(table_seq, table_par);
    let (left, right) = (tree(&sequential), tree(&parallel));
    assert!(left.len() >= 10, "expected the files of every variant");
    assert_eq!(
        left.iter().map(|(p, _)| p).collect::<Vec<_>>(),
        right.iter().map(|(p, _)| p).collect::<Vec<_>>()
    );
    for ((path, a), (_, b)) in left.iter().zip(&right) {
        assert!(a == b, "{} differs", path.display());
    }
}

/// Threads inside one variant (single-node simulations alongside
/// multi-node's search, candidate checks, node views, the kube-scheduler's
/// node scan) change no byte either: the first 15 minutes of large-week
/// (about 230 and 320 nodes, each pass with hundreds of consolidation
/// candidates), run one variant at a time on 1 and on 4 threads.
#[test]
fn threads_inside_a_variant_match_one_thread_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let scenarios = repo().join("scenarios");
    let root = format!("{}/", scenarios.display());
    let text = fs::read_to_string(scenarios.join("large-week.yaml"))
        .unwrap()
        .replacen("duration: 7d", "duration: 15m", 1)
        .replacen("- at: 3d10h", "- at: 10m", 1)
        .replace(
            "manifests: workloads/",
            &format!("manifests: {root}workloads/"),
        )
        .replace(
            "nodePools: nodepools/",
            &format!("nodePools: {root}nodepools/"),
        );
    assert!(text.contains("duration: 15m") && text.contains("- at: 10m"));
    let scenario = dir.path().join("large-week-15m.yaml");
    fs::write(&scenario, text).unwrap();
    let scenario = scenario.to_str().unwrap();
    let (one, four) = (dir.path().join("one"), dir.path().join("four"));
    for variant in ["spot-and-on-demand", "on-demand"] {
        run(scenario, &one, &["--jobs", "1", "--variant", variant]);
        run(scenario, &four, &["--jobs", "4", "--variant", variant]);
    }
    let (left, right) = (tree(&one), tree(&four));
    for variant in ["spot-and-on-demand", "on-demand"] {
        let summary = Path::new(variant).join("summary.json");
        assert!(left.iter().any(|(p, _)| *p == summary), "{variant} kept");
    }
    assert_eq!(
        left.iter().map(|(p, _)| p).collect::<Vec<_>>(),
        right.iter().map(|(p, _)| p).collect::<Vec<_>>()
    );
    for ((path, a), (_, b)) in left.iter().zip(&right) {
        assert!(a == b, "{} differs", path.display());
    }
}

/// `--profile` prints a row per engine component and the report
/// writing, and leaves the report unchanged.
#[test]
fn profile_prints_components_and_keeps_the_report() {
    let dir = tempfile::tempdir().unwrap();
    let (plain, profiled) = (dir.path().join("plain"), dir.path().join("profiled"));
    run("scenarios/quickstart.yaml", &plain, &[]);
    let mut args = vec!["run", "scenarios/quickstart.yaml", "--profile", "--out"];
    let out = profiled.to_str().unwrap().to_string();
    args.push(&out);
    let output = karpsim(&args);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stderr(&output);
    for component in [
        "scheduler",
        "provisioning",
        "disruption",
        "reporting",
        "total",
    ] {
        assert!(
            text.lines().any(|l| l.starts_with(component)),
            "no {component} row in: {text}"
        );
    }
    assert_eq!(tree(&plain), tree(&profiled));
}
