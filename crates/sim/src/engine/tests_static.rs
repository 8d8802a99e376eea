//! Static NodePools end to end with the real deciders (core:
//! pkg/controllers/static/*/suite_test.go, disruption/staticdrift_test.go,
//! designs/static-capacity.md).

use super::tests::{M5_LARGE_POOL, deployment, events, input};
use super::*;
use karpsim_input::nodepools::load_str;

/// The m5.large pool made static with `spec` lines appended (at two
/// spaces), and `limits.nodes` read into its slot.
fn static_run(spec_extra: &str, duration: SimDuration, gate: bool) -> RunInput {
    let text = format!("{M5_LARGE_POOL}{spec_extra}");
    let loaded = load_str("pool.yaml", &text).unwrap();
    let mut run = input("", duration);
    run.steps.clear();
    run.nodepools[0].pool = loaded.nodepools[0].clone();
    run.node_count_resource = loaded.resource_names.lookup("nodes");
    run.karpenter.static_capacity = gate;
    run
}

fn nodepools_step(at: SimTime, spec_extra: &str, run: &RunInput) -> Step {
    let text = format!("{M5_LARGE_POOL}{spec_extra}");
    let loaded = load_str("pool.yaml", &text).unwrap();
    Step {
        at,
        action: StepAction::NodePools {
            nodepools: vec![PoolSetup {
                pool: loaded.nodepools[0].clone(),
                catalog: run.nodepools[0].catalog.clone(),
            }],
            node_count_resource: loaded.resource_names.lookup("nodes"),
        },
    }
}

fn checked(run: &RunInput) -> RunOutput {
    let (out, violations) = run_checked(run, Deciders::default()).unwrap();
    assert!(violations.is_empty(), "{violations:#?}");
    out
}

/// static/provisioning "should create nodeclaims when current node count
/// is less than desired replicas": three NodeClaims at t = 0 with no pod
/// at all, kept for the whole hour although empty (static pools are never
/// considered for emptiness or consolidation; consolidateAfter is the
/// default 0s).
#[test]
fn static_pool_keeps_its_replicas_without_pods() {
    let run = static_run("  replicas: 3\n", SimDuration::from_hours(1), true);
    let out = checked(&run);
    assert_eq!(out.nodeclaims.len(), 3);
    for claim in &out.nodeclaims {
        assert_eq!(claim.launched_at, SimTime::ZERO);
        assert_eq!(claim.deleted_at, None);
        assert_eq!(claim.instance_type, "m5.large");
        assert_eq!(claim.reason_launched, "provisioning");
    }
    assert!(out.summary.churn.commands_by_method.is_empty());
}

/// With the StaticCapacity gate off (upstream's default) no static
/// controller runs and the dynamic provisioner skips static NodePools
/// (core: provisioner.go `NewScheduler`): nothing launches, and a pending
/// pod gets upstream's "no dynamic nodepools found".
#[test]
fn static_pool_without_the_gate_launches_nothing() {
    let mut run = static_run("  replicas: 2\n", SimDuration::from_mins(10), false);
    let loaded = load_str("w.yaml", &deployment("web", 1, "500m")).unwrap();
    run.steps.push(Step {
        at: SimTime::ZERO,
        action: StepAction::Apply {
            workloads: loaded.core.workloads,
            pdbs: loaded.core.pdbs,
        },
    });
    let out = checked(&run);
    assert!(out.nodeclaims.is_empty());
    assert!(
        events(&out, "FailedScheduling")
            .iter()
            .any(|e| e.message.contains("no dynamic nodepools found")),
        "{:#?}",
        out.events
    );
}

/// static/provisioning "should not create additional nodeclaims when node
/// limits are reached": replicas 3 under `limits.nodes: 2` make 2.
#[test]
fn static_pool_stops_at_its_node_limit() {
    let run = static_run(
        "  replicas: 3\n  limits: {nodes: \"2\"}\n",
        SimDuration::from_mins(30),
        true,
    );
    let out = checked(&run);
    assert_eq!(out.nodeclaims.len(), 2);
}

/// A deleted static NodeClaim (here expired after 30 min) is replaced at
/// once; under `limits.nodes` equal to the replicas the replacement waits
/// until the old node is gone (designs/static-capacity.md: "Karpenter
/// would wait until Nodes are terminated and count is well within node
/// limits before creating replacements"), which the drain's 5 s minimum
/// makes 30 min 5 s.
#[test]
fn expired_static_nodeclaim_is_replaced_within_the_node_limit() {
    let expire = "      expireAfter: 30m\n";
    let template = |spec: &str| {
        let text = format!("{M5_LARGE_POOL}{expire}{spec}");
        load_str("pool.yaml", &text).unwrap()
    };
    for (limit, replaced_at) in [("", 1800), ("  limits: {nodes: \"1\"}\n", 1805)] {
        let loaded = template(&format!("  replicas: 1\n{limit}"));
        let mut run = static_run("  replicas: 1\n", SimDuration::from_mins(50), true);
        run.nodepools[0].pool = loaded.nodepools[0].clone();
        run.node_count_resource = loaded.resource_names.lookup("nodes");
        let out = checked(&run);
        assert_eq!(out.nodeclaims.len(), 2, "limit {limit:?}");
        assert_eq!(out.nodeclaims[0].reason_deleted, "expired");
        assert_eq!(out.nodeclaims[0].deleted_at, Some(SimTime::from_secs(1805)));
        assert_eq!(
            out.nodeclaims[1].launched_at,
            SimTime::from_secs(replaced_at),
            "limit {limit:?}"
        );
    }
}

/// static/deprovisioning "should prioritize empty nodes (with only
/// daemonset pods) for termination": replicas 2 → 1 deletes the node
/// without the pod, reason `overprovisioned`, whatever the budgets.
#[test]
fn lowering_replicas_deletes_the_empty_node() {
    let mut run = static_run(
        "  replicas: 2\n  disruption: {budgets: [{nodes: \"0\"}]}\n",
        SimDuration::from_mins(20),
        true,
    );
    let loaded = load_str("w.yaml", &deployment("web", 1, "500m")).unwrap();
    run.steps.push(Step {
        at: SimTime::from_secs(60),
        action: StepAction::Apply {
            workloads: loaded.core.workloads,
            pdbs: loaded.core.pdbs,
        },
    });
    let step = nodepools_step(
        SimTime::from_secs(600),
        "  replicas: 1\n  disruption: {budgets: [{nodes: \"0\"}]}\n",
        &run,
    );
    run.steps.push(step);
    let out = checked(&run);
    assert_eq!(out.nodeclaims.len(), 2);
    let deleted: Vec<_> = out
        .nodeclaims
        .iter()
        .filter(|c| c.deleted_at.is_some())
        .collect();
    assert_eq!(deleted.len(), 1);
    assert_eq!(deleted[0].reason_deleted, OVERPROVISIONED);
    let scheduled = events(&out, "Scheduled");
    assert_eq!(scheduled.len(), 1);
    assert!(
        !scheduled[0].message.contains(&deleted[0].name),
        "the node with the pod was deleted: {}",
        scheduled[0].message
    );
}

/// disruption/staticdrift_test.go "should drift nodes when we can acquire
/// limits" and "should not drift nodes when we cannot acquire limits": a
/// template change drifts both NodeClaims; without a node limit each is
/// replaced one for one (the default 10% budget allows one at a time),
/// with `limits.nodes: 2` none can be.
#[test]
fn drifted_static_nodeclaims_are_replaced_one_for_one_within_limits() {
    for (limit, launched) in [("", 4), ("  limits: {nodes: \"2\"}\n", 2)] {
        let spec = format!("  replicas: 2\n{limit}");
        let mut run = static_run(&spec, SimDuration::from_hours(1), true);
        let changed = format!("      expireAfter: 100h\n{spec}");
        let step = nodepools_step(SimTime::from_secs(300), &changed, &run);
        run.steps.push(step);
        let out = checked(&run);
        assert_eq!(out.nodeclaims.len(), launched, "limit {limit:?}");
        let drifted = out
            .nodeclaims
            .iter()
            .filter(|c| c.reason_launched == "drifted")
            .count();
        assert_eq!(drifted, launched - 2);
        let by_method = &out.summary.churn.commands_by_method;
        assert_eq!(
            by_method.get("static-drift").copied().unwrap_or(0),
            (launched - 2) as u64
        );
        assert!(!by_method.contains_key("drift"));
    }
}
