//! `karpsim run` on manifests the API server would refuse: one error line
//! naming file, line, column and field, exit 1, no report left behind.

use std::fs;

use crate::util::{ON_DEMAND_POOL, karpsim_in, single_error_line};

const SCENARIO: &str = "name: typo\nduration: 1h\nworkloads:\n  - manifests: web.yaml\nvariants:\n  - name: v\n    karpenter: {nodePools: pool.yaml}\n";

/// Runs the scenario over `workload` and returns its single error line.
fn run_error(workload: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("s.yaml"), SCENARIO).unwrap();
    fs::write(dir.path().join("web.yaml"), workload).unwrap();
    fs::write(dir.path().join("pool.yaml"), ON_DEMAND_POOL).unwrap();
    let out = karpsim_in(dir.path(), &["run", "s.yaml", "--out", "out/report"]);
    let line = single_error_line(&out);
    assert!(!dir.path().join("out").exists(), "no report directory left");
    line
}

/// A Deployment with `resource:` for `resources:` used to run with pods
/// requesting nothing; kubectl's strict field validation refuses it, and
/// so does karpsim.
#[test]
fn a_typo_in_a_deployment_is_refused_at_its_line() {
    let workload = "apiVersion: apps/v1
kind: Deployment
metadata: {name: frontend, namespace: shop}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        resource:
          requests: {cpu: '2'}
";
    let line = run_error(workload);
    assert!(
        line.ends_with(
            "web.yaml:12:9: unknown field \"resource\" in Deployment shop/frontend \
             spec.template.spec.containers[0] (did you mean \"resources\"?)"
        ),
        "{line}"
    );
}

/// Two Deployments of one name, and a misspelt kind, are errors too.
#[test]
fn duplicate_names_and_misspelt_kinds_are_refused() {
    let one = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec: {containers: [{name: c}]}\n";
    let line = run_error(&format!("{one}---\n{one}"));
    assert!(
        line.contains("duplicate Deployment default/web: already defined at web.yaml:3:18"),
        "{line}"
    );
    let line = run_error(&one.replace("kind: Deployment", "kind: Deploymnet"));
    assert!(line.contains("web.yaml:2:7: kind: unknown kind \"Deploymnet\" in apps/v1 (did you mean \"Deployment\"?)"), "{line}");
}
