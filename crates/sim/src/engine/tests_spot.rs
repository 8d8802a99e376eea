//! Spot prices and interruptions in the engine, with the real
//! kube-scheduler model, Karpenter solve and launch decision (the
//! disruption controller stays idle so that only interruptions remove
//! nodes), a fixed 30 s launch latency and hand-derived timings.
//!
//! Shared timings: pods turn unschedulable at 0, the batch closes at 1 s,
//! nodes launch at 1 s and are ready at 31 s. Pods have the default 30 s
//! termination grace. After a notice at T the NodeClaim is deleted at once
//! and its pods become provisioning demand: the batch closes at T + 1 s,
//! the replacement launches then and is ready at T + 31 s.

use super::tests::{always_valid, catalog, deployment, events, no_disruption};
use super::*;
use crate::cloud::Price;
use crate::ledger::MicroUsd;
use crate::spot::{Fraction, NameFilter, RowRef, Storm, TraceNotice, draw_node_interruption};
use karpsim_input::nodepools::load_str;

const REAL: Deciders = Deciders {
    schedule: KubeScheduler::schedule,
    solve: Provisioner::solve,
    choose_offering: provisioning::choose_offering,
    next_command: no_disruption,
    validate: always_valid,
};

const ZONES: [&str; 2] = ["us-east-1a", "us-east-1b"];

fn pool(capacity_types: &[&str], types: &[&str]) -> String {
    format!(
        "
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {{name: default}}
spec:
  template:
    spec:
      nodeClassRef: {{group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}}
      requirements:
        - {{key: node.kubernetes.io/instance-type, operator: In, values: [{}]}}
        - {{key: karpenter.sh/capacity-type, operator: In, values: [{}]}}
",
        types.join(", "),
        capacity_types.join(", ")
    )
}

fn spot_input(pool_yaml: &str, manifests: &str, duration: SimDuration) -> RunInput {
    let pools = load_str("pool.yaml", pool_yaml).unwrap();
    let loaded = load_str("workloads.yaml", manifests).unwrap();
    RunInput {
        variant: "spot".to_string(),
        seed: 1,
        duration,
        zones: ZONES.iter().map(|z| z.to_string()).collect(),
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
        interruptions: InterruptionSettings::default(),
        spot_price_changes: Vec::new(),
        sources: Vec::new(),
        cluster_autoscaler: None,
    }
}

fn simulate(input: &RunInput) -> RunOutput {
    let (out, violations) = run_checked(input, REAL).unwrap();
    assert!(violations.is_empty(), "{violations:#?}");
    out
}

/// The cheapest spot offering of `instance_type` in the test zones (ties:
/// first zone), as the launch picks it.
fn cheapest_spot(instance_type: &str) -> (&'static str, Price) {
    catalog()
        .get(instance_type)
        .unwrap()
        .offerings
        .iter()
        .filter(|o| o.capacity_type == CapacityType::Spot && ZONES.contains(&o.zone))
        .map(|o| (o.zone, o.price))
        .min_by_key(|(zone, price)| (*price, *zone))
        .unwrap()
}

fn storm(at: SimTime, types: &[&str], fraction: &str, unavailable_for: SimDuration) -> Storm {
    Storm {
        at,
        instance_types: NameFilter::Only(types.iter().map(|t| t.to_string()).collect()),
        zones: NameFilter::All,
        fraction: Fraction::parse(fraction).unwrap(),
        unavailable_for,
        capacity_types: Storm::spot_only(),
    }
}

fn trace(
    at: SimTime,
    instance_type: &str,
    zone: &str,
    node: Option<&str>,
    line: u64,
) -> TraceNotice {
    TraceNotice {
        at,
        instance_type: instance_type.to_string(),
        zone: zone.to_string(),
        node: node.map(str::to_string),
        row: RowRef::Line(line),
    }
}

fn interrupted_claims(out: &RunOutput) -> Vec<&NodeClaimRecord> {
    out.nodeclaims
        .iter()
        .filter(|c| c.reason_deleted == INTERRUPTED)
        .collect()
}

const HOUR: SimTime = SimTime::from_secs(3600);

/// A storm of fraction 0.3 over 10 matching spot nodes interrupts
/// ⌈10 × 0.3⌉ = 3 of them at its time; each loses its one pod (1500m on
/// m5.large, one per node). Karpenter marks the node's offering
/// unavailable, so the 3 replacements go to the other zone (reference §5;
/// launch falls back to another zone as CreateFleet would).
#[test]
fn storm_interrupts_its_fraction_and_replacements_use_the_other_zone() {
    let mut run = spot_input(
        &pool(&["spot"], &["m5.large"]),
        &deployment("web", 10, "1500m"),
        SimDuration::from_hours(2),
    );
    run.interruptions.storms = vec![storm(HOUR, &["m5.large"], "0.3", SimDuration::ZERO)];
    let out = simulate(&run);
    let (zone, _) = cheapest_spot("m5.large");
    let other = ZONES.iter().find(|z| **z != zone).unwrap();
    let notices = events(&out, "SpotInterrupted");
    assert_eq!(notices.len(), 3);
    assert!(notices.iter().all(|e| e.time == HOUR));
    let spot = &out.summary.spot;
    assert_eq!(spot.interruptions_by_source.get("storm"), Some(&3));
    assert_eq!(spot.pods_disrupted, 3);
    assert_eq!(
        out.summary.churn.evictions_by_reason.get(INTERRUPTED),
        Some(&3)
    );
    assert_eq!(interrupted_claims(&out).len(), 3);
    let replacements: Vec<&NodeClaimRecord> = out
        .nodeclaims
        .iter()
        .filter(|c| c.launched_at > HOUR)
        .collect();
    assert_eq!(replacements.len(), 3, "one pod per node");
    for claim in &replacements {
        assert_eq!(claim.zone, *other);
        assert_eq!(claim.capacity_type, CapacityType::Spot);
        assert_eq!(claim.launched_at, HOUR + SimDuration::from_secs(1));
    }
    assert_eq!(out.summary.pods_unschedulable, 0);
    assert_eq!(spot.replacements_not_running, 0);
}

/// A trace row naming a node interrupts that node at its time; a row naming
/// a node that does not exist is skipped with a reason.
#[test]
fn trace_notice_hits_the_named_node() {
    let mut run = spot_input(
        &pool(&["spot"], &["m5.large"]),
        &deployment("web", 3, "1500m"),
        SimDuration::from_hours(1),
    );
    let (zone, _) = cheapest_spot("m5.large");
    let at = SimTime::from_secs(1800);
    run.interruptions.trace = vec![
        trace(at, "m5.large", zone, Some("default-00002"), 2),
        trace(at, "m5.large", zone, Some("default-00099"), 3),
    ];
    let out = simulate(&run);
    let notices = events(&out, "SpotInterrupted");
    assert_eq!(notices.len(), 1);
    assert_eq!(notices[0].object, "nodeclaim/default-00002");
    assert_eq!(notices[0].time, at);
    assert_eq!(
        out.summary.spot.interruptions_by_source.get("trace"),
        Some(&1)
    );
    assert_eq!(out.summary.spot.trace_rows_skipped, 1);
    let claims = interrupted_claims(&out);
    assert_eq!(claims.len(), 1);
    assert_eq!(claims[0].name, "default-00002");
}

/// Advisor hazard: the first spot launch takes the first draw of the
/// `interruptions` stream (cloud/spot `draw_node_interruption`). Over
/// seeds 0..400 the seed with the earliest first draw is picked, the run
/// lasts until 10 min after it, and the notice comes exactly then, the
/// reclaim 120 s later; the run repeats byte for byte.
#[test]
fn hazard_notice_comes_at_the_drawn_time_reproducibly() {
    let (zone, _) = cheapest_spot("m5.large");
    let band = catalog()
        .get("m5.large")
        .unwrap()
        .offerings
        .iter()
        .find(|o| o.zone == zone && o.capacity_type == CapacityType::Spot)
        .and_then(|o| o.interruption_band)
        .unwrap();
    let launch = SimTime::from_secs(1);
    let (seed, notice) = (0..400u64)
        .map(|seed| {
            let mut rng = RngStreams::new(seed).get(Stream::Interruptions);
            (
                seed,
                draw_node_interruption(band, launch, &mut rng).unwrap(),
            )
        })
        .min_by_key(|(_, at)| *at)
        .unwrap();
    let mut run = spot_input(
        &pool(&["spot"], &["m5.large"]),
        &deployment("web", 1, "500m"),
        notice.saturating_duration_since(SimTime::ZERO) + SimDuration::from_mins(10),
    );
    run.seed = seed;
    run.interruptions.advisor_hazard = true;
    let out = simulate(&run);
    let notices = events(&out, "SpotInterrupted");
    assert!(!notices.is_empty());
    assert_eq!(notices[0].object, "nodeclaim/default-00001");
    assert_eq!(notices[0].time, notice);
    assert_eq!(
        out.summary
            .spot
            .interruptions_by_source
            .get("advisor-hazard"),
        Some(&(notices.len() as u64))
    );
    let first = &out.nodeclaims[0];
    assert_eq!(first.reason_deleted, INTERRUPTED);
    assert!(first.deleted_at.unwrap() <= notice + SimDuration::from_secs(120));
    assert_eq!(simulate(&run), out);
}

/// Karpenter's launch fallback (reference §2.2 step 2, §5): a storm over
/// every zone of m5.large spot with a 30 min outage. The first replacement
/// tries the other zone's spot offering, fails with insufficient capacity
/// (the outage), caches it, and the next batch falls back to on-demand,
/// which the NodePool allows.
#[test]
fn storm_outage_falls_back_to_on_demand() {
    let mut run = spot_input(
        &pool(&["spot", "on-demand"], &["m5.large"]),
        &deployment("web", 1, "1500m"),
        SimDuration::from_hours(2),
    );
    run.interruptions.storms = vec![storm(HOUR, &["m5.large"], "1", SimDuration::from_mins(30))];
    let out = simulate(&run);
    assert_eq!(out.nodeclaims.len(), 2);
    assert_eq!(out.nodeclaims[0].capacity_type, CapacityType::Spot);
    let replacement = &out.nodeclaims[1];
    assert_eq!(replacement.capacity_type, CapacityType::OnDemand);
    assert!(replacement.launched_at <= HOUR + SimDuration::from_secs(5));
    assert_eq!(out.summary.spot.outage_launch_failures, 1);
    assert_eq!(out.summary.launch_failures, 1);
    assert_eq!(events(&out, "InsufficientCapacityError").len(), 1);
}

/// With spot only and two types, a storm (and outage) over the cheaper
/// type sends the replacement to the other type's spot offering.
#[test]
fn storm_outage_falls_back_to_the_next_type() {
    let types = ["m5.large", "m6i.large"];
    let cheaper = types
        .iter()
        .min_by_key(|t| (cheapest_spot(t).1, **t))
        .unwrap();
    let other = types.iter().find(|t| *t != cheaper).unwrap();
    let mut run = spot_input(
        &pool(&["spot"], &types),
        &deployment("web", 1, "1500m"),
        SimDuration::from_hours(2),
    );
    run.interruptions.storms = vec![storm(HOUR, &[cheaper], "1", SimDuration::from_mins(30))];
    let out = simulate(&run);
    assert_eq!(out.nodeclaims.len(), 2);
    assert_eq!(out.nodeclaims[0].instance_type, *cheaper);
    assert_eq!(out.nodeclaims[1].instance_type, *other);
    assert_eq!(out.nodeclaims[1].capacity_type, CapacityType::Spot);
    assert_eq!(out.summary.pods_unschedulable, 0);
}

/// aws: instancetype/suite_test.go, Insufficient Capacity Error Cache, with
/// providers/instance CreateFleet: a storm over every spot offering of four
/// types. The replacement's one CreateFleet request carries all their spot
/// offerings; EC2 reports every one short, they are all cached at once and
/// the request fails once (not once per offering, a second apart), so the
/// next batch launches on-demand at T + 2 s.
#[test]
fn storm_over_many_spot_offerings_fails_one_request() {
    let types = ["m5.large", "m6i.large", "m5a.large", "c5.xlarge"];
    let mut run = spot_input(
        &pool(&["spot", "on-demand"], &types),
        &deployment("web", 1, "1500m"),
        SimDuration::from_hours(2),
    );
    run.interruptions.storms = vec![storm(HOUR, &types, "1", SimDuration::from_mins(30))];
    let out = simulate(&run);
    assert_eq!(out.nodeclaims.len(), 2);
    assert_eq!(out.nodeclaims[0].capacity_type, CapacityType::Spot);
    let replacement = &out.nodeclaims[1];
    assert_eq!(replacement.capacity_type, CapacityType::OnDemand);
    assert_eq!(replacement.launched_at, HOUR + SimDuration::from_secs(2));
    assert_eq!(out.summary.launch_failures, 1);
    assert_eq!(out.summary.spot.outage_launch_failures, 1);
    let ice = events(&out, "InsufficientCapacityError");
    assert_eq!(ice.len(), 1);
    assert_eq!(ice[0].time, HOUR + SimDuration::from_secs(1));
}

/// A storm with `capacityType: on-demand` makes the matching on-demand
/// offerings unavailable for its outage: the on-demand node is not
/// interrupted (no notices), but a pod added 1 min into the outage cannot
/// get a node until the outage ends at T + 30 min.
#[test]
fn on_demand_storm_makes_on_demand_offerings_unavailable() {
    let mut run = spot_input(
        &pool(&["on-demand"], &["m5.large"]),
        &deployment("web", 1, "1500m"),
        SimDuration::from_hours(2),
    );
    let mut outage = storm(HOUR, &["m5.large"], "1", SimDuration::from_mins(30));
    outage.capacity_types = BTreeSet::from([CapacityType::OnDemand]);
    run.interruptions.storms = vec![outage];
    run.steps.push(Step {
        at: HOUR + SimDuration::from_mins(1),
        action: StepAction::Scale {
            target: Target {
                kind: TargetKind::Deployment,
                namespace: "default".into(),
                name: "web".into(),
            },
            replicas: 2,
        },
    });
    let out = simulate(&run);
    assert!(events(&out, "SpotInterrupted").is_empty());
    assert_eq!(out.nodeclaims.len(), 2);
    assert_eq!(out.nodeclaims[0].deleted_at, None);
    let second = &out.nodeclaims[1];
    assert_eq!(second.capacity_type, CapacityType::OnDemand);
    assert!(
        second.launched_at >= HOUR + SimDuration::from_mins(30),
        "{}",
        second.launched_at
    );
    assert!(out.summary.spot.outage_launch_failures >= 1);
    assert_eq!(
        out.summary.launch_failures,
        out.summary.spot.outage_launch_failures
    );
}

/// One pod, notice at T = 1 h (trace): it is evicted at T, its owner
/// creates the replacement at T, the old pod's 30 s grace ends at T + 30 s
/// (the node is then drained and terminated), the replacement node
/// launches at T + 1 s and is ready at T + 31 s, where the replacement
/// binds. So: replacement latency 31 s = batch idle 1 s + launch 30 s
/// (within notice + launch latency), 1 s without a running replica, and
/// the old node billed 29 s while the new one runs (overlap).
#[test]
fn interrupted_pod_runs_again_after_batch_and_launch_latency() {
    let mut run = spot_input(
        &pool(&["spot"], &["m5.large"]),
        &deployment("web", 1, "500m"),
        SimDuration::from_hours(2),
    );
    let (zone, price) = cheapest_spot("m5.large");
    run.interruptions.trace = vec![trace(HOUR, "m5.large", zone, None, 2)];
    let out = simulate(&run);
    let spot = &out.summary.spot;
    let secs = SimDuration::from_secs;
    assert_eq!(spot.replacement_latency_p50, Some(secs(31)));
    assert_eq!(spot.replacement_latency_p95, Some(secs(31)));
    assert_eq!(
        spot.pod_millis_without_replica
            .get("deployment/default/web"),
        Some(&1_000)
    );
    assert_eq!(spot.pods_killed_at_reclaim, 0);
    let old = &out.nodeclaims[0];
    assert_eq!(old.deleted_at, Some(HOUR + secs(30)));
    let new = &out.nodeclaims[1];
    assert_eq!(new.launched_at, HOUR + secs(1));
    assert_eq!(new.ready_at, Some(HOUR + secs(31)));
    // 29 s at the old node's price, rounded half up once.
    let overlap = (i128::from(price.micros()) * 29_000 + 1_800_000) / 3_600_000;
    assert_eq!(spot.overlap_cost, MicroUsd(overlap as i64));
}

/// A PDB (minAvailable 1 of 1 replica) blocks the eviction, so the pod
/// stays until EC2 reclaims the instance at T + 120 s: it is killed and the
/// bill stops. The PDB does not block fully (only maxUnavailable 0 or
/// minAvailable 100 % do, see `PdbLimits`), so the pod was provisioning
/// demand at the notice: its node launched at T + 1 s and was ready at
/// T + 31 s, and the pod the owner re-creates at T + 120 s binds there at
/// once. Latency 120 s, no gap, overlap T + 1 s … T + 120 s = 119 s.
#[test]
fn reclaim_kills_pods_the_drain_could_not_evict() {
    let manifests = format!(
        "{}---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {{name: web}}
spec:
  minAvailable: 1
  selector: {{matchLabels: {{app: web}}}}
",
        deployment("web", 1, "500m")
    );
    let mut run = spot_input(
        &pool(&["spot"], &["m5.large"]),
        &manifests,
        SimDuration::from_hours(2),
    );
    let (zone, price) = cheapest_spot("m5.large");
    run.interruptions.trace = vec![trace(HOUR, "m5.large", zone, None, 2)];
    let out = simulate(&run);
    let secs = SimDuration::from_secs;
    let spot = &out.summary.spot;
    assert_eq!(spot.pods_killed_at_reclaim, 1);
    assert_eq!(events(&out, "SpotReclaimed").len(), 1);
    let old = &out.nodeclaims[0];
    assert_eq!(old.deleted_at, Some(HOUR + secs(120)));
    assert_eq!(old.reason_deleted, INTERRUPTED);
    let new = &out.nodeclaims[1];
    assert_eq!(new.launched_at, HOUR + secs(1));
    assert_eq!(spot.replacement_latency_p50, Some(secs(120)));
    assert_eq!(
        spot.pod_millis_without_replica
            .get("deployment/default/web"),
        Some(&0)
    );
    let overlap = (i128::from(price.micros()) * 119_000 + 1_800_000) / 3_600_000;
    assert_eq!(spot.overlap_cost, MicroUsd(overlap as i64));
}

/// A spot price history: the node launched at 1 s at the catalog's spot
/// price P0 is billed P0 until 1 h and $0.050000/h after it, so its cost is
/// (P0 × 3599 s + 0.05 × 3600 s) / 3600 s, rounded half up once; the
/// catalog's offering carries the new price too (the time series' rate).
/// The savings are the on-demand price over the same 7199 s minus that.
#[test]
fn price_history_changes_the_bill_by_the_hand_computed_amount() {
    let mut run = spot_input(
        &pool(&["spot"], &["m5.large"]),
        &deployment("web", 1, "500m"),
        SimDuration::from_hours(2),
    );
    let (zone, p0) = cheapest_spot("m5.large");
    let p1 = Price::from_micros(50_000);
    run.spot_price_changes = vec![PriceChange {
        at: HOUR,
        instance_type: "m5.large".to_string(),
        zone: zone.to_string(),
        price: p1,
        row: RowRef::Line(2),
    }];
    let out = simulate(&run);
    assert_eq!(out.nodeclaims.len(), 1);
    let exact = i128::from(p0.micros()) * 3_599_000 + i128::from(p1.micros()) * 3_600_000;
    let cost = MicroUsd(((exact + 1_800_000) / 3_600_000) as i64);
    assert_eq!(out.nodeclaims[0].cost, cost);
    assert_eq!(out.summary.total_cost, cost);
    let after = out
        .timeseries
        .iter()
        .find(|s| s.time == HOUR + SimDuration::from_mins(1))
        .unwrap();
    assert_eq!(after.hourly_rate, p1);
    assert_eq!(out.summary.spot.price_changes, 1);
    let on_demand = catalog().get("m5.large").unwrap().on_demand_price;
    let od_cost = (i128::from(on_demand.micros()) * 7_199_000 + 1_800_000) / 3_600_000;
    assert_eq!(
        out.summary.spot.savings_vs_on_demand,
        MicroUsd(od_cost as i64 - cost.0)
    );
    assert_eq!(out.summary.spot.spot_node_millis, 7_199_000);
}

/// All sources at once (hazard, a storm with an outage, trace rows,
/// rebalance recommendations, a price change) keep the engine's books
/// straight and give identical runs; the victim stream is separate from
/// the hazard stream, so the hazard's notices do not move when a storm is
/// added.
#[test]
fn interruptions_are_deterministic_and_keep_the_books() {
    let mut run = spot_input(
        &pool(
            &["spot", "on-demand"],
            &["m5.large", "m6i.large", "c6i.xlarge"],
        ),
        &deployment("web", 12, "900m"),
        SimDuration::from_hours(3),
    );
    let (zone, _) = cheapest_spot("m5.large");
    run.seed = 5;
    run.interruptions.advisor_hazard = true;
    run.interruptions.rebalance_lead = Some(SimDuration::from_mins(10));
    run.interruptions.storms = vec![storm(
        HOUR,
        &["m5.large", "m6i.large", "c6i.xlarge"],
        "0.5",
        SimDuration::from_mins(20),
    )];
    run.interruptions.trace = vec![trace(
        SimTime::from_secs(2 * 3600),
        "m5.large",
        zone,
        None,
        2,
    )];
    let a = simulate(&run);
    let b = simulate(&run);
    assert_eq!(a, b);
    assert!(a.summary.spot.interruptions() >= 1);
    assert_eq!(
        a.summary.spot.rebalance_recommendations,
        events(&a, "RebalanceRecommendation").len() as u64
    );
    let sum: MicroUsd = a.nodeclaims.iter().map(|c| c.cost).sum();
    assert_eq!(sum, a.summary.total_cost);
    assert_eq!(a.summary.pods_unschedulable, 0);
}

/// core disruption/consolidation_test.go "spot to spot consolidation":
/// one spot node left nearly idle by a scale-down is not replaced by a
/// cheaper spot node while the `SpotToSpotConsolidation` gate is off (the
/// node's reason says so); with the gate on, and far more than 15 cheaper
/// types allowed, the engine's disruption controller replaces it.
#[test]
fn spot_to_spot_consolidation_follows_the_gate() {
    const SPOT_POOL: &str = "
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: spot}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - {key: karpenter.sh/capacity-type, operator: In, values: [spot]}
        - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m, r]}
        - {key: kubernetes.io/arch, operator: In, values: [amd64]}
  disruption: {consolidationPolicy: WhenEmptyOrUnderutilized, consolidateAfter: 0s}
";
    let run_with = |gate: bool| {
        let mut run = spot_input(
            SPOT_POOL,
            &deployment("web", 12, "1"),
            SimDuration::from_hours(2),
        );
        run.karpenter.disruption.spot_to_spot_consolidation = gate;
        run.steps.push(Step {
            at: SimTime::from_secs(1800),
            action: StepAction::Scale {
                target: Target {
                    kind: TargetKind::Deployment,
                    namespace: "default".into(),
                    name: "web".into(),
                },
                replicas: 1,
            },
        });
        crate::engine::run(&run, &mut |_| {}).unwrap()
    };
    let off = run_with(false);
    assert!(
        off.disruption
            .iter()
            .any(|n| n.reason.starts_with("SpotToSpotConsolidation is disabled")),
        "{:?}",
        off.disruption
    );
    let replaced_off = off
        .nodeclaims
        .iter()
        .filter(|c| c.reason_launched == "underutilized")
        .count();
    assert_eq!(replaced_off, 0);
    let on = run_with(true);
    let replacements: Vec<_> = on
        .nodeclaims
        .iter()
        .filter(|c| c.reason_launched == "underutilized")
        .collect();
    assert!(!replacements.is_empty(), "{:?}", on.nodeclaims);
    assert!(
        replacements
            .iter()
            .all(|c| c.capacity_type == CapacityType::Spot)
    );
    assert!(on.summary.total_cost < off.summary.total_cost);
}
