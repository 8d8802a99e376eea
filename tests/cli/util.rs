//! Running the binary and reading its output.

use std::path::{Path, PathBuf};
use std::process::Output;

use assert_cmd::Command;

/// The repository root (tests run with it as the working directory).
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Runs `karpsim` with `args` in `dir`.
pub fn karpsim_in(dir: &Path, args: &[&str]) -> Output {
    Command::cargo_bin("karpsim")
        .expect("binary is built")
        .current_dir(dir)
        .args(args)
        .output()
        .expect("karpsim runs")
}

/// Runs `karpsim` with `args` from the repository root.
pub fn karpsim(args: &[&str]) -> Output {
    karpsim_in(&repo(), args)
}

/// Standard output as text.
pub fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).expect("utf-8 stdout")
}

/// Standard error as text.
pub fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).expect("utf-8 stderr")
}

/// Asserts a failure with exactly one `error:` line on stderr (after any
/// warnings) and returns that line.
pub fn single_error_line(output: &Output) -> String {
    assert!(!output.status.success(), "expected failure, got success");
    assert_eq!(output.status.code(), Some(1));
    let text = stderr(output);
    let errors: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with("warning: "))
        .collect();
    assert_eq!(errors.len(), 1, "stderr: {text}");
    assert!(errors[0].starts_with("error: "), "stderr: {text}");
    errors[0].to_string()
}

/// The variants of `scenarios/quickstart.yaml`, in file order.
pub const QUICKSTART_VARIANTS: [&str; 2] = ["on-demand", "spot-first"];

/// Runs `scenarios/quickstart.yaml` into `out` and checks it succeeded
/// and printed its summary table.
pub fn run_quickstart(out: &Path) {
    let output = karpsim(&[
        "run",
        "scenarios/quickstart.yaml",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("total cost"), "{text}");
    for variant in QUICKSTART_VARIANTS {
        assert!(text.contains(variant), "{text}");
    }
}

/// A NodePool `default` that launches on-demand only.
pub const ON_DEMAND_POOL: &str = "
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
";

/// The entries of `dir` other than `.yaml` files, sorted: what a command
/// left beside the inputs a test wrote.
pub fn entries_but_yaml(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.ends_with(".yaml"))
        .collect();
    names.sort();
    names
}
