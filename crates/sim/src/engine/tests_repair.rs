//! Node conditions and node repair end to end (core:
//! pkg/controllers/node/health/suite_test.go, with the AWS provider's
//! repair policies).

use super::tests::{M5_LARGE_POOL, deployment, events, input};
use super::*;
use crate::karpenter::node_repair::ConditionStatus;
use karpsim_input::nodepools::load_str;

fn condition(at_secs: u64, node: &str, status: ConditionStatus) -> Step {
    Step {
        at: SimTime::from_secs(at_secs),
        action: StepAction::NodeCondition {
            node: node.to_string(),
            condition_type: "Ready".to_string(),
            status,
        },
    }
}

/// `replicas` pods of `cpu` under the m5.large pool with `spec_extra`
/// (budgets) and the NodeRepair gate `gate`.
fn repair_run(replicas: u32, cpu: &str, spec_extra: &str, gate: bool) -> RunInput {
    let mut run = input(
        &deployment("web", replicas, cpu),
        SimDuration::from_hours(1),
    );
    let text = format!("{M5_LARGE_POOL}{spec_extra}");
    run.nodepools[0].pool = load_str("pool.yaml", &text).unwrap().nodepools[0].clone();
    run.karpenter.node_repair = gate;
    run
}

fn checked(run: &RunInput) -> RunOutput {
    let (out, violations) = run_checked(run, Deciders::default()).unwrap();
    assert!(violations.is_empty(), "{violations:#?}");
    out
}

/// health suite "should delete nodes that are unhealthy by the cloud
/// provider", "should ignore node disruption budgets" and "should set
/// annotation termination grace period when force termination is
/// started": Ready False at 10 min, the AWS policy tolerates 30 min, so
/// the NodeClaim is deleted at 40 min (reason `unhealthy`) although the
/// pool's budget allows no disruption, its pod deleted at once (termination
/// timestamp now) and replaced on a new node.
#[test]
fn unhealthy_node_is_repaired_after_its_toleration() {
    let mut run = repair_run(
        1,
        "500m",
        "  disruption: {budgets: [{nodes: \"0\"}]}\n",
        true,
    );
    run.steps
        .push(condition(600, "default-00001", ConditionStatus::False));
    let out = checked(&run);
    assert_eq!(out.nodeclaims.len(), 2);
    let first = &out.nodeclaims[0];
    assert_eq!(first.name, "default-00001");
    assert_eq!(first.reason_deleted, "unhealthy");
    let deleting = events(&out, "Deleting");
    assert_eq!(deleting.len(), 1);
    assert_eq!(deleting[0].time, SimTime::from_secs(2400));
    assert_eq!(out.summary.churn.forced_pod_deletions, 1);
    assert_eq!(out.nodeclaims[1].launched_at.as_millis() / 1000, 2401);
}

/// With the gate off (upstream's default) the node stays, unhealthy: the
/// not-ready taint keeps the pod added at 20 min off it, so a second node
/// launches although the first has room, and the NotReady node counts as
/// disrupting in its pool's budget (10 % of 2 nodes = 1, spent), so it is
/// not consolidated either.
#[test]
fn unhealthy_node_without_the_gate_stays_and_takes_no_new_pod() {
    let mut run = repair_run(1, "500m", "", false);
    run.steps
        .push(condition(600, "default-00001", ConditionStatus::False));
    run.steps.push(Step {
        at: SimTime::from_secs(1200),
        action: StepAction::Scale {
            target: Target {
                kind: TargetKind::Deployment,
                namespace: "default".into(),
                name: "web".into(),
            },
            replicas: 2,
        },
    });
    let out = checked(&run);
    assert_eq!(out.nodeclaims[0].reason_deleted, "");
    assert_eq!(out.nodeclaims[0].deleted_at, None);
    assert_eq!(out.nodeclaims.len(), 2, "{:#?}", out.nodeclaims);
    assert_eq!(out.nodeclaims[1].launched_at.as_millis() / 1000, 1201);
    assert!(events(&out, "Deleting").is_empty());
}

/// health suite "should ignore unhealthy nodes if more then 20% of the
/// nodes are unhealthy in a nodepool" and "should consider round up when
/// there is a low number of nodes for a nodepool": of three nodes, two
/// unhealthy (more than ⌈20 % × 3⌉ = 1) are not repaired, repair blocked
/// every 5 min; one unhealthy alone is.
#[test]
fn repair_stops_above_twenty_percent_unhealthy() {
    let mut run = repair_run(3, "1500m", "", true);
    run.steps
        .push(condition(600, "default-00001", ConditionStatus::False));
    run.steps
        .push(condition(600, "default-00002", ConditionStatus::Unknown));
    let out = checked(&run);
    assert_eq!(out.nodeclaims.len(), 3);
    assert!(out.nodeclaims.iter().all(|c| c.deleted_at.is_none()));
    let blocked = events(&out, "NodeRepairBlocked");
    // Both nodes at 40, 45, 50, 55 and 60 min (the run's last instant).
    assert_eq!(blocked.len(), 10, "{blocked:#?}");
    assert!(
        blocked[0]
            .message
            .contains("more than 20% nodes are unhealthy in the nodepool (2 of 3)")
    );

    let mut run = repair_run(3, "1500m", "", true);
    run.steps
        .push(condition(600, "default-00002", ConditionStatus::Unknown));
    let out = checked(&run);
    let repaired: Vec<_> = out
        .nodeclaims
        .iter()
        .filter(|c| c.reason_deleted == "unhealthy")
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(repaired, ["default-00002"]);
}

/// A condition step naming a node the cluster does not have then is
/// counted like a scale or delete of a missing object.
#[test]
fn condition_of_a_missing_node_is_counted() {
    let mut run = repair_run(1, "500m", "", true);
    run.steps
        .push(condition(600, "default-00009", ConditionStatus::False));
    let out = checked(&run);
    assert_eq!(out.summary.steps_missing_target(), 1);
    let missing = &out.summary.missing_targets[0];
    assert_eq!(missing.verb, "nodeCondition");
    assert_eq!(missing.target.kind, TargetKind::Node);
}
