//! End-to-end runs of the engine with Cluster Autoscaler as provisioner,
//! with the real kube-scheduler model and CA decision model.

use super::tests::{catalog, deployment, events, input};
use super::*;
use crate::autoscaler::{CaConfig, CapacitySplit, NodeGroupSpec};

fn group(name: &str, types: &[&str], max: u32) -> NodeGroupSpec {
    NodeGroupSpec {
        name: name.to_string(),
        instance_types: types.iter().map(|t| t.to_string()).collect(),
        capacity: CapacitySplit::OnDemand,
        spot_allocation_strategy: Default::default(),
        on_demand_allocation_strategy: Default::default(),
        zones: vec!["us-east-1a".to_string()],
        min_size: 0,
        max_size: max,
        labels: Default::default(),
        taints: Vec::new(),
        autoscaling_options: Default::default(),
    }
}

fn ca_input(manifests: &str, duration: SimDuration, config: CaConfig) -> RunInput {
    let mut run = input(manifests, duration);
    run.nodepools.clear();
    let catalog = restrict_zones(catalog(), &run.zones);
    run.cluster_autoscaler = Some(CaSetup {
        config: config.validate(&catalog).unwrap(),
        catalog,
        startup_failures: Default::default(),
    });
    run
}

fn ca_run(run: &RunInput) -> RunOutput {
    super::run(run, &mut |_| {}).unwrap()
}

fn delete_deployment_at(run: &mut RunInput, at: SimDuration, name: &str) {
    run.steps.push(Step {
        at: SimTime::ZERO + at,
        action: StepAction::Delete {
            target: Target {
                kind: TargetKind::Deployment,
                namespace: "default".to_string(),
                name: name.to_string(),
            },
        },
    });
}

/// Three 700m pods against an m5.large group: CA's cloud template has
/// allocatable = capacity (2 vCPU), so the binpacking estimator puts two
/// pods per template node and asks for 2 nodes (cluster-autoscaler
/// estimator/binpacking_estimator.go, first-fit decreasing). On the real
/// m5.large (1930m allocatable) 700m + 700m still fit, so the 2 nodes hold
/// the 3 pods and no further scale-up happens. The loop at 0 s skips the
/// pods, younger than 2 s (core/static_autoscaler.go
/// `unschedulablePodTimeBuffer`); the 10 s loop scales up.
#[test]
fn three_pods_needing_two_template_nodes_scale_the_group_up_by_two() {
    let config = CaConfig {
        node_groups: vec![group("general", &["m5.large"], 10)],
        ..CaConfig::default()
    };
    let run = ca_input(
        &deployment("web", 3, "700m"),
        SimDuration::from_mins(5),
        config,
    );
    let out = ca_run(&run);
    let ups = events(&out, "TriggeredScaleUp");
    assert_eq!(ups.len(), 1, "{ups:?}");
    assert!(ups[0].message.contains("{general 2}"), "{}", ups[0].message);
    assert_eq!(out.nodeclaims.len(), 2);
    for n in &out.nodeclaims {
        assert_eq!(
            (n.nodepool.as_str(), n.instance_type.as_str(), n.launched_at),
            ("general", "m5.large", SimTime::ZERO + SCAN_INTERVAL),
            "{n:?}"
        );
    }
    assert_eq!(out.summary.pods_scheduled, 3);
    assert_eq!(out.summary.pods_unschedulable, 0);
    // Bound once the nodes are Ready: launched at the 10 s loop, Ready
    // after the fixed 30 s latency.
    assert_eq!(out.summary.pending_max, Some(SimDuration::from_secs(40)));
    assert!(out.scale_down.is_some());
}

/// Once the workload is deleted at 5 min the nodes are empty; CA removes
/// them after `scaleDownUnneededTime` (10 min) of being unneeded
/// (FAQ: "How does scale-down work?"), and `scaleDownDelayAfterAdd`
/// (10 min after the scale-up at 0) is over by then. Loops run every 10 s,
/// and the pods leave within their 30 s grace period, so the removal is
/// between 15 min and 15 min 50 s.
#[test]
fn idle_nodes_are_removed_after_the_unneeded_time() {
    let config = CaConfig {
        node_groups: vec![group("general", &["m5.large"], 10)],
        ..CaConfig::default()
    };
    let mut run = ca_input(
        &deployment("web", 3, "700m"),
        SimDuration::from_mins(30),
        config,
    );
    delete_deployment_at(&mut run, SimDuration::from_mins(5), "web");
    let out = ca_run(&run);
    assert_eq!(out.nodeclaims.len(), 2);
    for node in &out.nodeclaims {
        let deleted = node.deleted_at.expect("removed");
        let after = deleted.saturating_duration_since(SimTime::ZERO);
        assert!(
            after >= SimDuration::from_mins(15) && after <= SimDuration::from_secs(950),
            "{} deleted at {after}",
            node.name
        );
    }
    assert_eq!(events(&out, "ScaleDown").len(), 2);
    // Each reason change is an event too, as in scaledown.csv.
    assert_eq!(
        events(&out, "Unremovable").len(),
        out.scale_down.as_ref().map_or(0, Vec::len)
    );
    let reasons = out.scale_down.as_ref().unwrap();
    assert!(
        reasons
            .iter()
            .any(|r| r.reason.contains("NotUnneededLongEnough")
                || r.reason.contains("NotUnderutilized")),
        "{reasons:?}"
    );
}

/// A shorter unneeded time removes the nodes sooner (same timeline,
/// `scaleDownUnneededTime: 2m`, `scaleDownDelayAfterAdd: 0`).
#[test]
fn a_shorter_unneeded_time_removes_sooner() {
    let config = CaConfig {
        node_groups: vec![group("general", &["m5.large"], 10)],
        scale_down_unneeded_time: SimDuration::from_mins(2),
        scale_down_delay_after_add: SimDuration::ZERO,
        ..CaConfig::default()
    };
    let mut run = ca_input(
        &deployment("web", 3, "700m"),
        SimDuration::from_mins(30),
        config,
    );
    delete_deployment_at(&mut run, SimDuration::from_mins(5), "web");
    let out = ca_run(&run);
    for node in &out.nodeclaims {
        let after = node
            .deleted_at
            .expect("removed")
            .saturating_duration_since(SimTime::ZERO);
        assert!(
            after >= SimDuration::from_mins(7) && after <= SimDuration::from_secs(470),
            "{} deleted at {after}",
            node.name
        );
    }
}

/// The upstream warning (FAQ "mixed instance policies"): CA plans with the
/// first instance type; a group listing m5.2xlarge first but launching the
/// cheaper-ranked m5.large (the only one it can get here) under-provisions,
/// and pods wait for a second round; a matched group does not.
#[test]
fn a_template_larger_than_the_launched_type_leaves_pods_pending_longer() {
    let pods = deployment("web", 6, "700m");
    let matched = CaConfig {
        node_groups: vec![group("matched", &["m5.large"], 20)],
        ..CaConfig::default()
    };
    let mut mixed_group = group("mixed", &["m5.2xlarge", "m5.large"], 20);
    mixed_group.capacity = CapacitySplit::Spot;
    mixed_group.spot_allocation_strategy = crate::autoscaler::SpotAllocationStrategy::LowestPrice;
    let mixed = CaConfig {
        node_groups: vec![mixed_group],
        ..CaConfig::default()
    };
    let out_matched = ca_run(&ca_input(&pods, SimDuration::from_mins(30), matched));
    let out_mixed = ca_run(&ca_input(&pods, SimDuration::from_mins(30), mixed));
    let launched: BTreeSet<&str> = out_mixed
        .nodeclaims
        .iter()
        .map(|n| n.instance_type.as_str())
        .collect();
    assert!(launched.contains("m5.large"), "{launched:?}");
    assert_eq!(out_mixed.summary.pods_unschedulable, 0);
    assert!(
        out_mixed.summary.pending_max > out_matched.summary.pending_max,
        "mixed {:?} vs matched {:?}",
        out_mixed.summary.pending_max,
        out_matched.summary.pending_max
    );
}

/// A storm interrupting every spot node of a CA group at 1 h, under each
/// `terminationHandler`.
fn storm_run(handler: crate::autoscaler::TerminationHandler) -> RunOutput {
    use crate::spot::{Fraction, NameFilter, Storm};
    let mut spot = group("spot", &["m5.large"], 10);
    spot.capacity = CapacitySplit::Spot;
    let config = CaConfig {
        node_groups: vec![spot],
        termination_handler: handler,
        ..CaConfig::default()
    };
    let mut run = ca_input(
        &deployment("web", 3, "700m"),
        SimDuration::from_hours(2),
        config,
    );
    run.interruptions.rebalance_lead = Some(SimDuration::from_mins(5));
    run.interruptions.storms = vec![Storm {
        at: SimTime::ZERO + SimDuration::from_hours(1),
        instance_types: NameFilter::Only(BTreeSet::from(["m5.large".to_string()])),
        zones: NameFilter::All,
        fraction: Fraction::parse("1").unwrap(),
        unavailable_for: SimDuration::ZERO,
        capacity_types: Storm::spot_only(),
    }];
    ca_run(&run)
}

/// Without a termination handler nothing acts on the notice: the 3 pods
/// run until EC2 reclaims the 2 nodes 2 minutes later and die with them;
/// with node-termination-handler they are drained at the notice (30 s
/// grace, well inside the 2 minutes), so none is killed at reclaim.
#[test]
fn spot_pods_die_at_reclaim_without_a_handler_and_are_drained_with_nth() {
    use crate::autoscaler::TerminationHandler;
    let none = storm_run(TerminationHandler::None);
    assert_eq!(none.summary.spot.interruptions(), 2);
    assert_eq!(none.summary.spot.pods_killed_at_reclaim, 3);
    assert_eq!(none.summary.churn.evictions(), 0);
    let nth = storm_run(TerminationHandler::NodeTerminationHandler);
    assert_eq!(nth.summary.spot.interruptions(), 2);
    assert_eq!(nth.summary.spot.pods_killed_at_reclaim, 0);
    assert_eq!(
        nth.summary.churn.evictions_by_reason.get(INTERRUPTED),
        Some(&3)
    );
    // Both end with every pod running again on new nodes.
    for out in [&none, &nth] {
        assert_eq!(out.summary.pods_unschedulable, 0);
        assert!(out.nodeclaims.len() >= 4, "{:?}", out.nodeclaims);
    }
}

/// Capacity Rebalancing launches one replacement per at-risk node at the
/// rebalance recommendation (here with the notice, at 1 h).
#[test]
fn capacity_rebalance_launches_replacements_at_the_recommendation() {
    let out = storm_run(crate::autoscaler::TerminationHandler::CapacityRebalance);
    let hour = SimTime::ZERO + SimDuration::from_hours(1);
    let replacements: Vec<_> = out
        .nodeclaims
        .iter()
        .filter(|n| n.reason_launched == "capacity-rebalance")
        .collect();
    assert_eq!(replacements.len(), 2, "{:?}", out.nodeclaims);
    assert!(replacements.iter().all(|n| n.launched_at == hour));
    assert_eq!(out.summary.spot.pods_killed_at_reclaim, 0);
}

/// cluster-autoscaler core/scaledown/budgets (budgets_test.go "empty
/// nodes exceeding the max limit"), end to end: twelve nodes emptied at
/// once, and at most `maxScaleDownParallelism` (10) deletions under way
/// at any instant, however many loops run while they are.
#[test]
fn at_most_ten_empty_nodes_are_deleted_at_once() {
    let config = CaConfig {
        node_groups: vec![group("general", &["m5.large"], 20)],
        ..CaConfig::default()
    };
    let mut run = ca_input(
        &deployment("web", 12, "1500m"),
        SimDuration::from_mins(40),
        config,
    );
    delete_deployment_at(&mut run, SimDuration::from_mins(5), "web");
    let out = ca_run(&run);
    assert_eq!(out.nodeclaims.len(), 12);
    let starts: Vec<SimTime> = events(&out, "ScaleDown").iter().map(|e| e.time).collect();
    assert_eq!(starts.len(), 12, "{starts:?}");
    let ends: Vec<SimTime> = out
        .nodeclaims
        .iter()
        .map(|n| n.deleted_at.expect("removed"))
        .collect();
    for &at in &starts {
        let under_way =
            starts.iter().filter(|&&s| s <= at).count() - ends.iter().filter(|&&e| e <= at).count();
        assert!(under_way <= 10, "{under_way} deletions under way at {at}");
    }
    assert!(starts.iter().filter(|&&s| s == starts[0]).count() == 10);
}

/// A mixed-instances ASG facing a shortage (the AWS provider's ASG with a
/// launch template and overrides; EC2 fleet behaviour): the pool the
/// allocation strategy picks first is short, so the instance launches in
/// the group's next pool and the scale-up does not fail; with every pool
/// short the instance fails and CA's scale-up failure follows.
#[test]
fn an_asg_short_of_one_pool_launches_in_the_next() {
    let spot_group = || {
        let mut g = group("spot", &["m5.large", "m5a.large", "m6i.large"], 10);
        g.capacity = CapacitySplit::Spot;
        g
    };
    let config = || CaConfig {
        node_groups: vec![spot_group()],
        ..CaConfig::default()
    };
    let plain = ca_run(&ca_input(
        &deployment("web", 1, "700m"),
        SimDuration::from_mins(5),
        config(),
    ));
    assert_eq!(plain.nodeclaims.len(), 1);
    let first = plain.nodeclaims[0].instance_type.clone();
    let short = |types: &[&str]| {
        let mut run = ca_input(
            &deployment("web", 1, "700m"),
            SimDuration::from_mins(5),
            config(),
        );
        run.capacity_shortages = types
            .iter()
            .map(|t| OfferingKey {
                instance_type: t.to_string(),
                zone: "us-east-1a".to_string(),
                capacity_type: CapacityType::Spot,
            })
            .collect();
        ca_run(&run)
    };
    let out = short(&[first.as_str()]);
    assert_eq!(out.nodeclaims.len(), 1);
    assert_ne!(out.nodeclaims[0].instance_type, first);
    assert_eq!(out.summary.launch_failures, 0);
    assert_eq!(events(&out, "FailedToLaunchInstance").len(), 1);
    let none = short(&["m5.large", "m5a.large", "m6i.large"]);
    assert!(none.nodeclaims.is_empty());
    assert!(none.summary.launch_failures >= 1);
    assert!(!events(&none, "FailedToScaleUpGroup").is_empty());
}

/// A launch that never registers (core/static_autoscaler.go
/// `removeOldUnregisteredNodes`, clusterstate `updateScaleRequests`): the
/// instance launched at 10 s stays without a Node object; at 15 min 10 s
/// its scale-up times out (5 min backoff) and a loop later the instance,
/// unregistered since 10 s too, is terminated. After the backoff the
/// group is tried again, and its launches start normally once the
/// failure window (the first 20 min) is over.
#[test]
fn instances_that_never_register_are_deleted_and_backed_off() {
    let config = CaConfig {
        node_groups: vec![group("general", &["m5.large"], 10)],
        ..CaConfig::default()
    };
    let mut run = ca_input(
        &deployment("web", 1, "700m"),
        SimDuration::from_hours(1),
        config,
    );
    if let Some(setup) = run.cluster_autoscaler.as_mut() {
        setup.startup_failures.insert(
            "general".to_string(),
            StartupFailure {
                from: SimTime::ZERO,
                until: Some(SimTime::ZERO + SimDuration::from_mins(20)),
                kind: StartupFailureKind::Unregistered,
            },
        );
    }
    let out = ca_run(&run);
    let timed_out = events(&out, "ScaleUpTimedOut");
    assert_eq!(
        timed_out[0].time,
        SimTime::ZERO + SimDuration::from_secs(15 * 60 + 20)
    );
    let deleted = events(&out, "DeleteUnregistered");
    assert_eq!(
        deleted[0].time,
        SimTime::ZERO + SimDuration::from_secs(15 * 60 + 30)
    );
    let first = &out.nodeclaims[0];
    assert_eq!(first.ready_at, None);
    assert!(first.deleted_at.is_some());
    // Backed off until 20 min 20 s; the next launch (after the window)
    // comes up and takes the pod.
    let last = out.nodeclaims.last().unwrap();
    assert!(last.launched_at > SimTime::ZERO + SimDuration::from_secs(20 * 60 + 20));
    assert!(last.ready_at.is_some());
    assert_eq!(out.summary.pods_unschedulable, 0);
}

/// A launch whose Node registers but never turns Ready: no pod binds to
/// it; it is upcoming for `MaxNodeStartupTime` (15 min) after it
/// registered, then unready, and CA removes it once it has been unneeded
/// for `scaleDownUnreadyTime` (20 min) (clusterstate `TestNotStarted`,
/// unneeded/nodes.go `RemovableAt`).
#[test]
fn nodes_that_never_turn_ready_are_removed_after_the_unready_time() {
    let config = CaConfig {
        node_groups: vec![group("general", &["m5.large"], 1)],
        ..CaConfig::default()
    };
    let mut run = ca_input(
        &deployment("web", 1, "700m"),
        SimDuration::from_hours(1),
        config,
    );
    if let Some(setup) = run.cluster_autoscaler.as_mut() {
        setup.startup_failures.insert(
            "general".to_string(),
            StartupFailure {
                from: SimTime::ZERO,
                until: None,
                kind: StartupFailureKind::NotReady,
            },
        );
    }
    let out = ca_run(&run);
    let registered = events(&out, "NodeNotReady");
    // Launched at 10 s, registered (NotReady) 30 s later.
    assert_eq!(
        registered[0].time,
        SimTime::ZERO + SimDuration::from_secs(40)
    );
    let node = &out.nodeclaims[0];
    let removed = node.deleted_at.expect("removed as unready");
    // Unready from 15m40s, seen at the 15m50s loop, removable after
    // 20 min more: the loop at 35m50s... plus the 5 s minimum drain.
    let after = removed.saturating_duration_since(SimTime::ZERO);
    assert!(
        after > SimDuration::from_secs(35 * 60 + 50)
            && after <= SimDuration::from_secs(36 * 60 + 10),
        "removed at {after}"
    );
    assert_eq!(out.summary.pods_scheduled, 0);
}
