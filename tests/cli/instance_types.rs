//! `karpsim instance-types`.

use std::fs;

use crate::util::{karpsim, karpsim_in, single_error_line, stderr, stdout};

const HEADER: &str = "instance_type,vcpu,memory_mib,arch,allocatable_cpu_millicores,allocatable_memory_mib,max_pods,on_demand_usd_per_hour,spot_usd_per_hour_min";

/// The issue's acceptance command, on the real eu-west-1 catalog.
#[test]
fn eu_west_1_csv() {
    let out = karpsim(&["instance-types", "--region", "eu-west-1", "--output", "csv"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.starts_with(&format!("{HEADER},")), "{}", &text[..200]);
    let rows: Vec<&str> = text.lines().skip(1).collect();
    assert!(rows.len() > 500, "{} types", rows.len());
    let m5 = rows.iter().find(|r| r.starts_with("m5.large,")).unwrap();
    assert!(
        m5.starts_with("m5.large,2,8192,amd64,1930,6903,29,"),
        "{m5}"
    );
    assert!(m5.contains("eu-west-1a;eu-west-1b;eu-west-1c"), "{m5}");
}

/// Works from any directory: the catalog is embedded.
#[test]
fn runs_outside_the_repository() {
    let dir = tempfile::tempdir().unwrap();
    let out = karpsim_in(dir.path(), &["instance-types", "--output", "json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["region"], "us-east-1");
    let types = json["instance_types"].as_array().unwrap();
    let m5 = types
        .iter()
        .find(|t| t["instance_type"] == "m5.xlarge")
        .unwrap();
    assert_eq!(m5["allocatable_cpu_millicores"], 3920);
    assert_eq!(m5["allocatable_memory_mib"], 14162);
    assert_eq!(m5["max_pods"], 58);
    assert_eq!(m5["on_demand_usd_per_hour"], "0.192");
}

/// The widely copied example parses, warns about its two pre-v1 spellings,
/// and the summary explains the exclusions.
#[test]
fn nodepool_example_lists_allowed_types_and_explains() {
    let out = karpsim(&[
        "instance-types",
        "--nodepool",
        "tests/fixtures/manifests/nodepool-general-purpose.yaml",
        "--output",
        "csv",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("\"WhenUnderutilized\" is the pre-v1 name"),
        "{err}"
    );
    assert!(err.contains("spec.template.spec.expireAfter"), "{err}");
    let summary = err
        .lines()
        .find(|l| l.starts_with("NodePool general-purpose: "))
        .unwrap();
    let rows: Vec<String> = stdout(&out).lines().skip(1).map(String::from).collect();
    assert!(
        summary.starts_with(&format!("NodePool general-purpose: {} of ", rows.len())),
        "{summary}"
    );
    for row in &rows {
        let fields: Vec<&str> = row.split(',').collect();
        // category, generation columns
        assert!(matches!(fields[12], "c" | "m" | "r"), "{row}");
        assert!(fields[14].parse::<u32>().unwrap() > 4, "{row}");
        assert_eq!(fields[17], "general-purpose");
    }
}

#[test]
fn unknown_region_is_one_line() {
    let out = karpsim(&["instance-types", "--region", "mars-north-1"]);
    let line = single_error_line(&out);
    assert!(line.contains("unknown region \"mars-north-1\""), "{line}");
    assert!(line.contains("eu-west-1"), "{line}");
}

#[test]
fn missing_nodepool_file_is_one_line() {
    let out = karpsim(&["instance-types", "--nodepool", "no/such/file.yaml"]);
    let line = single_error_line(&out);
    assert!(
        line.starts_with("error: cannot read no/such/file.yaml: "),
        "{line}"
    );
}

/// Malformed YAML, an unknown field and a bad operator each name file,
/// line, column and field.
#[test]
fn bad_nodepools_name_file_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "typo.yaml",
            "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: p}\nspec:\n  template:\n    spec:\n      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: d}\n      requirments: []\n",
            "typo.yaml:8:7: ",
            "requirments",
        ),
        (
            "operator.yaml",
            "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: p}\nspec:\n  template:\n    spec:\n      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: d}\n      requirements:\n      - {key: kubernetes.io/arch, operator: Inn, values: [amd64]}\n",
            "operator.yaml:9:",
            "unknown operator \"Inn\"",
        ),
        (
            "broken.yaml",
            "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: p\n",
            "broken.yaml:",
            "",
        ),
        (
            "quantity.yaml",
            "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: p}\nspec:\n  limits: {cpu: 10cores}\n  template:\n    spec:\n      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: d}\n      requirements: []\n",
            "quantity.yaml:5:",
            "\"10cores\"",
        ),
    ];
    for (name, text, location, detail) in cases {
        fs::write(dir.path().join(name), text).unwrap();
        let out = karpsim_in(dir.path(), &["instance-types", "--nodepool", name]);
        let line = single_error_line(&out);
        assert!(
            line.starts_with(&format!("error: {location}")),
            "{name}: {line}"
        );
        assert!(line.contains(detail), "{name}: {line}");
        assert!(out.stdout.is_empty(), "{name}: nothing on stdout");
    }
}

/// A file with no NodePool is an error, not an empty listing.
#[test]
fn file_without_nodepool_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(
        dir.path().join("deploy.yaml"),
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec:\n      containers: [{name: c, image: nginx}]\n",
    )
    .unwrap();
    let out = karpsim_in(dir.path(), &["instance-types", "--nodepool", "deploy.yaml"]);
    let line = single_error_line(&out);
    assert_eq!(
        line,
        "error: deploy.yaml: no karpenter.sh/v1 NodePool in this file"
    );
}

/// `-o` works as everywhere else, with csv, json and yaml, and NodePool
/// files are given with `--nodepools` (the old `--nodepool` still works).
#[test]
fn short_output_flag_and_nodepools() {
    let csv = karpsim(&["instance-types", "-o", "csv"]);
    assert!(csv.status.success(), "{}", stderr(&csv));
    assert!(stdout(&csv).starts_with(&format!("{HEADER},")));
    let yaml = karpsim(&["instance-types", "-o", "yaml", "--region", "eu-west-1"]);
    assert!(yaml.status.success(), "{}", stderr(&yaml));
    let parsed: serde_json::Value = serde_saphyr::from_str(&stdout(&yaml)).unwrap();
    assert_eq!(parsed["region"], "eu-west-1");
    let file = "tests/fixtures/manifests/nodepool-general-purpose.yaml";
    let new = karpsim(&["instance-types", "--nodepools", file, "-o", "csv"]);
    let old = karpsim(&["instance-types", "--nodepool", file, "-o", "csv"]);
    assert!(new.status.success(), "{}", stderr(&new));
    assert_eq!(new.stdout, old.stdout);
    assert!(stdout(&new).lines().count() > 10);
}
