//! The node lifecycle end to end with the real deciders: registration
//! before initialization, startup taints, the uninitialized window in
//! consolidation, and the liveness timeout (core:
//! pkg/controllers/nodeclaim/lifecycle suites,
//! pkg/controllers/provisioning/scheduling/suite_test.go,
//! pkg/controllers/disruption/consolidation_test.go).
//!
//! Every run here takes 30 s from launch to initialized, of which the last
//! 10 s are initialization, so a NodeClaim launched when the batch closes
//! at 1 s registers at 21 s and initializes at 31 s.

use super::tests::{M5_LARGE_POOL, deployment, events, input};
use super::*;
use crate::karpenter::node_repair::ConditionStatus;
use crate::latency::LaunchLatency;
use crate::scheduler::kube_scheduler::NO_NODES_MESSAGE;
use karpsim_input::nodepools::load_str;

const INITIALIZATION: SimDuration = SimDuration::from_secs(10);

fn secs(s: u64) -> SimTime {
    SimTime::from_secs(s)
}

/// `manifests` under the m5.large pool (`template_extra` is appended to
/// its `spec.template.spec`), for `duration`, with the 10 s
/// initialization.
fn lifecycle_run(manifests: &str, template_extra: &str, duration: SimDuration) -> RunInput {
    let mut run = input(manifests, duration);
    let text = format!("{M5_LARGE_POOL}{template_extra}");
    run.nodepools[0].pool = load_str("pool.yaml", &text).unwrap().nodepools[0].clone();
    run.node_initialization = INITIALIZATION;
    run
}

fn checked(run: &RunInput) -> RunOutput {
    let (out, violations) = run_checked(run, Deciders::default()).unwrap();
    assert!(violations.is_empty(), "{violations:#?}");
    out
}

fn times(out: &RunOutput, reason: &str, object: &str) -> Vec<SimTime> {
    events(out, reason)
        .iter()
        .filter(|e| e.object == object)
        .map(|e| e.time)
        .collect()
}

/// Pod events of `reason` whose object starts with `prefix`.
fn pod_events<'o>(out: &'o RunOutput, reason: &str, prefix: &str) -> Vec<&'o EventRecord> {
    events(out, reason)
        .into_iter()
        .filter(|e| e.object.starts_with(prefix))
        .collect()
}

/// The times of [`pod_events`].
fn pod_times(out: &RunOutput, reason: &str, prefix: &str) -> Vec<SimTime> {
    pod_events(out, reason, prefix)
        .iter()
        .map(|e| e.time)
        .collect()
}

fn hang(from: u64, until: Option<u64>, kind: StartupFailureKind) -> NodePoolStartupFailure {
    NodePoolStartupFailure {
        nodepool: Some("default".to_string()),
        failure: StartupFailure {
            from: secs(from),
            until: until.map(secs),
            kind,
        },
    }
}

fn daemonset(name: &str, tolerate_everything: bool) -> String {
    let tolerations = if tolerate_everything {
        "\n      tolerations: [{operator: Exists}]"
    } else {
        ""
    };
    format!(
        "
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {{name: {name}}}
spec:
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:{tolerations}
      containers:
        - name: c
          resources: {{requests: {{cpu: 50m, memory: 64Mi}}}}
"
    )
}

/// core lifecycle registration_test.go "should sync the
/// karpenter.sh/registered label to the Node … when the Node comes online"
/// and initialization_test.go "should not consider the Node to be
/// initialized when the status of the Node is NotReady" / "should consider
/// the NodeClaim initialized when all initialization conditions are met":
/// the node registers at 21 s, NotReady, and initializes at 31 s, its
/// `ready_at`. The pending pod does not bind to the NotReady node (its
/// `node.kubernetes.io/not-ready` taint is untolerated) but at 31 s; a
/// DaemonSet that tolerates every taint (as a CNI's does) has its pod on
/// the node at registration, another DaemonSet at initialization.
#[test]
fn registration_comes_before_initialization() {
    let manifests = format!(
        "{}{}{}",
        deployment("web", 1, "500m"),
        daemonset("cni", true),
        daemonset("logs", false)
    );
    let out = checked(&lifecycle_run(&manifests, "", SimDuration::from_hours(1)));
    assert_eq!(out.nodeclaims.len(), 1);
    let claim = &out.nodeclaims[0];
    assert_eq!(claim.launched_at, secs(1));
    let object = format!("nodeclaim/{}", claim.name);
    assert_eq!(times(&out, "Registered", &object), vec![secs(21)]);
    assert_eq!(times(&out, "Initialized", &object), vec![secs(31)]);
    assert_eq!(claim.ready_at, Some(secs(31)));
    assert_eq!(
        pod_times(&out, "Scheduled", "pod/default/web-"),
        vec![secs(31)]
    );
    assert_eq!(
        pod_times(&out, "Scheduled", "pod/default/cni-"),
        vec![secs(21)]
    );
    assert_eq!(
        pod_times(&out, "Scheduled", "pod/default/logs-"),
        vec![secs(31)]
    );
    // Refused at 0 s (no nodes) and at 21 s (the NotReady node's taint):
    // the second refusal only counts up the first event's series.
    let refused = pod_events(&out, "FailedScheduling", "pod/default/web-");
    assert_eq!(refused.len(), 1, "{refused:#?}");
    assert_eq!(refused[0].time, secs(0));
    assert_eq!(refused[0].message, NO_NODES_MESSAGE);
    // The samples count the node as Ready from 31 s only.
    let at = |t: u64| out.timeseries.iter().find(|s| s.time == secs(t)).unwrap();
    assert_eq!((at(0).nodes, at(0).nodes_ready), (0, 0));
    assert_eq!((at(60).nodes, at(60).nodes_ready), (1, 1));
}

/// client-go tools/events `finishSeries` (`finishTime`, 6 min): a pod
/// whose node takes 14 min to launch is refused at 0 s (no nodes) and
/// next when the node registers NotReady, 13 min 51 s later. Its event
/// series was last seen at 0 s and forgotten at the 12 min check, so that
/// refusal is a new `FailedScheduling` event, with its own message.
#[test]
fn a_refusal_after_the_event_series_ended_is_a_new_event() {
    let mut run = lifecycle_run(
        &deployment("web", 1, "500m"),
        "",
        SimDuration::from_hours(1),
    );
    run.launch_latency = LaunchLatency::fixed(SimDuration::from_mins(14));
    let out = checked(&run);
    let refused = pod_events(&out, "FailedScheduling", "pod/default/web-");
    assert_eq!(refused.len(), 2, "{refused:#?}");
    assert_eq!(refused[0].message, NO_NODES_MESSAGE);
    assert_eq!(refused[1].time, secs(1 + 14 * 60 - 10));
    assert!(
        refused[1].message.contains("node.kubernetes.io/not-ready"),
        "{}",
        refused[1].message
    );
}

/// core scheduling suite_test.go "should assume pod will schedule to a
/// tainted node with a custom startup taint" and initialization_test.go
/// "should not consider the Node to be initialized when all startupTaints
/// aren't removed" / "… once the startupTaints are removed": a second pod
/// arriving at 25 s, while the first node is registered with its startup
/// taint, is nominated to that node (no second NodeClaim) and binds with
/// the first pod when the taint goes at initialization, 31 s. A pod that
/// tolerates the not-ready taint but not the startup taint waits as well.
#[test]
fn startup_taints_keep_pods_off_until_initialization() {
    let tolerant = "
---
apiVersion: v1
kind: Pod
metadata: {name: tolerant}
spec:
  tolerations: [{key: node.kubernetes.io/not-ready, operator: Exists, effect: NoSchedule}]
  containers:
    - name: c
      resources: {requests: {cpu: 100m, memory: 128Mi}}
";
    let startup_taint =
        "      startupTaints: [{key: foo.com/taint, value: tainted, effect: NoSchedule}]\n";
    let mut run = lifecycle_run(
        &deployment("web", 1, "500m"),
        startup_taint,
        SimDuration::from_hours(1),
    );
    let late = load_str(
        "late.yaml",
        &format!("{}{tolerant}", deployment("late", 1, "500m")),
    )
    .unwrap();
    run.steps.push(Step {
        at: secs(25),
        action: StepAction::Apply {
            workloads: late.core.workloads,
            pdbs: Vec::new(),
        },
    });
    let out = checked(&run);
    assert_eq!(out.nodeclaims.len(), 1, "the pods share the first node");
    let node = &out.nodeclaims[0].name;
    assert_eq!(
        times(&out, "Registered", &format!("nodeclaim/{node}")),
        vec![secs(21)]
    );
    let nominated = pod_events(&out, "Nominated", "pod/default/late-");
    assert_eq!(nominated.len(), 1);
    assert_eq!(
        nominated[0].message,
        format!("Pod should schedule on: node/{node}")
    );
    assert!(nominated[0].time < secs(31));
    for prefix in [
        "pod/default/web-",
        "pod/default/late-",
        "pod/default/tolerant",
    ] {
        assert_eq!(
            pod_times(&out, "Scheduled", prefix),
            vec![secs(31)],
            "{prefix}"
        );
    }
}

/// core consolidation_test.go "won't delete node if it would require pods
/// to schedule on an uninitialized node": node 1 holds two 600m pods; a
/// 1000m pod that tolerates the not-ready taint (as the upstream test's
/// pods are bound to the uninitialized node) gets node 2 at 10 min; at
/// 20 min one of node 1's pods goes, and its other pod would fit on node
/// 2. Node 2 registered but never turns Ready (a NotReady startup failure
/// covers its launch): consolidation leaves node 1 alone, saying the pod
/// would schedule against the uninitialized node. Without the failure,
/// node 2 initializes and one of the two nodes is consolidated away.
#[test]
fn consolidation_wont_move_pods_onto_an_uninitialized_node() {
    let second = "
apiVersion: apps/v1
kind: Deployment
metadata: {name: second}
spec:
  replicas: 1
  selector: {matchLabels: {app: second}}
  template:
    metadata: {labels: {app: second}}
    spec:
      tolerations: [{key: node.kubernetes.io/not-ready, operator: Exists, effect: NoSchedule}]
      containers:
        - name: c
          resources: {requests: {cpu: 1000m, memory: 1Gi}}
";
    let run_with = |hangs: bool| {
        let mut run = lifecycle_run(
            &deployment("first", 2, "600m"),
            "",
            SimDuration::from_hours(1),
        );
        let loaded = load_str("second.yaml", second).unwrap();
        run.steps.push(Step {
            at: secs(600),
            action: StepAction::Apply {
                workloads: loaded.core.workloads,
                pdbs: Vec::new(),
            },
        });
        run.steps.push(Step {
            at: secs(1200),
            action: StepAction::Scale {
                target: Target {
                    kind: TargetKind::Deployment,
                    namespace: "default".to_string(),
                    name: "first".to_string(),
                },
                replicas: 1,
            },
        });
        if hangs {
            run.startup_failures = vec![hang(300, Some(900), StartupFailureKind::NotReady)];
        }
        checked(&run)
    };
    let out = run_with(true);
    assert_eq!(out.nodeclaims.len(), 2);
    let second_node = &out.nodeclaims[1];
    assert_eq!(second_node.ready_at, None, "node 2 never initializes");
    assert!(
        out.nodeclaims.iter().all(|c| c.deleted_at.is_none()),
        "{:#?}",
        out.nodeclaims
    );
    let blocked = format!(
        "would schedule against uninitialized nodeclaim/{0}, node/{0}",
        second_node.name
    );
    let notes: Vec<&EventRecord> = events(&out, "Unconsolidatable")
        .into_iter()
        .filter(|e| e.object == format!("node/{}", out.nodeclaims[0].name))
        .collect();
    assert!(
        notes.iter().any(|e| e.message.contains(&blocked)),
        "{notes:#?}"
    );
    // The second pod bound to the NotReady node at its registration.
    assert_eq!(pod_times(&out, "Scheduled", "pod/default/second-").len(), 1);

    let out = run_with(false);
    let consolidated: Vec<&NodeClaimRecord> = out
        .nodeclaims
        .iter()
        .filter(|c| c.reason_deleted == "underutilized")
        .collect();
    assert_eq!(consolidated.len(), 1, "{:#?}", out.nodeclaims);
}

/// core liveness_test.go "should delete the nodeClaim when the Node hasn't
/// registered past the registration timeout": every launch of the pool
/// hangs unregistered, so the NodeClaim launched at 1 s is deleted at
/// 15 min 1 s (`registration_timeout`), billed until its termination, and
/// a new NodeClaim is launched for the pod, which hangs in turn.
#[test]
fn registration_timeout_deletes_and_relaunches() {
    let mut run = lifecycle_run(
        &deployment("web", 1, "500m"),
        "",
        SimDuration::from_mins(40),
    );
    run.startup_failures = vec![hang(0, None, StartupFailureKind::Unregistered)];
    let out = checked(&run);
    assert!(out.nodeclaims.len() >= 2, "{:#?}", out.nodeclaims);
    let first = &out.nodeclaims[0];
    assert_eq!(first.launched_at, secs(1));
    assert_eq!(first.ready_at, None);
    assert_eq!(first.reason_deleted, REGISTRATION_TIMEOUT_REASON);
    let timeout_at = secs(1) + REGISTRATION_TIMEOUT;
    assert_eq!(
        times(
            &out,
            "RegistrationTimeout",
            &format!("nodeclaim/{}", first.name)
        ),
        vec![timeout_at]
    );
    assert_eq!(
        times(&out, "Deleting", &format!("nodeclaim/{}", first.name)),
        vec![timeout_at]
    );
    // Its pod is provisioned again: the next NodeClaim follows within a
    // batch window and a requeue, and also times out.
    let second = &out.nodeclaims[1];
    assert!(second.launched_at > timeout_at, "{second:#?}");
    assert!(
        second.launched_at <= timeout_at + SimDuration::from_secs(20),
        "{second:#?}"
    );
    assert_eq!(second.reason_deleted, REGISTRATION_TIMEOUT_REASON);
    assert!(events(&out, "Registered").is_empty());
    assert_eq!(out.summary.pods_scheduled, 0);
    assert_eq!(
        out.summary
            .churn
            .nodeclaims_terminated_by_reason
            .get(REGISTRATION_TIMEOUT_REASON),
        Some(&2)
    );
}

/// core liveness_test.go, the same case with the failure over by the time
/// of the relaunch (a fixed AMI), and "shouldn't delete the nodeClaim
/// when the node has registered past the registration timeout": launches
/// hang only until 10 min, so the NodeClaim launched at 1 s times out at
/// 15 min 1 s, the one that replaces it registers and initializes 30 s
/// after its launch, the pod binds then, and that node is never deleted
/// although it lives far past 15 min.
#[test]
fn liveness_relaunch_succeeds_once_the_failure_window_ends() {
    let mut run = lifecycle_run(
        &deployment("web", 1, "500m"),
        "",
        SimDuration::from_hours(1),
    );
    run.startup_failures = vec![hang(0, Some(600), StartupFailureKind::Unregistered)];
    let out = checked(&run);
    assert_eq!(out.nodeclaims.len(), 2, "{:#?}", out.nodeclaims);
    let (first, second) = (&out.nodeclaims[0], &out.nodeclaims[1]);
    assert_eq!(first.reason_deleted, REGISTRATION_TIMEOUT_REASON);
    let relaunch = second.launched_at;
    assert!(relaunch > secs(1) + REGISTRATION_TIMEOUT);
    assert_eq!(
        times(&out, "Registered", &format!("nodeclaim/{}", second.name)),
        vec![relaunch + SimDuration::from_secs(20)]
    );
    assert_eq!(second.ready_at, Some(relaunch + SimDuration::from_secs(30)));
    assert_eq!(second.deleted_at, None);
    assert_eq!(
        pod_times(&out, "Scheduled", "pod/default/web-"),
        vec![relaunch + SimDuration::from_secs(30)]
    );
    assert_eq!(events(&out, "RegistrationTimeout").len(), 1);
}

/// core node health suite_test.go "should delete nodes that are unhealthy
/// by the cloud provider", for a node that registers and never turns
/// Ready: its `Ready=False` dates from its registration at 21 s, so with
/// the NodeRepair gate the AWS policy's 30 min toleration ends at 30 min
/// 21 s and the NodeClaim is replaced; without the gate it stays,
/// uninitialized, and its nominated pod stays pending (Karpenter's
/// scheduler counts on the node it is waiting for).
#[test]
fn a_node_that_never_turns_ready_is_repaired_only_with_the_gate() {
    let run_with = |gate: bool| {
        let mut run = lifecycle_run(
            &deployment("web", 1, "500m"),
            "",
            SimDuration::from_hours(1),
        );
        run.startup_failures = vec![hang(0, Some(600), StartupFailureKind::NotReady)];
        run.karpenter.node_repair = gate;
        checked(&run)
    };
    let out = run_with(true);
    let first = &out.nodeclaims[0];
    assert_eq!(first.reason_deleted, "unhealthy");
    let repaired_at = secs(21) + SimDuration::from_mins(30);
    assert_eq!(
        times(&out, "Deleting", &format!("nodeclaim/{}", first.name)),
        vec![repaired_at]
    );
    assert_eq!(out.nodeclaims.len(), 2);
    assert!(out.nodeclaims[1].ready_at.is_some());
    assert_eq!(out.summary.pods_scheduled, 1);

    let out = run_with(false);
    assert_eq!(out.nodeclaims.len(), 1);
    assert_eq!(out.nodeclaims[0].deleted_at, None);
    assert_eq!(out.nodeclaims[0].ready_at, None);
    assert_eq!(out.summary.pods_scheduled, 0);
    assert_eq!(events(&out, "NodeNotReady").len(), 1);
}

/// A node's `Ready` condition while it starts is the kubelet's: `False`
/// from registration (the node lifecycle controller's taint with it) and
/// `True` from initialization, so a `nodeCondition` step that later sets
/// `Ready` `False` is a transition, and one that sets `True` on a Ready
/// node is not.
#[test]
fn ready_condition_follows_the_lifecycle() {
    let mut run = lifecycle_run(
        &deployment("web", 1, "500m"),
        "",
        SimDuration::from_hours(1),
    );
    for (at, status) in [(600, ConditionStatus::True), (900, ConditionStatus::False)] {
        run.steps.push(Step {
            at: secs(at),
            action: StepAction::NodeCondition {
                node: "default-00001".to_string(),
                condition_type: "Ready".to_string(),
                status,
            },
        });
    }
    let out = checked(&run);
    let transitions: Vec<SimTime> = events(&out, "NodeCondition")
        .iter()
        .map(|e| e.time)
        .collect();
    assert_eq!(transitions, vec![secs(900)]);
}
