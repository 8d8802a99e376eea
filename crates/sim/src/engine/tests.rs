//! Engine tests with simple stand-in deciders, so that the engine's own
//! behaviour (owner controllers, cadence, batching, launch, ICE cache,
//! billing) is checked with hand-derived numbers independent of the
//! scheduler and provisioner models:
//! - the scheduler binds first-fit to registered nodes;
//! - the solver nominates to any node with room, else packs first-fit into
//!   new NodeClaims of the first NodePool's first allowed type (m5.large
//!   here: 1930m CPU allocatable);
//! - the launch picks that type's cheapest available offering, the first
//!   zone on ties;
//! - the disruption controller never acts (disruption tests bring their
//!   own, see `tests_disruption`).

use karpsim_catalog::BundledCatalog;
use std::cell::Cell;
use std::collections::BTreeSet;
use std::sync::OnceLock;

use super::*;
use crate::cloud::Price;
use crate::cloud::nodeclass::NodeClassSettings;
use crate::karpenter::instance_types::filter_instance_types;
use crate::karpenter::provisioning::{FleetOverride, LaunchDecision, LaunchError, NewNodeClaim};
use crate::kube::requirements::Requirements;
use crate::kube::resources::Resources;
use crate::kube::taints::tolerates_all;
use crate::ledger::MicroUsd;
use crate::scheduler::kube_scheduler::{Decision, KubeScheduler};
use karpsim_input::nodepools::load_str;

thread_local! {
    static SOLVES: Cell<usize> = const { Cell::new(0) };
}

pub(super) fn catalog() -> &'static Catalog {
    static CATALOG: OnceLock<Catalog> = OnceLock::new();
    CATALOG.get_or_init(|| Catalog::load("us-east-1", &NodeClassSettings::default()).unwrap())
}

pub(super) fn first_fit_schedule(
    _scheduler: &mut KubeScheduler,
    cluster: &Cluster,
    pending: &[PodId],
) -> Vec<Decision> {
    let mut used: BTreeMap<NodeId, Resources> = BTreeMap::new();
    pending
        .iter()
        .map(|&pod_id| {
            let pod = cluster.pod(pod_id).unwrap();
            let fit = cluster.nodes().find(|(id, node)| {
                let extra = used.get(id).copied().unwrap_or_default();
                node.registered
                    && !node.marked_for_deletion
                    && tolerates_all(&node.taints, &pod.spec.tolerations).is_ok()
                    && pod
                        .spec
                        .requests
                        .fits(&node.available().saturating_sub(&extra))
            });
            match fit {
                Some((id, _)) => {
                    *used.entry(id).or_default() += pod.spec.requests;
                    Decision::Bind(pod_id, id)
                }
                None => Decision::Unschedulable(
                    pod_id,
                    format!("0/{} nodes are available", cluster.node_count()).into(),
                ),
            }
        })
        .collect()
}

pub(super) fn first_fit_solve(_: &Provisioner, input: &ProvisioningInput<'_>) -> SchedulingResult {
    SOLVES.with(|s| s.set(s.get() + 1));
    let context = &input.nodepools[0];
    let allowed = filter_instance_types(context.pool, context.catalog).allowed;
    let type_index = allowed[0];
    let allocatable = context.catalog.instance_types()[type_index].allocatable;
    let mut result = SchedulingResult::default();
    let mut used: BTreeMap<NodeId, Resources> = BTreeMap::new();
    let mut claims: Vec<(Resources, Vec<PodId>)> = Vec::new();
    for &pod_id in input.pods {
        let requests = input.cluster.pod(pod_id).unwrap().spec.requests;
        if !requests.fits(&allocatable) {
            result
                .errors
                .push((pod_id, "no instance type has enough cpu".to_string()));
            continue;
        }
        let existing = input.cluster.nodes().find(|(id, node)| {
            let extra = used.get(id).copied().unwrap_or_default();
            !node.marked_for_deletion && requests.fits(&node.available().saturating_sub(&extra))
        });
        if let Some((id, _)) = existing {
            *used.entry(id).or_default() += requests;
            result.existing.push((pod_id, id));
            continue;
        }
        match claims
            .iter_mut()
            .find(|(sum, _)| (*sum + requests).fits(&allocatable))
        {
            Some((sum, pods)) => {
                *sum += requests;
                pods.push(pod_id);
            }
            None => claims.push((requests, vec![pod_id])),
        }
    }
    result.new_nodeclaims = claims
        .into_iter()
        .map(|(requests, pods)| NewNodeClaim {
            nodepool: 0,
            requirements: Requirements::new(),
            instance_types: vec![type_index],
            pods,
            requests,
            min_values_relaxed: None,
        })
        .collect();
    result
}

pub(super) fn cheapest_offering(
    claim: &NewNodeClaim,
    catalog: &Catalog,
) -> Result<LaunchDecision, LaunchError> {
    let index = claim.instance_types[0];
    let offerings = &catalog.instance_types()[index].offerings;
    let compatible = offerings.iter().filter(|o| o.available).count();
    let mut on_demand: Vec<_> = offerings
        .iter()
        .filter(|o| o.available && o.capacity_type == CapacityType::OnDemand)
        .collect();
    on_demand.sort_by_key(|o| o.price);
    let overrides = on_demand
        .iter()
        .map(|o| FleetOverride {
            instance_type: index,
            zone: o.zone,
            price: o.price,
            reservation: None,
        })
        .collect();
    on_demand
        .first()
        .map(|o| LaunchDecision {
            instance_type: index,
            zone: o.zone,
            capacity_type: o.capacity_type,
            price: o.price,
            reservation: None,
            compatible_offerings: compatible,
            explanation: "cheapest".to_string(),
            overrides,
        })
        .ok_or_else(|| LaunchError::InsufficientCapacity("no offering".to_string()))
}

/// A disruption controller that never acts.
pub(super) fn no_disruption(
    _: &Disruption,
    _: &DisruptionInput<'_>,
    _: &Provisioner,
) -> PassOutcome {
    PassOutcome::default()
}

/// A validation that always passes.
pub(super) fn always_valid(
    _: &Disruption,
    _: &DisruptionInput<'_>,
    _: &Provisioner,
    _: &Command,
) -> Result<(), String> {
    Ok(())
}

pub(super) const STAND_INS: Deciders = Deciders {
    schedule: first_fit_schedule,
    solve: first_fit_solve,
    choose_offering: cheapest_offering,
    next_command: no_disruption,
    validate: always_valid,
};

pub(super) const M5_LARGE_POOL: &str = "
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.large]}
        - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
";

pub(super) fn input(manifests: &str, duration: SimDuration) -> RunInput {
    let pools = load_str("pool.yaml", M5_LARGE_POOL).unwrap();
    let loaded = load_str("workloads.yaml", manifests).unwrap();
    RunInput {
        variant: "test".to_string(),
        seed: 1,
        duration,
        zones: vec!["us-east-1a".to_string(), "us-east-1b".to_string()],
        launch_latency: LaunchLatency::fixed(SimDuration::from_secs(30)),
        node_initialization: SimDuration::ZERO,
        startup_failures: Vec::new(),
        steps: vec![Step {
            at: SimTime::ZERO,
            action: StepAction::Apply {
                workloads: loaded.core.workloads,
                pdbs: loaded.core.pdbs,
            },
        }],
        sources: Vec::new(),
        nodepools: vec![PoolSetup {
            pool: pools.nodepools[0].clone(),
            catalog: catalog().clone(),
        }],
        reservations: Vec::new(),
        capacity_shortages: BTreeSet::new(),
        initial: None,
        snapshot_at: None,
        scheduler: SchedulerConfig::default(),
        karpenter: crate::engine::KarpenterOptions::default(),
        node_count_resource: None,
        interruptions: Default::default(),
        spot_price_changes: Vec::new(),
        cluster_autoscaler: None,
    }
}

pub(super) fn deployment(name: &str, replicas: u32, cpu: &str) -> String {
    deployment_sized(name, replicas, cpu, "1Gi")
}

pub(super) fn deployment_sized(name: &str, replicas: u32, cpu: &str, memory: &str) -> String {
    format!(
        "
apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
      containers:
        - name: c
          resources: {{requests: {{cpu: {cpu}, memory: {memory}}}}}
"
    )
}

pub(super) fn simulate(input: &RunInput) -> RunOutput {
    run_with(input, STAND_INS, &mut |_| {}).unwrap()
}

pub(super) fn events<'a>(out: &'a RunOutput, reason: &str) -> Vec<&'a EventRecord> {
    out.events.iter().filter(|e| e.reason == reason).collect()
}

/// 3 pods of 900m on m5.large (1930m allocatable): two fit per node, so
/// one batch launches exactly 2 nodes at t = 1 s (the batch closes 1 s
/// after the pods turned unschedulable at t = 0); each costs
/// $0.096/h × 3599 s = 95 973.33 µ$ → 95 973 µ$.
#[test]
fn one_batch_launches_two_m5_large_for_three_pods() {
    let out = simulate(&input(
        &deployment("web", 3, "900m"),
        SimDuration::from_hours(1),
    ));
    assert_eq!(out.nodeclaims.len(), 2);
    for claim in &out.nodeclaims {
        assert_eq!(claim.instance_type, "m5.large");
        assert_eq!(claim.launched_at, SimTime::from_secs(1));
        assert_eq!(claim.ready_at, Some(SimTime::from_secs(31)));
        assert_eq!(claim.price, Price::from_micros(96_000));
        assert_eq!(claim.cost, MicroUsd(95_973));
    }
    assert_eq!(out.summary.total_cost, MicroUsd(2 * 95_973));
    assert_eq!(out.summary.peak_nodes, 2);
    assert_eq!(out.summary.pods_scheduled, 3);
    assert_eq!(out.summary.pending_p50, Some(SimDuration::from_secs(31)));
    assert_eq!(events(&out, "Launched").len(), 2);
    assert_eq!(events(&out, "Scheduled").len(), 3);
    // Node-hours: 2 × 3599 s.
    assert_eq!(out.summary.node_millis, 2 * 3_599_000);
}

/// A Job of parallelism 2, completions 4 and 10 min per pod on one node:
/// pods bind at 31 s, finish at 10 min 31 s, the next two bind at once and
/// finish at 20 min 31 s, when the Job completes.
#[test]
fn job_pods_finish_after_their_duration() {
    let job = "
apiVersion: batch/v1
kind: Job
metadata:
  name: report
  annotations: {karpsim.dev/duration: 10m}
spec:
  parallelism: 2
  completions: 4
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: c
          resources: {requests: {cpu: 500m, memory: 1Gi}}
";
    let out = simulate(&input(job, SimDuration::from_hours(1)));
    let completed: Vec<SimTime> = events(&out, "Completed")
        .iter()
        .filter(|e| e.object.starts_with("pod/"))
        .map(|e| e.time)
        .collect();
    let first = SimTime::from_secs(10 * 60 + 31);
    let second = SimTime::from_secs(20 * 60 + 31);
    assert_eq!(completed, vec![first, first, second, second]);
    let job_done: Vec<&EventRecord> = events(&out, "Completed")
        .into_iter()
        .filter(|e| e.object == "job/default/report")
        .collect();
    assert_eq!(job_done.len(), 1);
    assert_eq!(job_done[0].time, second);
    assert_eq!(out.nodeclaims.len(), 1);
    assert_eq!(out.summary.pods_created, 4);
    assert_eq!(out.timeseries.last().unwrap().cpu_requested_millis, 0);
}

/// `activeDeadlineSeconds` fails a Job; it is not its pods' run time, as
/// kube-controller-manager's Job controller has it (`pastActiveDeadline` in
/// pkg/controller/job/job_controller.go, test `TestPastDeadlineJobFinished`):
/// a Job of 20-minute pods with a 15-minute deadline, applied at 0, fails
/// at 15 min with reason `DeadlineExceeded`, its two running pods are
/// deleted, no pod completes and no pod replaces them.
#[test]
fn job_fails_at_its_active_deadline() {
    let job = "
apiVersion: batch/v1
kind: Job
metadata:
  name: report
  annotations: {karpsim.dev/duration: 20m}
spec:
  parallelism: 2
  completions: 4
  activeDeadlineSeconds: 900
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: c
          resources: {requests: {cpu: 500m, memory: 1Gi}}
";
    let out = simulate(&input(job, SimDuration::from_hours(1)));
    let deadline = SimTime::from_secs(15 * 60);
    let failed = events(&out, "DeadlineExceeded");
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0].object, "job/default/report");
    assert_eq!(failed[0].time, deadline);
    assert_eq!(
        failed[0].message,
        "Job was active longer than specified deadline"
    );
    let killed: Vec<SimTime> = events(&out, "Killing").iter().map(|e| e.time).collect();
    assert_eq!(killed, vec![deadline, deadline]);
    assert!(events(&out, "Completed").is_empty());
    assert_eq!(out.summary.pods_created, 2);
    assert_eq!(out.summary.jobs_failed, 1);
    assert_eq!(out.timeseries.last().unwrap().cpu_requested_millis, 0);
}

/// A deadline later than the Job's work changes nothing: the Job
/// completes after its pods' `karpsim.dev/duration` and is not failed.
#[test]
fn job_finished_before_its_deadline_is_not_failed() {
    let job = "
apiVersion: batch/v1
kind: Job
metadata: {name: quick}
spec:
  activeDeadlineSeconds: 3000
  template:
    metadata:
      annotations: {karpsim.dev/duration: 5m}
    spec:
      restartPolicy: Never
      containers:
        - name: c
          resources: {requests: {cpu: 500m, memory: 1Gi}}
";
    let out = simulate(&input(job, SimDuration::from_hours(1)));
    assert!(events(&out, "DeadlineExceeded").is_empty());
    assert_eq!(out.summary.jobs_failed, 0);
    let done: Vec<SimTime> = events(&out, "Completed")
        .iter()
        .filter(|e| e.object == "job/default/quick")
        .map(|e| e.time)
        .collect();
    assert_eq!(done, vec![SimTime::from_secs(5 * 60 + 31)]);
}

/// Deleting a Deployment's pod makes the controller create a new pending
/// pod at once, which binds where the old one was.
#[test]
fn deleted_deployment_pod_is_recreated() {
    let mut run = input(&deployment("web", 2, "500m"), SimDuration::from_hours(2));
    run.steps.push(Step {
        at: SimTime::from_secs(3600),
        action: StepAction::Delete {
            target: Target {
                kind: TargetKind::Pod,
                namespace: "default".into(),
                name: "web-00001".into(),
            },
        },
    });
    let out = simulate(&run);
    let created: Vec<(SimTime, &str)> = events(&out, "SuccessfulCreate")
        .iter()
        .map(|e| (e.time, e.message.as_str()))
        .collect();
    assert_eq!(
        created,
        vec![
            (SimTime::ZERO, "Created pod: web-00001"),
            (SimTime::ZERO, "Created pod: web-00002"),
            (SimTime::from_secs(3600), "Created pod: web-00003"),
        ]
    );
    let rebound = events(&out, "Scheduled")
        .into_iter()
        .find(|e| e.object == "pod/default/web-00003")
        .unwrap();
    assert_eq!(rebound.time, SimTime::from_secs(3600));
    assert_eq!(out.nodeclaims.len(), 1, "the freed room is reused");
}

/// Scaling down removes pods; scaling up creates new pending pods.
#[test]
fn scale_steps_change_the_pod_count() {
    let mut run = input(&deployment("web", 2, "500m"), SimDuration::from_hours(1));
    let target = Target {
        kind: TargetKind::Deployment,
        namespace: "default".into(),
        name: "web".into(),
    };
    run.steps.push(Step {
        at: SimTime::from_secs(600),
        action: StepAction::Scale {
            target: target.clone(),
            replicas: 5,
        },
    });
    run.steps.push(Step {
        at: SimTime::from_secs(1200),
        action: StepAction::Scale {
            target,
            replicas: 1,
        },
    });
    let out = simulate(&run);
    assert_eq!(out.summary.pods_created, 5);
    assert_eq!(events(&out, "Killing").len(), 4);
    let at_end = out.timeseries.last().unwrap();
    assert_eq!(at_end.cpu_requested_millis, 500);
}

/// Scale and delete steps whose object does not exist change nothing and
/// are counted per verb and object, with the first time.
#[test]
fn steps_on_missing_objects_are_counted() {
    let mut run = input(&deployment("web", 1, "500m"), SimDuration::from_hours(1));
    let missing = Target {
        kind: TargetKind::Deployment,
        namespace: "shop".into(),
        name: "web".into(),
    };
    for (secs, action) in [
        (
            60,
            StepAction::Scale {
                target: missing.clone(),
                replicas: 4,
            },
        ),
        (
            120,
            StepAction::Scale {
                target: missing.clone(),
                replicas: 6,
            },
        ),
        (
            180,
            StepAction::Delete {
                target: Target {
                    kind: TargetKind::Pod,
                    namespace: "default".into(),
                    name: "nothing".into(),
                },
            },
        ),
    ] {
        run.steps.push(Step {
            at: SimTime::from_secs(secs),
            action,
        });
    }
    let out = simulate(&run);
    assert_eq!(out.summary.pods_created, 1);
    assert_eq!(out.summary.steps_missing_target(), 3);
    let found: Vec<(&str, &str, &str, SimTime, u64)> = out
        .summary
        .missing_targets
        .iter()
        .map(|m| {
            (
                m.verb,
                m.target.namespace.as_str(),
                m.target.name.as_str(),
                m.first_at,
                m.steps,
            )
        })
        .collect();
    assert_eq!(
        found,
        vec![
            ("delete", "default", "nothing", SimTime::from_secs(180), 1),
            ("scale", "shop", "web", SimTime::from_secs(60), 2),
        ]
    );
}

/// A scale past the pods one run creates stops the run with an error
/// before any pod is made, instead of exhausting memory.
#[test]
fn scaling_past_the_pod_limit_is_an_error_not_an_abort() {
    let mut run = input(&deployment("web", 1, "500m"), SimDuration::from_hours(1));
    run.steps.push(Step {
        at: SimTime::from_secs(60),
        action: StepAction::Scale {
            target: Target {
                kind: TargetKind::Deployment,
                namespace: "default".into(),
                name: "web".into(),
            },
            replicas: i32::MAX as u32,
        },
    });
    let err = run_with(&run, STAND_INS, &mut |_| {}).unwrap_err();
    assert!(
        matches!(err, EngineError::TooManyPods { limit, .. } if limit == MAX_PODS_CREATED),
        "{err}"
    );
    assert_eq!(
        err.to_string(),
        "variant test: the run would create more than 1000000 pods, the most one run \
         simulates (see Limits in scenarios/README.md)"
    );
}

/// A DaemonSet pod is bound on each node when it registers.
#[test]
fn daemonset_pods_land_on_registered_nodes() {
    let manifests = format!(
        "{}---
apiVersion: apps/v1
kind: DaemonSet
metadata: {{name: agent, namespace: kube-system}}
spec:
  selector: {{matchLabels: {{app: agent}}}}
  template:
    metadata: {{labels: {{app: agent}}}}
    spec:
      containers:
        - name: a
          resources: {{requests: {{cpu: 100m, memory: 64Mi}}}}
",
        deployment("web", 3, "900m")
    );
    let out = simulate(&input(&manifests, SimDuration::from_mins(10)));
    let agents: Vec<&EventRecord> = events(&out, "Scheduled")
        .into_iter()
        .filter(|e| e.object.starts_with("pod/kube-system/agent-"))
        .collect();
    assert_eq!(agents.len(), 2);
    assert!(agents.iter().all(|e| e.time == SimTime::from_secs(31)));
    assert_eq!(
        out.summary.pods_created, 3,
        "DaemonSet pods are not counted"
    );
}

/// A 5 min run where Deployment `web` (100m pods) grows by one pod every
/// 900 ms, `scale_ups` times from t = 0.
fn one_more_pod_every_900_ms(scale_ups: u32) -> RunInput {
    let mut run = input(
        &deployment_sized("web", 0, "100m", "100Mi"),
        SimDuration::from_mins(5),
    );
    let target = Target {
        kind: TargetKind::Deployment,
        namespace: "default".into(),
        name: "web".into(),
    };
    for i in 0..scale_ups {
        run.steps.push(Step {
            at: SimTime::from_millis(u64::from(i) * 900),
            action: StepAction::Scale {
                target: target.clone(),
                replicas: i + 1,
            },
        });
    }
    run
}

/// Karpenter core batcher: the window closes 1 s after the last new pod,
/// or 10 s after the first. Pods arrive every 900 ms: the idle timer never
/// fires, so the window closes at 10 s with the first 12 pods (t = 0 …
/// 9.9 s) and a second batch takes the rest.
#[test]
fn batch_window_idle_and_max() {
    let out = simulate(&one_more_pod_every_900_ms(15));
    let launches: Vec<SimTime> = events(&out, "Launched").iter().map(|e| e.time).collect();
    // 15 × 100m fit on one m5.large: batch 1 at 10 s, batch 2 (pods at
    // 10.8 s … 12.6 s) closes 1 s after the last one.
    assert_eq!(
        launches.len(),
        1,
        "second batch nominates to the first node"
    );
    assert_eq!(launches[0], SimTime::from_secs(10));
    let nominated_late = events(&out, "Nominated")
        .into_iter()
        .filter(|e| e.time > SimTime::from_secs(10))
        .map(|e| e.time)
        .collect::<BTreeSet<_>>();
    assert_eq!(
        nominated_late.into_iter().collect::<Vec<_>>(),
        vec![SimTime::from_millis(13_600)]
    );
}

/// options.go `--batch-idle-duration` / `--batch-max-duration` are
/// settings: with idle 2 s and max 5 s, pods arriving every 900 ms keep
/// the idle timer from firing and the window closes at its 5 s maximum;
/// with idle 500 ms, the first pod's window closes alone at 500 ms.
#[test]
fn batch_window_follows_the_settings() {
    let scaled = |karpenter: crate::engine::KarpenterOptions| {
        let mut run = one_more_pod_every_900_ms(8);
        run.karpenter = karpenter;
        let out = simulate(&run);
        events(&out, "Launched")
            .iter()
            .map(|e| e.time)
            .collect::<Vec<_>>()
    };
    let long = scaled(crate::engine::KarpenterOptions {
        batch_idle_duration: SimDuration::from_secs(2),
        batch_max_duration: SimDuration::from_secs(5),
        ..Default::default()
    });
    assert_eq!(long.first(), Some(&SimTime::from_secs(5)));
    let short = scaled(crate::engine::KarpenterOptions {
        batch_idle_duration: SimDuration::from_millis(500),
        ..Default::default()
    });
    assert_eq!(short.first(), Some(&SimTime::from_millis(500)));
}

/// aws: providers/instance CreateFleet with the fake EC2 API's
/// insufficient-capacity pools (instance suite_test.go, "should return an
/// ICE error when all attempted instance types return an ICE error", and
/// its partial case): one request carries both zones' offerings; EC2 has
/// none in us-east-1a, so the same request launches in us-east-1b at 1 s,
/// no launch fails, and us-east-1a is cached as unavailable.
#[test]
fn insufficient_capacity_in_one_override_launches_the_next() {
    let mut run = input(&deployment("web", 1, "500m"), SimDuration::from_mins(10));
    run.capacity_shortages.insert(OfferingKey {
        instance_type: "m5.large".into(),
        zone: "us-east-1a".into(),
        capacity_type: CapacityType::OnDemand,
    });
    let out = simulate(&run);
    assert_eq!(out.summary.launch_failures, 0);
    assert_eq!(out.nodeclaims.len(), 1);
    assert_eq!(out.nodeclaims[0].zone, "us-east-1b");
    assert_eq!(out.nodeclaims[0].launched_at, SimTime::from_secs(1));
    assert!(events(&out, "InsufficientCapacityError").is_empty());
    let launched = events(&out, "Launched");
    assert!(
        launched[0]
            .message
            .contains("1 offering(s) had insufficient capacity"),
        "{}",
        launched[0].message
    );
}

/// The same with both zones short: the one request fails once (one
/// failure, one event naming both offerings, not one per offering), both
/// offerings are cached for 3 minutes, and the pod waits: nothing can
/// launch until the cache expires at 181 s, when the next request fails
/// again (real deciders: while every offering is cached, the solve finds
/// no type and launches nothing).
#[test]
fn insufficient_capacity_in_every_override_fails_the_request_once() {
    let mut run = input(&deployment("web", 1, "500m"), SimDuration::from_mins(4));
    for zone in ["us-east-1a", "us-east-1b"] {
        run.capacity_shortages.insert(OfferingKey {
            instance_type: "m5.large".into(),
            zone: zone.into(),
            capacity_type: CapacityType::OnDemand,
        });
    }
    // The real solver: the stand-in's needs an allowed type.
    let out = run_with(&run, Deciders::default(), &mut |_| {}).unwrap();
    assert!(out.nodeclaims.is_empty());
    let ice = events(&out, "InsufficientCapacityError");
    let times: Vec<SimTime> = ice.iter().map(|e| e.time).collect();
    assert_eq!(times[0], SimTime::from_secs(1), "{times:?}");
    assert!(
        ice[0].message.contains("for all 2 CreateFleet override(s)"),
        "{}",
        ice[0].message
    );
    assert!(
        times[1..].iter().all(|t| *t >= SimTime::from_secs(181)),
        "{times:?}"
    );
    assert_eq!(out.summary.launch_failures, ice.len() as u64);
}

/// A pod that can never fit is solved again only when the cluster changes,
/// not every 10 s for the whole run.
#[test]
fn stuck_pods_do_not_busy_loop() {
    SOLVES.with(|s| s.set(0));
    let out = simulate(&input(
        &deployment("huge", 1, "64"),
        SimDuration::from_hours(6),
    ));
    let solves = SOLVES.with(Cell::get);
    assert!(solves <= 2, "{solves} solves");
    assert_eq!(out.summary.pods_unschedulable, 1);
    assert_eq!(out.summary.unschedulable_reasons.len(), 1);
    assert_eq!(
        out.summary.unschedulable_reasons[0].reason,
        "Failed to schedule pod, no instance type has enough cpu"
    );
    assert_eq!(out.timeseries.len(), 6 * 60 + 1);
}

/// Same input, same output; the ledger's total is the sum of the rows.
#[test]
fn runs_are_deterministic_and_totals_add_up() {
    let mut run = input(&deployment("web", 7, "700m"), SimDuration::from_hours(3));
    run.launch_latency =
        LaunchLatency::lognormal(SimDuration::from_secs(35), SimDuration::from_secs(60)).unwrap();
    let a = simulate(&run);
    let b = simulate(&run);
    assert_eq!(a, b);
    let sum: MicroUsd = a.nodeclaims.iter().map(|c| c.cost).sum();
    assert_eq!(sum, a.summary.total_cost);
    let ready: BTreeSet<SimTime> = a.nodeclaims.iter().filter_map(|c| c.ready_at).collect();
    assert!(ready.len() > 1, "latencies are drawn, not fixed");
}

/// A run that hands its events to a sink gives them in the order a run
/// that keeps them would, and the same summary and records.
#[test]
fn a_run_to_a_sink_streams_the_events_it_would_keep() {
    let mut run = input(&deployment("web", 7, "700m"), SimDuration::from_hours(1));
    run.launch_latency =
        LaunchLatency::lognormal(SimDuration::from_secs(35), SimDuration::from_secs(60)).unwrap();
    let kept = super::run(&run, &mut |_| {}).unwrap();
    let mut streamed: Vec<EventRecord> = Vec::new();
    let (out, profile) = super::run_to_sink(&run, &mut streamed, true, &mut |_| {}).unwrap();
    assert!(profile.is_some());
    assert!(!kept.events.is_empty());
    assert_eq!(streamed, kept.events);
    assert!(out.events.is_empty());
    assert_eq!(out.summary.events, kept.events.len());
    assert_eq!(
        RunOutput {
            events: kept.events.clone(),
            ..out
        },
        kept
    );
}

/// Offerings outside the scenario's zones are never launched.
#[test]
fn zones_outside_the_scenario_are_unavailable() {
    let restricted = restrict_zones(catalog(), &["us-east-1c".to_string()]);
    let m5 = restricted.get("m5.large").unwrap();
    assert!(
        m5.offerings
            .iter()
            .all(|o| o.available == (o.zone == "us-east-1c"))
    );
}

/// The same hand-derived case with the real kube-scheduler model and
/// Karpenter solve: 3 pods of 900m, NodePool allowing only m5.large
/// (1930m allocatable, two pods each) → exactly 2 nodes launched at 1 s,
/// each $0.096/h × 3599 s.
#[test]
fn real_deciders_launch_two_m5_large_for_three_pods() {
    let out = run(
        &input(&deployment("web", 3, "900m"), SimDuration::from_hours(1)),
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(out.nodeclaims.len(), 2);
    assert!(out.nodeclaims.iter().all(|c| c.instance_type == "m5.large"
        && c.launched_at == SimTime::from_secs(1)
        && c.cost == MicroUsd(95_973)));
    assert_eq!(out.summary.total_cost, MicroUsd(2 * 95_973));
    assert_eq!(out.summary.pods_scheduled, 3);
    assert_eq!(out.summary.pods_unschedulable, 0);
}

/// Putting offerings in the ICE cache one at a time (and renewing one),
/// and taking one out, leaves the catalogs exactly as rebuilding them from
/// the base catalogs with every cached offering marked would.
#[test]
fn ice_insertions_match_a_full_rebuild() {
    let run = input(&deployment("web", 1, "500m"), SimDuration::from_mins(10));
    let mut engine = Engine::new(&run, Deciders::default());
    let key = |zone: &str, capacity_type| OfferingKey {
        instance_type: "m5.large".into(),
        zone: zone.into(),
        capacity_type,
    };
    let before = engine.autoscaler.kp().catalogs.clone();
    engine.insert_ice(
        &key("us-east-1a", CapacityType::OnDemand),
        SimTime::from_secs(180),
    );
    engine.insert_ice(
        &key("us-east-1b", CapacityType::Spot),
        SimTime::from_secs(200),
    );
    engine.insert_ice(
        &key("us-east-1a", CapacityType::OnDemand),
        SimTime::from_secs(240),
    );
    assert_ne!(
        engine.autoscaler.kp().catalogs,
        before,
        "the cached offerings are unavailable"
    );
    assert_eq!(engine.ice.len(), 2);
    let incremental = engine.autoscaler.kp().catalogs.clone();
    engine.rebuild_catalogs();
    assert_eq!(incremental, engine.autoscaler.kp().catalogs);
    // An expiry leaves the catalogs stale; the next insertion rebuilds them
    // first, so the expired offering is available again.
    engine.insert_ice(&key("us-east-1c", CapacityType::OnDemand), SimTime::ZERO);
    engine
        .ice_expired(key("us-east-1c", CapacityType::OnDemand))
        .unwrap();
    assert!(engine.autoscaler.kp().catalogs_stale);
    engine.insert_ice(
        &key("us-east-1c", CapacityType::Spot),
        SimTime::from_secs(180),
    );
    assert!(!engine.autoscaler.kp().catalogs_stale);
    let incremental = engine.autoscaler.kp().catalogs.clone();
    engine.rebuild_catalogs();
    assert_eq!(incremental, engine.autoscaler.kp().catalogs);
    assert_eq!(engine.ice.len(), 3);
}

/// A profiled run produces the same output as a plain one and charges
/// time to the components that handled events.
#[test]
fn profiled_run_has_the_same_output() {
    let run = input(&deployment("web", 3, "500m"), SimDuration::from_mins(10));
    let plain = super::run(&run, &mut |_| {}).unwrap();
    let (profiled, profile) = run_profiled(&run, &mut |_| {}).unwrap();
    assert_eq!(plain, profiled);
    assert!(profile.events(Component::Scheduler) > 0);
    assert!(profile.events(Component::Provisioning) > 0);
    assert_eq!(profile.events(Component::ClusterAutoscaler), 0);
}
