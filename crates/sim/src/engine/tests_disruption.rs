//! Disruption, termination and drain in the engine, with hand-derived
//! numbers. The scheduler, solver and launch are the stand-ins of
//! `tests`; the disruption controller is one of two stand-ins built on the
//! real foundations (candidates, filters, budgets):
//! - `emptiness`: upstream's Emptiness method (every empty, consolidatable
//!   candidate within its pool's `Empty` budget, validated after 15 s);
//! - `drift`: the first drifted candidate within its `Drifted` budget,
//!   replaced by one m5.large NodeClaim for its pods (no validation).
//!
//! Shared timings: the first pod turns unschedulable at 0, its batch closes
//! at 1 s, the node launches at 1 s and is ready (30 s latency) at 31 s,
//! where the pod binds. Pods have the default 30 s termination grace.

use std::collections::BTreeMap;

use super::tests::{M5_LARGE_POOL, STAND_INS, catalog, deployment, events, input, no_disruption};
use super::*;
use crate::cloud::Price;
use crate::karpenter::disruption::candidates::{
    CandidateInputs, DisruptionClass, candidates, drift_filter, emptiness_filter,
};
use crate::karpenter::disruption::emptiness::{
    EmptyCommand, empty_command, validate_empty_command,
};
use crate::karpenter::disruption::reasons::Unconsolidatable;
use crate::karpenter::disruption::types::NodePoolsByName;
use crate::karpenter::disruption::{budget_mapping, controller::Method};
use crate::karpenter::instance_types::filter_instance_types;
use crate::kube::requirements::Requirements;
use crate::kube::resources::Resources;
use crate::ledger::MicroUsd;
use crate::nodepool::DisruptionReason;
use crate::pdb::PdbLimits;
use karpsim_input::nodepools::load_str;

fn pools_by_name<'a>(input: &DisruptionInput<'a>) -> NodePoolsByName<'a> {
    input
        .nodepools
        .iter()
        .map(|c| (c.pool.name.as_str(), c.pool))
        .collect()
}

fn candidate_list(
    input: &DisruptionInput<'_>,
    pools: &NodePoolsByName<'_>,
    class: DisruptionClass,
) -> Vec<crate::karpenter::disruption::Candidate> {
    let pdbs = PdbLimits::from_cluster(input.cluster, input.scales);
    let inputs = CandidateInputs {
        cluster: input.cluster,
        pools,
        pdbs: &pdbs,
        in_flight: input.in_flight,
        now: input.now,
        cache: None,
        horizon: None,
    };
    candidates(&inputs, class)
}

fn empty_candidates(input: &DisruptionInput<'_>) -> Vec<crate::karpenter::disruption::Candidate> {
    let pools = pools_by_name(input);
    candidate_list(input, &pools, DisruptionClass::Graceful)
        .into_iter()
        .filter(|c| emptiness_filter(c, pools[c.nodepool()]).is_ok())
        .collect()
}

/// Upstream's Emptiness method over the real candidate code.
pub(super) fn emptiness(
    _: &Disruption,
    input: &DisruptionInput<'_>,
    _: &Provisioner,
) -> PassOutcome {
    let pools = pools_by_name(input);
    let mut budgets = budget_mapping(input.cluster, &pools, DisruptionReason::Empty, input.now);
    let decision = empty_command(empty_candidates(input), &mut budgets);
    let command = decision.command.map(|c| Command {
        method: Method::Emptiness,
        reason: DisruptionReason::Empty,
        candidates: c.candidates.iter().map(|c| c.node).collect(),
        replacements: Vec::new(),
        estimated_savings: c
            .candidates
            .iter()
            .fold(Price::ZERO, |sum, c| sum + c.price),
        needs_validation: true,
        explanation: "empty".to_string(),
    });
    PassOutcome {
        consolidated: Vec::new(),
        command,
        unconsolidatable: Vec::new(),
    }
}

pub(super) fn validate_emptiness(
    _: &Disruption,
    input: &DisruptionInput<'_>,
    _: &Provisioner,
    command: &Command,
) -> Result<(), String> {
    let pools = pools_by_name(input);
    let current = empty_candidates(input);
    let old = EmptyCommand {
        candidates: current
            .iter()
            .filter(|c| command.candidates.contains(&c.node))
            .cloned()
            .collect(),
    };
    if old.candidates.is_empty() {
        return Err("candidates are no longer valid".to_string());
    }
    let budgets = budget_mapping(input.cluster, &pools, DisruptionReason::Empty, input.now);
    validate_empty_command(&old, &current, budgets)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// The first drifted candidate within budget, replaced by one m5.large.
pub(super) fn drift(_: &Disruption, input: &DisruptionInput<'_>, _: &Provisioner) -> PassOutcome {
    let pools = pools_by_name(input);
    let mut budgets = budget_mapping(input.cluster, &pools, DisruptionReason::Drifted, input.now);
    let found = candidate_list(input, &pools, DisruptionClass::Eventual)
        .into_iter()
        .filter(|c| {
            input
                .cluster
                .node(c.node)
                .is_some_and(|n| drift_filter(n).is_ok())
        })
        .find(|c| budgets.get_mut(c.nodepool()).is_some_and(|b| *b > 0));
    let Some(candidate) = found else {
        return PassOutcome::default();
    };
    let pool_index = input
        .nodepools
        .iter()
        .position(|c| *c.pool.name == *candidate.nodepool())
        .expect("pool exists");
    let context = &input.nodepools[pool_index];
    let type_index = filter_instance_types(context.pool, context.catalog).allowed[0];
    let mut requests = Resources::ZERO;
    for pod in candidate.reschedulable_pods().iter() {
        requests += input.cluster.pod(*pod).unwrap().spec.requests;
    }
    let replacements = if candidate.reschedulable_pods().is_empty() {
        Vec::new()
    } else {
        vec![NewNodeClaim {
            nodepool: pool_index,
            requirements: Requirements::new(),
            instance_types: vec![type_index],
            pods: candidate.reschedulable_pods().to_vec(),
            requests,
            min_values_relaxed: None,
        }]
    };
    PassOutcome {
        consolidated: Vec::new(),
        command: Some(Command {
            method: Method::Drift,
            reason: DisruptionReason::Drifted,
            candidates: vec![candidate.node],
            replacements,
            estimated_savings: Price::ZERO,
            needs_validation: false,
            explanation: "drifted".to_string(),
        }),
        unconsolidatable: Vec::new(),
    }
}

const EMPTINESS: Deciders = Deciders {
    next_command: emptiness,
    validate: validate_emptiness,
    ..STAND_INS
};

const DRIFT: Deciders = Deciders {
    next_command: drift,
    ..STAND_INS
};

/// The m5.large pool with extra lines appended under `spec:` (at two
/// spaces) and under `spec.template.spec:` (at six spaces).
pub(super) fn pool_with(template_extra: &str, spec_extra: &str) -> NodePool {
    let text = format!("{M5_LARGE_POOL}{template_extra}{spec_extra}");
    load_str("pool.yaml", &text).unwrap().nodepools[0].clone()
}

fn with_pool(mut run: RunInput, pool: NodePool) -> RunInput {
    run.nodepools[0].pool = pool;
    run
}

fn scale(name: &str, replicas: u32, at: SimTime) -> Step {
    Step {
        at,
        action: StepAction::Scale {
            target: Target {
                kind: TargetKind::Deployment,
                namespace: "default".into(),
                name: name.into(),
            },
            replicas,
        },
    }
}

fn checked(run: &RunInput, deciders: Deciders) -> RunOutput {
    let (out, violations) = run_checked(run, deciders).unwrap();
    assert!(violations.is_empty(), "{violations:#?}");
    out
}

const CONSOLIDATE_AFTER_30S: &str =
    "  disruption: {consolidationPolicy: WhenEmpty, consolidateAfter: 30s}\n";

/// core: disruption/emptiness_test.go "can delete empty nodes with
/// consolidation" with consolidateAfter 30 s. The pod leaves at 600 s
/// (lastPodEventTime = 600 s), the node is consolidatable at 630 s (a pass
/// boundary), the command is validated at 645 s and the drain ends after
/// the 5 s minimum: the node is terminated at 650 s, billed 649 s at
/// $0.096/h = 17 306.67 µ$ → 17 307 µ$.
#[test]
fn empty_node_goes_after_consolidate_after_and_validation() {
    let mut run = with_pool(
        input(&deployment("web", 1, "500m"), SimDuration::from_hours(1)),
        pool_with("", CONSOLIDATE_AFTER_30S),
    );
    run.steps.push(scale("web", 0, SimTime::from_secs(600)));
    let out = checked(&run, EMPTINESS);
    assert_eq!(out.nodeclaims.len(), 1);
    let claim = &out.nodeclaims[0];
    assert_eq!(claim.deleted_at, Some(SimTime::from_secs(650)));
    assert_eq!(claim.reason_deleted, "empty");
    assert_eq!(claim.cost, MicroUsd(17_307));
    assert_eq!(out.summary.total_cost, MicroUsd(17_307));
    let deleting = events(&out, "Deleting");
    assert_eq!(deleting.len(), 1);
    assert_eq!(deleting[0].time, SimTime::from_secs(645));
    assert_eq!(
        out.summary.churn.nodeclaims_terminated_by_reason,
        BTreeMap::from([("empty".to_string(), 1)])
    );
    assert_eq!(out.summary.churn.evictions(), 0);
    assert_eq!(
        out.summary.churn.consolidation_savings_per_hour,
        Price::from_micros(96_000)
    );
    // $0.096/h over the 2 955 s left after the deletion at 645 s: 78 800 µ$.
    assert_eq!(out.summary.churn.consolidation_savings, MicroUsd(78_800));
}

/// core: disruption/emptiness_test.go "should not allow emptiness if the
/// budget is fully blocking": a budget of 0 nodes keeps the empty node.
#[test]
fn zero_budget_blocks_emptiness() {
    let mut run = with_pool(
        input(&deployment("web", 1, "500m"), SimDuration::from_hours(1)),
        pool_with(
            "",
            "  disruption: {consolidationPolicy: WhenEmpty, consolidateAfter: 30s, budgets: [{nodes: \"0\"}]}\n",
        ),
    );
    run.steps.push(scale("web", 0, SimTime::from_secs(600)));
    let out = checked(&run, EMPTINESS);
    assert_eq!(out.nodeclaims.len(), 1);
    assert_eq!(out.nodeclaims[0].deleted_at, None);
    assert!(events(&out, "Deleting").is_empty());
}

/// A drained pod leaves after its 30 s grace; the replacement is created at
/// eviction time. With a PDB of maxUnavailable 1 over 3 replicas, only one
/// pod may be unavailable: each eviction waits until the previous pod's
/// replacement runs, so the 3 evictions happen at 3 different instants,
/// the first at expiry (1 s + 1 h), the others only once the new node is
/// ready (expiry + 1 s batch + 30 s latency = 3 632 s) — and no eviction
/// ever takes the PDB below its minimum of 2 (checked at every eviction).
#[test]
fn pdb_max_unavailable_one_drains_in_rounds() {
    let manifests = format!(
        "{}---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {{name: web}}
spec:
  maxUnavailable: 1
  selector: {{matchLabels: {{app: web}}}}
",
        deployment("web", 3, "500m")
    );
    let run = with_pool(
        input(&manifests, SimDuration::from_mins(70)),
        pool_with("      expireAfter: 1h\n", ""),
    );
    let out = checked(
        &run,
        Deciders {
            next_command: no_disruption,
            ..STAND_INS
        },
    );
    let evicted: Vec<SimTime> = events(&out, "Evicted").iter().map(|e| e.time).collect();
    assert_eq!(evicted.len(), 3, "{evicted:?}");
    assert_eq!(evicted[0], SimTime::from_secs(3601));
    assert!(evicted[1] >= SimTime::from_secs(3632), "{evicted:?}");
    assert!(evicted[2] > evicted[1], "{evicted:?}");
    assert!(out.summary.churn.pdb_blocked_evictions >= 2);
    assert_eq!(
        out.summary.churn.evictions_by_reason,
        BTreeMap::from([("expired".to_string(), 3)])
    );
    assert_eq!(
        out.summary.churn.pod_restarts,
        BTreeMap::from([("deployment/default/web".to_string(), 3)])
    );
    assert_eq!(out.summary.pods_created, 6);
    assert_eq!(out.timeseries.last().unwrap().cpu_requested_millis, 1500);
}

/// core: nodeclaim/expiration "should expire a NodeClaim at exactly its
/// expireAfter": the node launched at 1 s with expireAfter 30m is deleted
/// at 1 801 s whatever the (zero) budgets say, and with no pod (the
/// Deployment was scaled to 0) terminates 5 s later (minimum drain).
#[test]
fn expiration_at_exactly_expire_after() {
    let mut run = with_pool(
        input(&deployment("web", 1, "500m"), SimDuration::from_hours(1)),
        pool_with(
            "      expireAfter: 30m\n",
            "  disruption: {consolidateAfter: Never, budgets: [{nodes: \"0\"}]}\n",
        ),
    );
    run.steps.push(scale("web", 0, SimTime::from_secs(600)));
    let out = checked(&run, EMPTINESS);
    let first = &out.nodeclaims[0];
    assert_eq!(first.launched_at, SimTime::from_secs(1));
    assert_eq!(first.reason_deleted, "expired");
    assert_eq!(first.deleted_at, Some(SimTime::from_secs(1806)));
    let deleting = events(&out, "Deleting");
    assert_eq!(deleting[0].time, SimTime::from_secs(1801));
}

/// core: node/termination "should delete pods at the termination grace
/// period deadline": a do-not-disrupt pod is never evicted, but with
/// terminationGracePeriod 2m the NodeClaim deleted at 3 601 s (expiry)
/// force-deletes it at 3 601 + 120 − 30 = 3 691 s, it leaves 30 s later
/// and the instance terminates at 3 721 s.
#[test]
fn termination_grace_period_forces_do_not_disrupt_pods() {
    let manifests = "
apiVersion: apps/v1
kind: Deployment
metadata: {name: pinned}
spec:
  replicas: 1
  selector: {matchLabels: {app: pinned}}
  template:
    metadata:
      labels: {app: pinned}
      annotations: {karpenter.sh/do-not-disrupt: \"true\"}
    spec:
      containers:
        - name: c
          resources: {requests: {cpu: 500m, memory: 1Gi}}
";
    let run = with_pool(
        input(manifests, SimDuration::from_mins(70)),
        pool_with(
            "      expireAfter: 1h\n      terminationGracePeriod: 2m\n",
            "",
        ),
    );
    let out = checked(&run, EMPTINESS);
    assert!(events(&out, "Evicted").is_empty());
    let forced = events(&out, "Disrupted");
    assert_eq!(forced.len(), 1);
    assert_eq!(forced[0].time, SimTime::from_secs(3691));
    assert_eq!(out.summary.churn.forced_pod_deletions, 1);
    assert_eq!(out.nodeclaims[0].deleted_at, Some(SimTime::from_secs(3721)));
    assert_eq!(
        out.summary.churn.pod_restarts,
        BTreeMap::from([("deployment/default/pinned".to_string(), 1)])
    );
}

/// core: node/termination/suite_test.go "should evict pods in order and
/// wait until pods are fully deleted": the expired node (deleted at
/// 3 601 s) evicts its ordinary pod at once; that pod terminates for its
/// 60 s grace, and the critical pod of the next tier is evicted only when
/// it is gone (3 661 s), not at the next drain look while it still
/// terminates; the instance terminates 30 s later, at 3 691 s.
#[test]
fn drain_tiers_wait_until_earlier_pods_are_fully_deleted() {
    let manifests = "
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      terminationGracePeriodSeconds: 60
      containers:
        - name: c
          resources: {requests: {cpu: 500m, memory: 1Gi}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: crit}
spec:
  replicas: 1
  selector: {matchLabels: {app: crit}}
  template:
    metadata: {labels: {app: crit}}
    spec:
      priorityClassName: system-cluster-critical
      containers:
        - name: c
          resources: {requests: {cpu: 500m, memory: 1Gi}}
";
    let run = with_pool(
        input(manifests, SimDuration::from_mins(65)),
        pool_with("      expireAfter: 1h\n", ""),
    );
    let out = checked(&run, EMPTINESS);
    let first = &out.nodeclaims[0];
    let evicted: Vec<(SimTime, &str)> = events(&out, "Evicted")
        .iter()
        .filter(|e| e.message.contains(&first.name))
        .map(|e| (e.time, e.object.as_str()))
        .collect();
    assert_eq!(evicted.len(), 2, "{evicted:?}");
    assert_eq!(evicted[0].0, SimTime::from_secs(3601));
    assert!(evicted[0].1.contains("web"), "{evicted:?}");
    assert_eq!(evicted[1].0, SimTime::from_secs(3661));
    assert!(evicted[1].1.contains("crit"), "{evicted:?}");
    assert_eq!(first.deleted_at, Some(SimTime::from_secs(3691)));
}

/// core: disruption/drift_test.go "should replace drifted nodes": a label
/// added to the NodePool template at 1 h drifts the node (NodePoolDrifted);
/// the pass at 3 600 s launches the replacement first; it is ready at
/// 3 630 s, when the old node is deleted; its pod is evicted then and
/// leaves after 30 s, so the old instance terminates at 3 660 s.
#[test]
fn drift_launches_the_replacement_then_deletes() {
    let mut run = input(&deployment("web", 1, "500m"), SimDuration::from_mins(70));
    let changed = pool_with("", "").clone();
    let mut changed = changed;
    changed.labels.insert("team".to_string(), "web".to_string());
    run.steps.push(Step {
        at: SimTime::from_secs(3600),
        action: StepAction::NodePools {
            nodepools: vec![PoolSetup {
                pool: changed,
                catalog: catalog().clone(),
            }],
            node_count_resource: None,
        },
    });
    let out = checked(&run, DRIFT);
    assert_eq!(out.nodeclaims.len(), 2);
    let (old, new) = (&out.nodeclaims[0], &out.nodeclaims[1]);
    assert_eq!(new.launched_at, SimTime::from_secs(3600));
    assert_eq!(new.reason_launched, "drifted");
    assert_eq!(new.ready_at, Some(SimTime::from_secs(3630)));
    assert_eq!(old.reason_deleted, "drifted");
    assert_eq!(old.deleted_at, Some(SimTime::from_secs(3660)));
    assert!(new.launched_at < old.deleted_at.unwrap());
    let drifted = events(&out, "Drifted");
    assert_eq!(drifted.len(), 1);
    assert!(drifted[0].message.contains("NodePoolDrifted"));
    assert_eq!(
        events(&out, "Deleting")[0].time,
        SimTime::from_secs(3630),
        "deleted only once the replacement is initialized"
    );
    assert_eq!(
        out.summary.churn.evictions_by_reason,
        BTreeMap::from([("drifted".to_string(), 1)])
    );
    assert_eq!(
        out.summary.churn.commands_by_method,
        BTreeMap::from([("drift".to_string(), 1)])
    );
}

/// The same empty-node case with the real disruption controller (and the
/// real kube-scheduler and solve): deleted at 645 s, terminated at 650 s.
#[test]
fn real_controller_deletes_the_empty_node_at_the_same_time() {
    let mut run = with_pool(
        input(&deployment("web", 1, "500m"), SimDuration::from_hours(1)),
        pool_with("", CONSOLIDATE_AFTER_30S),
    );
    run.steps.push(scale("web", 0, SimTime::from_secs(600)));
    let out = checked(&run, Deciders::default());
    assert_eq!(out.nodeclaims.len(), 1);
    assert_eq!(out.nodeclaims[0].deleted_at, Some(SimTime::from_secs(650)));
    assert_eq!(out.nodeclaims[0].reason_deleted, "empty");
    assert_eq!(
        out.summary.churn.commands_by_method,
        BTreeMap::from([("emptiness".to_string(), 1)])
    );
}

/// core: disruption/consolidation_test.go "considers
/// karpenter.sh/do-not-disrupt set to true on nodes": the NodePool
/// template's annotation is copied to the NodeClaim at launch, so the same
/// empty node as above is never a candidate and stays for the whole run,
/// under the real controller.
#[test]
fn template_do_not_disrupt_annotation_holds_the_empty_node() {
    let text = M5_LARGE_POOL.replace(
        "  template:\n    spec:\n",
        "  template:\n    metadata: {annotations: {karpenter.sh/do-not-disrupt: \"true\"}}\n    spec:\n",
    );
    assert_ne!(text, M5_LARGE_POOL);
    let pool = load_str("pool.yaml", &format!("{text}{CONSOLIDATE_AFTER_30S}"))
        .unwrap()
        .nodepools[0]
        .clone();
    let mut run = with_pool(
        input(&deployment("web", 1, "500m"), SimDuration::from_hours(1)),
        pool,
    );
    run.steps.push(scale("web", 0, SimTime::from_secs(600)));
    let out = checked(&run, Deciders::default());
    assert_eq!(out.nodeclaims.len(), 1);
    assert_eq!(out.nodeclaims[0].deleted_at, None);
    assert!(events(&out, "Deleting").is_empty());
    assert!(out.summary.churn.commands_by_method.is_empty());
}

/// A reason whose sentence names the pass time (in ms), so every pass's
/// message differs from the last one.
fn pass_note(now: SimTime) -> Unconsolidatable {
    Unconsolidatable::WouldCreate(now.as_millis() as usize)
}

/// Notes every node with [`pass_note`].
fn note_every_node(_: &Disruption, input: &DisruptionInput<'_>, _: &Provisioner) -> PassOutcome {
    PassOutcome {
        consolidated: Vec::new(),
        command: None,
        unconsolidatable: input
            .cluster
            .nodes()
            .map(|(id, _)| (id, pass_note(input.now)))
            .collect(),
    }
}

/// core: disruption/events `Unconsolidatable` (DedupeTimeout 15 min, keyed
/// by the node) with events/recorder.go's cache: a node's next event is
/// dropped until more than 15 min after the last one was published, even
/// with a new message; `disruption.csv` keeps the latest published reason
/// (what a user of the cluster could read), not a dropped one.
/// Passes every 10 s (a pass runs whether or not the cluster changed; only
/// consolidation methods skip, and this stand-in has none). Published: 10,
/// then the first pass more than 15 min after the last: 920, 1830, 2740,
/// 3650.
#[test]
fn unconsolidatable_events_are_deduplicated_per_node_for_15_minutes() {
    let run = input(&deployment("web", 1, "500m"), SimDuration::from_secs(3700));
    let out = checked(
        &run,
        Deciders {
            next_command: note_every_node,
            ..STAND_INS
        },
    );
    let logged = events(&out, "Unconsolidatable");
    let times: Vec<u64> = logged.iter().map(|e| e.time.as_millis() / 1000).collect();
    assert_eq!(times, [10, 920, 1830, 2740, 3650]);
    for event in &logged {
        assert_eq!(event.message, pass_note(event.time).to_string());
    }
    let note = &out.disruption[0];
    assert_eq!(note.time, SimTime::from_secs(3650));
    assert_eq!(
        note.reason,
        "Can't remove without creating 3650000 candidates"
    );
}

/// What [`record_consolidation_state`] saw: (pass time, state) in seconds.
static CONSOLIDATION_STATES: std::sync::Mutex<Vec<(u64, Option<u64>)>> =
    std::sync::Mutex::new(Vec::new());

fn record_consolidation_state(
    _: &Disruption,
    input: &DisruptionInput<'_>,
    _: &Provisioner,
) -> PassOutcome {
    let seconds = |t: SimTime| t.as_millis() / 1000;
    CONSOLIDATION_STATES
        .lock()
        .unwrap()
        .push((seconds(input.now), input.consolidation_state.map(seconds)));
    PassOutcome::default()
}

/// core: state/cluster.go `MarkUnconsolidated` callers and
/// `ConsolidationState`; state/suite_test.go "Consolidated State" ("should
/// update the consolidated value when state timeout (5m) has passed and
/// state hasn't changed"). The node launches at 1 s (a mark), registers at
/// 21 s (none) and initializes at 31 s, where the pod binds: 31 s until
/// the pass 5 min later (340 s) renews it. The scale to 0 deletes the pod
/// at 600 s, a mark, which the pass at 900 s (exactly 5 min later)
/// renews.
#[test]
fn the_consolidation_state_moves_on_upstreams_marks_and_every_5_minutes() {
    let mut run = input(&deployment("web", 1, "500m"), SimDuration::from_secs(1000));
    run.steps.push(scale("web", 0, SimTime::from_secs(600)));
    checked(
        &run,
        Deciders {
            next_command: record_consolidation_state,
            ..STAND_INS
        },
    );
    let seen: BTreeMap<u64, Option<u64>> = CONSOLIDATION_STATES
        .lock()
        .unwrap()
        .iter()
        .copied()
        .collect();
    for (pass, state) in [
        (10, 1),
        (30, 1),
        (40, 31),
        (330, 31),
        (340, 340),
        (590, 340),
        (610, 600),
        (890, 600),
        (900, 900),
        (990, 900),
    ] {
        assert_eq!(seen.get(&pass), Some(&Some(state)), "pass at {pass} s");
    }
}
