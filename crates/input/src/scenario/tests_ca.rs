//! Tests for the `clusterAutoscaler:` variant block and its preparation.

use std::path::Path;

use super::*;
use crate::autoscaler::{CapacitySplit, ExpanderKind, SpotAllocationStrategy, TerminationHandler};
use crate::sim::SimDuration;

const REGIONS: &[(&str, &[&str])] = &[("us-east-1", &["us-east-1a", "us-east-1b", "us-east-1c"])];
const INLINE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/fixtures/scenarios/inline.yaml"
);

fn parse_ca(block: &str) -> Result<Scenario, ScenarioError> {
    let text = format!(
        "duration: 1h\nworkloads:\n  - manifests: workloads/base.yaml\nvariants:\n  - name: ca\n    clusterAutoscaler:\n{block}"
    );
    Scenario::parse(&text, Path::new(INLINE), REGIONS)
}

fn ca_error(block: &str) -> String {
    match parse_ca(block) {
        Ok(s) => panic!("expected an error, got {s:?}"),
        Err(e) => e
            .to_string()
            .strip_prefix(&format!("{INLINE}:"))
            .map(str::to_string)
            .unwrap_or_else(|| panic!("no file prefix: {e}")),
    }
}

const GROUP: &str =
    "      nodeGroups:\n        - {name: g, instanceTypes: [m5.xlarge], maxSize: 5}\n";

/// The example block reads into the CA config, and keys left out
/// keep CA's defaults (`config/flags/flags.go`).
#[test]
fn the_example_block_reads_with_defaults_for_the_rest() {
    let block = "      nodeGroups:\n\
        \x20       - name: general-spot\n\
        \x20         instanceTypes: [m5.xlarge, m5a.xlarge, m6i.xlarge]\n\
        \x20         capacityType: spot\n\
        \x20         spotAllocationStrategy: lowest-price\n\
        \x20         zones: [us-east-1a, us-east-1b]\n\
        \x20         minSize: 1\n\
        \x20         maxSize: 50\n\
        \x20         labels: {team: web}\n\
        \x20         taints: [{key: dedicated, value: web, effect: NoSchedule}]\n\
        \x20     expander: priority\n\
        \x20     priorities: {10: [\".*spot.*\"], 1: [\".*\"]}\n\
        \x20     scaleDownUtilizationThreshold: 0.6\n\
        \x20     scaleDownUnneededTime: 5m\n\
        \x20     terminationHandler: node-termination-handler\n";
    let scenario = parse_ca(block).unwrap();
    let Provisioner::ClusterAutoscaler(ca) = &scenario.variants[0].provisioner else {
        panic!("not a CA variant");
    };
    let c = &ca.config;
    let g = &c.node_groups[0];
    assert_eq!(g.name, "general-spot");
    assert_eq!(g.instance_types, ["m5.xlarge", "m5a.xlarge", "m6i.xlarge"]);
    assert_eq!(g.capacity, CapacitySplit::Spot);
    assert_eq!(
        g.spot_allocation_strategy,
        SpotAllocationStrategy::LowestPrice
    );
    assert_eq!(g.zones, ["us-east-1a", "us-east-1b"]);
    assert_eq!((g.min_size, g.max_size), (1, 50));
    assert_eq!(g.labels.get("team").map(String::as_str), Some("web"));
    assert_eq!(g.taints.len(), 1);
    assert_eq!(c.expander, [ExpanderKind::Priority]);
    assert_eq!(c.priorities.get(&10).unwrap(), &[".*spot.*".to_string()]);
    assert_eq!(c.scale_down_utilization_threshold, 0.6);
    assert_eq!(c.scale_down_unneeded_time, SimDuration::from_mins(5));
    assert_eq!(
        c.termination_handler,
        TerminationHandler::NodeTerminationHandler
    );
    // Defaults.
    assert_eq!(c.scale_down_delay_after_add, SimDuration::from_mins(10));
    assert_eq!(c.max_node_provision_time, SimDuration::from_mins(15));
    assert!(!c.balance_similar_node_groups);
    // Instance types are kept with their place for the catalog check.
    assert_eq!(ca.instance_types.len(), 3);
    assert_eq!(
        ca.instance_types[1].field,
        "variants[0].clusterAutoscaler.nodeGroups[0].instanceTypes[1]"
    );
}

/// A group without zones gets every zone of the region; capacity defaults
/// to on-demand (an ASG without a mixed-instances policy).
#[test]
fn a_minimal_group_takes_the_region_zones_and_on_demand() {
    let scenario = parse_ca(GROUP).unwrap();
    let Provisioner::ClusterAutoscaler(ca) = &scenario.variants[0].provisioner else {
        panic!("not a CA variant");
    };
    let g = &ca.config.node_groups[0];
    assert_eq!(g.zones.len(), 3);
    assert_eq!(g.capacity, CapacitySplit::OnDemand);
    assert_eq!(g.min_size, 0);
    assert_eq!(ca.config.expander, [ExpanderKind::LeastWaste]);
}

/// `enforceNodeGroupMinSize` (`--enforce-node-group-min-size`) is off
/// unless set, and must be a boolean.
#[test]
fn enforce_node_group_min_size_reads_as_a_flag() {
    let read = |extra: &str| {
        let scenario = parse_ca(&format!("{GROUP}{extra}")).unwrap();
        let Provisioner::ClusterAutoscaler(ca) = &scenario.variants[0].provisioner else {
            panic!("not a CA variant");
        };
        ca.config.enforce_node_group_min_size
    };
    assert!(!read(""));
    assert!(read("      enforceNodeGroupMinSize: true\n"));
    let err = ca_error(&format!("{GROUP}      enforceNodeGroupMinSize: 3\n"));
    assert!(err.contains("enforceNodeGroupMinSize"), "{err}");
}

/// A group's `autoscalingOptions` (the ASG's
/// `node-template/autoscaling-options/*` tags) override the flags for that
/// group only; unknown options and thresholds outside 0..1 are errors at
/// their place.
#[test]
fn group_autoscaling_options_override_the_flags() {
    let block = "      nodeGroups:\n        - name: g\n          instanceTypes: [m5.xlarge]\n          maxSize: 5\n          autoscalingOptions:\n            scaleDownUtilizationThreshold: 0.3\n            scaleDownGpuUtilizationThreshold: 0.8\n            scaleDownUnneededTime: 2m\n            scaleDownUnreadyTime: 5m\n            ignoreDaemonSetsUtilization: true\n            maxNodeProvisionTime: 7m\n        - {name: h, instanceTypes: [m5.xlarge], maxSize: 5}\n      scaleDownGpuUtilizationThreshold: 0.4\n";
    let scenario = parse_ca(block).unwrap();
    let Provisioner::ClusterAutoscaler(ca) = &scenario.variants[0].provisioner else {
        panic!("not a CA variant");
    };
    let g = ca.config.options_for("g");
    assert_eq!(g.scale_down_utilization_threshold, 0.3);
    assert_eq!(g.scale_down_gpu_utilization_threshold, 0.8);
    assert_eq!(g.scale_down_unneeded_time, SimDuration::from_mins(2));
    assert_eq!(g.scale_down_unready_time, SimDuration::from_mins(5));
    assert!(g.ignore_daemonsets_utilization);
    assert_eq!(g.max_node_provision_time, SimDuration::from_mins(7));
    let h = ca.config.options_for("h");
    assert_eq!(h.scale_down_utilization_threshold, 0.5);
    assert_eq!(h.scale_down_gpu_utilization_threshold, 0.4);
    assert_eq!(h.scale_down_unneeded_time, SimDuration::from_mins(10));
    assert_eq!(h.scale_down_unready_time, SimDuration::from_mins(20));
    assert!(!h.ignore_daemonsets_utilization);
    let unknown = ca_error(
        "      nodeGroups:\n        - {name: g, instanceTypes: [m5.xlarge], maxSize: 5, autoscalingOptions: {scaleDownUtilisationThreshold: 0.3}}\n",
    );
    assert!(
        unknown.contains("nodeGroups[0].autoscalingOptions")
            && unknown.contains("scaleDownUtilisationThreshold"),
        "{unknown}"
    );
    let range = ca_error(
        "      nodeGroups:\n        - {name: g, instanceTypes: [m5.xlarge], maxSize: 5, autoscalingOptions: {scaleDownGpuUtilizationThreshold: 1.5}}\n",
    );
    assert!(
        range.contains("autoscalingOptions.scaleDownGpuUtilizationThreshold"),
        "{range}"
    );
}

/// `expendablePodsPriorityCutoff` (`--expendable-pods-priority-cutoff`,
/// −10): pods below it trigger no scale-up (core/utils
/// `IsExpendablePod`); any 32-bit priority, negative included.
#[test]
fn expendable_pods_priority_cutoff_reads_a_priority() {
    let read = |extra: &str| {
        let scenario = parse_ca(&format!("{GROUP}{extra}")).unwrap();
        let Provisioner::ClusterAutoscaler(ca) = &scenario.variants[0].provisioner else {
            panic!("not a CA variant");
        };
        ca.config.expendable_pods_priority_cutoff
    };
    assert_eq!(read(""), -10);
    assert_eq!(read("      expendablePodsPriorityCutoff: -100\n"), -100);
    assert_eq!(read("      expendablePodsPriorityCutoff: 1000\n"), 1000);
    let err = ca_error(&format!(
        "{GROUP}      expendablePodsPriorityCutoff: 5000000000\n"
    ));
    assert!(err.contains("expendablePodsPriorityCutoff"), "{err}");
}

/// `onDemandAllocationStrategy` is the ASG's: `prioritized` (default) or
/// `lowest-price`; anything else is refused at its place, listing both.
#[test]
fn on_demand_allocation_strategy_is_one_of_the_asgs() {
    let group = |strategy: &str| {
        format!(
            "      nodeGroups:\n        - {{name: g, instanceTypes: [m5.xlarge], maxSize: 5{strategy}}}\n"
        )
    };
    let read = |strategy: &str| {
        let scenario = parse_ca(&group(strategy)).unwrap();
        let Provisioner::ClusterAutoscaler(ca) = &scenario.variants[0].provisioner else {
            panic!("not a CA variant");
        };
        ca.config.node_groups[0].on_demand_allocation_strategy
    };
    use crate::autoscaler::OnDemandAllocationStrategy;
    assert_eq!(read(""), OnDemandAllocationStrategy::Prioritized);
    assert_eq!(
        read(", onDemandAllocationStrategy: lowest-price"),
        OnDemandAllocationStrategy::LowestPrice
    );
    let err = ca_error(&group(", onDemandAllocationStrategy: cheapest"));
    assert!(
        err.contains("nodeGroups[0].onDemandAllocationStrategy")
            && err.contains("prioritized")
            && err.contains("lowest-price"),
        "{err}"
    );
}

/// Each mistake is reported at its node with its field path. `price` gets
/// the AWS explanation (CA exits at start-up on AWS:
/// cloudprovider/aws has no pricing model).
#[test]
fn mistakes_are_reported_where_they_are_written() {
    let cases = [
        (
            format!("{GROUP}      expander: price\n"),
            "9:17: variants[0].clusterAutoscaler.expander: expander \"price\" is not available on AWS",
        ),
        (
            format!("{GROUP}      expander: random,priority\n"),
            "9:17: variants[0].clusterAutoscaler.expander: expander \"random\" must be the last",
        ),
        (
            format!("{GROUP}      expandr: priority\n"),
            "9:7: variants[0].clusterAutoscaler: unknown key \"expandr\" (valid keys: nodeGroups,",
        ),
        (
            format!("{GROUP}      expander: cheapest\n"),
            "9:17: variants[0].clusterAutoscaler.expander: unknown value \"cheapest\" (valid values: random,",
        ),
        (
            format!("{GROUP}      scaleDownUtilizationThreshold: 1.5\n"),
            "9:38: variants[0].clusterAutoscaler.scaleDownUtilizationThreshold: \
             scaleDownUtilizationThreshold 1.5 is not between 0 and 1",
        ),
        (
            format!("{GROUP}      priorities: {{10: [\"(\"]}}\n"),
            "9:24: variants[0].clusterAutoscaler.priorities.10: priorities[10]: invalid regex \"(\"",
        ),
        (
            "      nodeGroups:\n        - {name: g, instanceTypes: [m5.xlarge], minSize: 6, maxSize: 5}\n"
                .to_string(),
            "8:70: variants[0].clusterAutoscaler.nodeGroups[0].maxSize: node group \"g\": \
             minSize 6 is above maxSize 5",
        ),
        (
            "      nodeGroups:\n        - {name: g, instanceTypes: [m5.xlarge], maxSize: 5, zones: [eu-west-1a]}\n"
                .to_string(),
            "8:69: variants[0].clusterAutoscaler.nodeGroups[0].zones[0]: node group \"g\": \
             zone \"eu-west-1a\" is not in us-east-1",
        ),
        (
            "      nodeGroups:\n        - {name: g, instanceTypes: [m5.xlarge], maxSize: 5, color: red}\n"
                .to_string(),
            "8:61: variants[0].clusterAutoscaler.nodeGroups[0]: unknown key \"color\"",
        ),
        (
            "      nodeGroups:\n        - {name: g, instanceTypes: [m5.xlarge], maxSize: 5, onDemandBaseCapacity: 1}\n"
                .to_string(),
            "8:61: variants[0].clusterAutoscaler.nodeGroups[0]: \"onDemandBaseCapacity\" cannot \
             be combined with \"capacityType: on-demand\"",
        ),
        (
            format!("{GROUP}        - {{name: g, instanceTypes: [m5.large], maxSize: 1}}\n"),
            "9:11: variants[0].clusterAutoscaler.nodeGroups[1]: node group \"g\" is declared twice",
        ),
    ];
    for (block, expected) in cases {
        let message = ca_error(&block);
        assert!(
            message.starts_with(expected),
            "for {block:?}\n got: {message}\nwant: {expected}"
        );
    }
}

/// An instance type the region does not sell is caught when the variant
/// is prepared against the catalog, still pointing at where it is written.
#[test]
fn an_unknown_instance_type_is_reported_at_its_place_by_prepare() {
    let scenario = parse_ca(
        "      nodeGroups:\n        - {name: g, instanceTypes: [m5.xlarge, m5.gigantic], maxSize: 5}\n",
    )
    .unwrap();
    let err = prepare(&scenario, None).unwrap_err().to_string();
    assert!(
        err.ends_with(
            "8:48: variants[0].clusterAutoscaler.nodeGroups[0].instanceTypes[1]: node group \
             \"g\": instance type \"m5.gigantic\" is not sold in us-east-1"
        ),
        "{err}"
    );
}

/// A valid CA variant prepares into a run with no NodePools and the
/// validated configuration.
#[test]
fn a_ca_variant_prepares_into_a_ca_run() {
    let scenario = parse_ca(GROUP).unwrap();
    let prepared = prepare(&scenario, None).unwrap();
    let run = &prepared.runs[0];
    assert!(run.nodepools.is_empty());
    let ca = run.cluster_autoscaler.as_ref().unwrap();
    assert_eq!(ca.config.config().node_groups[0].name, "g");
    assert!(ca.catalog.get("m5.xlarge").is_some());
}

/// The ProvisioningRequest and cluster-health flags read under CA's flag
/// names with CA's defaults (`--enable-provisioning-requests` false,
/// backoff 1m/10m, `--ok-total-unready-count` 3,
/// `--max-total-unready-percentage` 45).
#[test]
fn provisioning_request_and_health_flags_read_with_defaults() {
    let read = |extra: &str| {
        let scenario = parse_ca(&format!("{GROUP}{extra}")).unwrap();
        let Provisioner::ClusterAutoscaler(ca) = &scenario.variants[0].provisioner else {
            panic!("not a CA variant");
        };
        ca.config.clone()
    };
    let d = read("");
    assert!(!d.enable_provisioning_requests);
    assert_eq!(
        d.provisioning_request_initial_backoff,
        SimDuration::from_mins(1)
    );
    assert_eq!(
        d.provisioning_request_max_backoff,
        SimDuration::from_mins(10)
    );
    assert_eq!(
        (d.ok_total_unready_count, d.max_total_unready_percentage),
        (3, 45.0)
    );
    let set = read(
        "      enableProvisioningRequests: true\n      provisioningRequestInitialBackoffTime: 30s\n      provisioningRequestMaxBackoffTime: 5m\n      okTotalUnreadyCount: 0\n      maxTotalUnreadyPercentage: 10\n",
    );
    assert!(set.enable_provisioning_requests);
    assert_eq!(
        set.provisioning_request_initial_backoff,
        SimDuration::from_secs(30)
    );
    assert_eq!(
        set.provisioning_request_max_backoff,
        SimDuration::from_mins(5)
    );
    assert_eq!(
        (set.ok_total_unready_count, set.max_total_unready_percentage),
        (0, 10.0)
    );
    let err = ca_error(&format!("{GROUP}      maxTotalUnreadyPercentage: 101\n"));
    assert!(err.contains("maxTotalUnreadyPercentage"), "{err}");
}

/// A group's `startupFailure`: the window of launches that hang and how.
#[test]
fn startup_failure_reads_a_window_and_a_node_state() {
    let block = "      nodeGroups:\n        - name: g\n          instanceTypes: [m5.xlarge]\n          maxSize: 5\n          startupFailure: {from: 2h, until: 3h, node: NotReady}\n        - {name: h, instanceTypes: [m5.xlarge], maxSize: 5, startupFailure: {node: Unregistered}}\n";
    let scenario = parse_ca(block).unwrap();
    let Provisioner::ClusterAutoscaler(ca) = &scenario.variants[0].provisioner else {
        panic!("not a CA variant");
    };
    let g = ca.startup_failures["g"];
    assert_eq!(
        g.from,
        crate::time::SimTime::ZERO + SimDuration::from_hours(2)
    );
    assert_eq!(
        g.until,
        Some(crate::time::SimTime::ZERO + SimDuration::from_hours(3))
    );
    assert_eq!(g.kind, crate::sim::engine::StartupFailureKind::NotReady);
    let h = ca.startup_failures["h"];
    assert_eq!((h.from, h.until), (crate::time::SimTime::ZERO, None));
    assert_eq!(h.kind, crate::sim::engine::StartupFailureKind::Unregistered);
    let empty = ca_error(
        "      nodeGroups:\n        - {name: g, instanceTypes: [m5.xlarge], maxSize: 5, startupFailure: {from: 2h, until: 1h, node: NotReady}}\n",
    );
    assert!(
        empty.contains("startupFailure.until: until (1h) must be after from (2h)"),
        "{empty}"
    );
    let kind = ca_error(
        "      nodeGroups:\n        - {name: g, instanceTypes: [m5.xlarge], maxSize: 5, startupFailure: {node: Broken}}\n",
    );
    assert!(kind.contains("startupFailure.node"), "{kind}");
}

/// A Cluster Autoscaler variant over a cluster snapshot takes the nodes of
/// its node groups as members, as CA knows an ASG's instances: by the
/// node-group label (the fixture's `system` node) or, for a group that
/// declares labels, by those labels with its instance type and zone (the
/// fixture's unmanaged m5.large in us-east-1c). Its scale-down may then
/// remove them, unless the node object carries
/// `cluster-autoscaler.kubernetes.io/scale-down-disabled: "true"`
/// (scale-down eligibility `ScaleDownDisabledAnnotation`); Karpenter's
/// nodes stay outside every group (`NotAutoscaled`).
#[test]
fn snapshot_nodes_of_node_groups_are_adopted_by_a_ca_variant() {
    let fixture = Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/snapshots/small.yaml"
    ));
    let text = std::fs::read_to_string(fixture).unwrap();
    let run = |snapshot: &str| {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("snap.yaml"), snapshot).unwrap();
        let scenario = "duration: 40m\ninitialState: snap.yaml\nvariants:\n  - name: ca\n    clusterAutoscaler:\n      nodeGroups:\n        - {name: system, instanceTypes: [m5.large], zones: [us-east-1a], maxSize: 3}\n        - {name: batch, instanceTypes: [m5.large], zones: [us-east-1c], maxSize: 3, labels: {kubernetes.io/arch: amd64}}\n";
        std::fs::write(dir.path().join("s.yaml"), scenario).unwrap();
        let scenario = Scenario::load(&dir.path().join("s.yaml"), &BundledRegions).unwrap();
        let prepared = prepare(&scenario, None).unwrap();
        crate::sim::engine::run(&prepared.runs[0], &mut |_| {}).unwrap()
    };
    let reasons = |out: &crate::sim::engine::RunOutput, node: &str| -> Vec<String> {
        out.scale_down
            .as_ref()
            .unwrap()
            .iter()
            .filter(|r| r.node == node)
            .map(|r| r.reason.clone())
            .collect()
    };
    let adopted = |out: &crate::sim::engine::RunOutput, node: &str| {
        out.events.iter().any(|e| {
            e.reason == "Adopted"
                && e.object == format!("node/{node}")
                && e.message.contains("(Cluster Autoscaler)")
        })
    };
    let system = "ip-10-0-2-20.ec2.internal";
    let plain = run(&text);
    assert!(adopted(&plain, system));
    assert!(adopted(&plain, "ip-10-0-3-30.ec2.internal"));
    assert!(!adopted(&plain, "ip-10-0-1-10.ec2.internal"));
    assert!(!reasons(&plain, system).contains(&"NotAutoscaled".to_string()));
    assert_eq!(
        reasons(&plain, "ip-10-0-1-10.ec2.internal")
            .first()
            .map(String::as_str),
        Some("NotAutoscaled")
    );
    let marked = "      node.alpha.kubernetes.io/ttl: '0'\n      volumes.kubernetes.io/controller-managed-attach-detach: 'true'\n    creationTimestamp: '2026-11-01T00:00:00Z'";
    assert!(text.contains(marked));
    let disabled_text = text.replacen(
        marked,
        &marked.replacen(
            "\n",
            "\n      cluster-autoscaler.kubernetes.io/scale-down-disabled: 'true'\n",
            1,
        ),
        1,
    );
    let disabled = run(&disabled_text);
    assert_eq!(
        reasons(&disabled, system),
        vec!["ScaleDownDisabledAnnotation".to_string()]
    );
    let removed = |out: &crate::sim::engine::RunOutput| {
        out.events
            .iter()
            .any(|e| e.reason == "ScaleDown" && e.object == format!("node/{system}"))
    };
    assert!(!removed(&disabled));
    // Empty (DaemonSet pods only): removed after the 10 min unneeded time,
    // at the first loop past it.
    let removal = plain
        .events
        .iter()
        .find(|e| e.reason == "ScaleDown" && e.object == format!("node/{system}"))
        .map(|e| e.time);
    assert_eq!(
        removal,
        Some(crate::time::SimTime::ZERO + SimDuration::from_secs(610))
    );
    // The label-matched node is a member too: judged, here kept by a PDB.
    assert!(
        reasons(&plain, "ip-10-0-3-30.ec2.internal")[0].starts_with("BlockedByPod"),
        "{:?}",
        reasons(&plain, "ip-10-0-3-30.ec2.internal")
    );
}
