//! Property tests over random small scenarios: a few Deployments with PDBs,
//! random scale steps, NodeClaims that expire (so nodes drain under PDBs),
//! an optional NodePool change (so nodes drift), and the emptiness and
//! drift stand-ins of `tests_disruption` as the disruption controller.
//! Every run checks, with [`run_checked`]:
//! - no voluntary eviction takes a PDB below its minimum (at every
//!   eviction);
//! - every pod is at all times exactly one of pending, running, completed,
//!   deleted or lost, and node request totals match their pods;
//! - the total cost is Σ over NodeClaims of lifetime × price with the 60 s
//!   minimum, each rounded half up to a micro-dollar.

use proptest::prelude::*;

use super::tests::{STAND_INS, catalog, input};
use super::tests_disruption::{drift, emptiness, pool_with, validate_emptiness};
use super::*;
use crate::ledger::MicroUsd;

/// Emptiness first, then drift, as upstream orders its methods.
fn emptiness_then_drift(
    disruption: &Disruption,
    input: &DisruptionInput<'_>,
    provisioner: &Provisioner,
) -> PassOutcome {
    let outcome = emptiness(disruption, input, provisioner);
    if outcome.command.is_some() {
        return outcome;
    }
    drift(disruption, input, provisioner)
}

const DECIDERS: Deciders = Deciders {
    next_command: emptiness_then_drift,
    validate: validate_emptiness,
    ..STAND_INS
};

#[derive(Debug, Clone)]
struct App {
    replicas: u32,
    cpu_millis: u32,
    /// `maxUnavailable` (Some) or `minAvailable: 50%` (None).
    max_unavailable: Option<u32>,
}

fn app() -> impl Strategy<Value = App> {
    (
        1u32..5,
        prop::sample::select(vec![250u32, 500, 900]),
        prop::option::of(0u32..3),
    )
        .prop_map(|(replicas, cpu_millis, max_unavailable)| App {
            replicas,
            cpu_millis,
            max_unavailable,
        })
}

fn manifests(apps: &[App]) -> String {
    let mut text = String::new();
    for (i, app) in apps.iter().enumerate() {
        let budget = match app.max_unavailable {
            Some(n) => format!("maxUnavailable: {n}"),
            None => "minAvailable: 50%".to_string(),
        };
        text.push_str(&format!(
            "---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: app{i}}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: app{i}}}}}
  template:
    metadata: {{labels: {{app: app{i}}}}}
    spec:
      terminationGracePeriodSeconds: 20
      containers:
        - name: c
          resources: {{requests: {{cpu: {cpu}m, memory: 512Mi}}}}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {{name: app{i}}}
spec:
  {budget}
  selector: {{matchLabels: {{app: app{i}}}}}
",
            replicas = app.replicas,
            cpu = app.cpu_millis,
        ));
    }
    text
}

/// Σ over NodeClaims of max(lifetime, 60 s) × price, rounded half up.
fn expected_total(out: &RunOutput, end: SimTime) -> MicroUsd {
    let mut total = 0i64;
    for claim in &out.nodeclaims {
        let stop = claim.deleted_at.unwrap_or(end);
        let lifetime = stop
            .saturating_duration_since(claim.launched_at)
            .as_millis()
            .max(60_000);
        let exact = i128::from(claim.price.micros()) * i128::from(lifetime);
        total += i64::try_from((exact + 1_800_000) / 3_600_000).unwrap();
    }
    MicroUsd(total)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 8, ..ProptestConfig::default() })]

    #[test]
    fn disruption_keeps_pdbs_pods_and_costs_straight(
        apps in prop::collection::vec(app(), 1..4),
        scales in prop::collection::vec((0usize..3, 0u32..7, 1u64..75), 0..5),
        expire_minutes in 15u64..45,
        tgp_minutes in prop::option::of(1u64..4),
        drift_at in prop::option::of(10u64..70),
    ) {
        let duration = SimDuration::from_mins(80);
        let mut run = input(&manifests(&apps), duration);
        let tgp = tgp_minutes.map_or(String::new(), |m| format!("      terminationGracePeriod: {m}m\n"));
        run.nodepools[0].pool = pool_with(
            &format!("      expireAfter: {expire_minutes}m\n{tgp}"),
            "  disruption: {consolidationPolicy: WhenEmpty, consolidateAfter: 30s}\n",
        );
        let mut steps: Vec<Step> = scales
            .iter()
            .map(|&(app, replicas, minute)| Step {
                at: SimTime::from_secs(minute * 60),
                action: StepAction::Scale {
                    target: Target {
                        kind: TargetKind::Deployment,
                        namespace: "default".into(),
                        name: format!("app{}", app % apps.len()),
                    },
                    replicas,
                },
            })
            .collect();
        if let Some(minute) = drift_at {
            let mut changed = run.nodepools[0].pool.clone();
            changed.labels.insert("rev".to_string(), "2".to_string());
            steps.push(Step {
                at: SimTime::from_secs(minute * 60),
                action: StepAction::NodePools {
                    nodepools: vec![PoolSetup { pool: changed, catalog: catalog().clone() }],
                    node_count_resource: None,
                },
            });
        }
        steps.sort_by_key(|s| s.at);
        run.steps.extend(steps);
        let (out, violations) = run_checked(&run, DECIDERS).unwrap();
        prop_assert!(violations.is_empty(), "{:#?}", violations);
        let end = SimTime::ZERO + duration;
        prop_assert_eq!(out.summary.total_cost, expected_total(&out, end));
        let rows: MicroUsd = out.nodeclaims.iter().map(|c| c.cost).sum();
        prop_assert_eq!(rows, out.summary.total_cost);
        let terminated: u64 = out.summary.churn.nodeclaims_terminated_by_reason.values().sum();
        let deleted = out.nodeclaims.iter().filter(|c| c.deleted_at.is_some()).count() as u64;
        prop_assert_eq!(terminated, deleted);
    }
}
