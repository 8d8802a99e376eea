//! `karpsim plan` on the hand-written snapshot `tests/fixtures/snapshots/
//! small.yaml` (see crates/input/src/cluster_snapshot/tests.rs), and runs
//! that begin from it.

use crate::util::{karpsim, single_error_line, stderr, stdout};

const SMALL: &str = "tests/fixtures/snapshots/small.yaml";
const PROPOSED: &str = "tests/fixtures/snapshots/proposed-nodepool.yaml";

fn plan_json(args: &[&str]) -> serde_json::Value {
    let mut all = vec!["plan", "-o", "json", "-q"];
    all.extend_from_slice(args);
    let output = karpsim(&all);
    assert!(output.status.success(), "{}", stderr(&output));
    serde_json::from_str(&stdout(&output)).expect("one JSON document")
}

fn node<'a>(plan: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    plan["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["name"] == name)
        .unwrap_or_else(|| panic!("node {name} in {plan}"))
}

/// The scripted keys, and the decisions on the snapshot: the empty
/// Karpenter node is an emptiness command; the node whose pods a PDB at
/// its limit (maxUnavailable 0) protects is blocked with upstream's
/// message (core pkg/controllers/disruption/helpers.go, `pdb %q prevents
/// pod evictions`); node group and unmanaged nodes are no candidates.
#[test]
fn plan_json_on_a_snapshot() {
    let plan = plan_json(&[SMALL]);
    assert_eq!(plan["snapshot"]["time"], "2026-11-30T12:00:00Z");
    assert_eq!(plan["snapshot"]["nodes"], 4);
    assert_eq!(plan["snapshot"]["pending_pods"], 1);
    // m5.xlarge $0.192 + three m5.large at $0.096.
    assert_eq!(plan["cost_per_hour_usd"]["now"], 0.48);
    let commands = plan["disruption"]["commands"].as_array().unwrap();
    assert_eq!(commands.len(), 1, "{plan}");
    assert_eq!(commands[0]["method"], "emptiness");
    assert_eq!(commands[0]["reason"], "empty");
    assert_eq!(commands[0]["nodes"][0], "ip-10-0-1-11.ec2.internal");
    assert_eq!(commands[0]["savings_usd_per_hour"], 0.096);
    let blocked = node(&plan, "ip-10-0-1-10.ec2.internal");
    assert_eq!(blocked["candidate"], false);
    assert_eq!(
        blocked["why_not"],
        "pdb \"shop/web\" prevents pod evictions"
    );
    assert_eq!(
        node(&plan, "ip-10-0-2-20.ec2.internal")["managed_by"],
        "nodegroup"
    );
    let unmanaged = node(&plan, "ip-10-0-3-30.ec2.internal");
    assert_eq!(unmanaged["managed_by"], "none");
    assert_eq!(unmanaged["candidate"], false);
    // The 3-CPU pending pod fits no node: one new NodeClaim of the m5 pool.
    let claims = plan["provisioning"]["nodeclaims"].as_array().unwrap();
    assert_eq!(claims.len(), 1);
    assert_eq!(claims[0]["nodepool"], "default");
    assert_eq!(claims[0]["pods"][0], "shop/report-7xk2p");
    assert!(
        claims[0]["instance_type"]
            .as_str()
            .unwrap()
            .starts_with("m5.")
    );
    // After: + the new NodeClaim − the empty node.
    let after = plan["cost_per_hour_usd"]["after_plan"].as_f64().unwrap();
    let expected = 0.48 + claims[0]["price_usd_per_hour"].as_f64().unwrap() - 0.096;
    assert!((after - expected).abs() < 1e-9, "{after} vs {expected}");
}

/// Proposed NodePools replace the snapshot's: its Karpenter nodes drift
/// (the template hash changed) and new capacity comes from the new pool.
#[test]
fn plan_with_proposed_nodepools_shows_drift() {
    let plan = plan_json(&[SMALL, "--nodepools", PROPOSED]);
    let drifted: Vec<&str> = plan["drifted"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(
        drifted,
        ["ip-10-0-1-10.ec2.internal", "ip-10-0-1-11.ec2.internal"]
    );
    let claims = plan["provisioning"]["nodeclaims"].as_array().unwrap();
    assert!(
        claims[0]["instance_type"]
            .as_str()
            .unwrap()
            .starts_with("c6a.")
    );
}

#[test]
fn plan_yaml_and_table() {
    let output = karpsim(&["plan", SMALL, "-o", "yaml", "-q"]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stdout(&output).contains("after_plan:"));
    let output = karpsim(&["plan", SMALL, "-q"]);
    let text = stdout(&output);
    assert!(
        text.contains("1. emptiness (empty): delete 1 empty node (m5.large)"),
        "{text}"
    );
    assert!(text.contains("node is not managed by Karpenter"), "{text}");
}

#[test]
fn plan_errors_are_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let missing = karpsim(&["plan", "no/such/snapshot.yaml"]);
    let line = single_error_line(&missing);
    assert!(line.contains("cannot read no/such/snapshot.yaml"), "{line}");
    let text = std::fs::read_to_string(crate::util::repo().join(SMALL)).unwrap();
    let bad = dir.path().join("bad.yaml");
    std::fs::write(
        &bad,
        text.replacen("nodeName: ip-10-0-3-30.ec2.internal", "nodeName: gone", 1),
    )
    .unwrap();
    let line = single_error_line(&karpsim(&["plan", bad.to_str().unwrap()]));
    assert!(
        line.contains(
            "Pod shop/web-5d8f7c9b6-ccccc: spec.nodeName \"gone\" is not a node in the snapshot"
        ),
        "{line}"
    );
    let wrong_region = karpsim(&["plan", SMALL, "--region", "eu-west-1"]);
    let line = single_error_line(&wrong_region);
    assert!(
        line.contains("the snapshot's nodes are in us-east-1"),
        "{line}"
    );
}

/// `initialState`: the run begins with the snapshot's nodes (billed from
/// t = 0) and pods; a variant without nodePools runs the snapshot's.
#[test]
fn runs_begin_from_a_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let output = karpsim(&[
        "run",
        "tests/fixtures/scenarios/from-snapshot.yaml",
        "--out",
        out.to_str().unwrap(),
        "-q",
        "-o",
        "json",
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("current/summary.json")).unwrap())
            .unwrap();
    // Nothing is launched for pods that already run; the pending pod gets
    // one NodeClaim.
    assert_eq!(summary["nodeclaims_launched"], 1, "{summary}");
    let rows = std::fs::read_to_string(out.join("current/nodeclaims.csv")).unwrap();
    assert!(rows.contains("ip-10-0-2-20.ec2.internal,system,"), "{rows}");
    assert!(
        rows.contains("ip-10-0-3-30.ec2.internal,unmanaged,"),
        "{rows}"
    );
}
