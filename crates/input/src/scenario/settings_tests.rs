//! A Karpenter variant's `settings:` block, after core
//! pkg/operator/options/options.go (names and defaults, options_test.go's
//! "should use the correct default values" and feature-gate parsing) and
//! the NodeOverlay gate's effect on a run's prices.

use std::path::Path;

use super::*;
use crate::sim::SimDuration;

const REGIONS: &[(&str, &[&str])] = &[("us-east-1", &["us-east-1a", "us-east-1b"])];
const INLINE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/fixtures/scenarios/inline.yaml"
);

fn scenario_with(settings: &str) -> String {
    format!(
        "duration: 1h\nworkloads: [{{nodePools: nodepools/default.yaml}}]\nvariants:\n  - name: k\n    karpenter:\n      nodePools: nodepools/default.yaml\n      settings:\n{settings}"
    )
}

fn settings(text: &str) -> Result<KarpenterSettings, ScenarioError> {
    let scenario = Scenario::parse(&scenario_with(text), Path::new(INLINE), REGIONS)?;
    match &scenario.variants[0].provisioner {
        Provisioner::Karpenter(config) => Ok(config.settings),
        other => panic!("{other:?}"),
    }
}

fn error(text: &str) -> String {
    let e = settings(text).expect_err("must fail").to_string();
    assert_eq!(e.lines().count(), 1, "{e}");
    e.strip_prefix(&format!("{INLINE}:")).unwrap().to_string()
}

/// options_test.go "should use the correct default values": batch 1s /
/// 10s, SpotToSpotConsolidation, NodeOverlay and StaticCapacity off.
#[test]
fn options_defaults() {
    let d = KarpenterSettings::default();
    assert_eq!(d.batch_idle_duration, SimDuration::from_secs(1));
    assert_eq!(d.batch_max_duration, SimDuration::from_secs(10));
    assert!(!d.spot_to_spot_consolidation && !d.node_overlay && !d.static_capacity);
    // ReservedCapacity is on by default since v1.6 (beta).
    assert!(d.reserved_capacity);
    // An empty featureGates mapping changes nothing.
    assert_eq!(settings("        featureGates: {}\n").unwrap(), d);
}

/// options_test.go "should correctly override default vars when CLI
/// flags are set": every modelled setting is read, and reaches the
/// engine's options (the disruption controller's gate included).
#[test]
fn options_override_defaults() {
    let s = settings(
        "        featureGates: {SpotToSpotConsolidation: true, NodeOverlay: true, NodeRepair: true, ReservedCapacity: true, StaticCapacity: true}\n        batchIdleDuration: 2s\n        batchMaxDuration: 30s\n        minValuesPolicy: Strict\n        preferencePolicy: Respect\n",
    )
    .unwrap();
    assert!(s.spot_to_spot_consolidation && s.node_overlay && s.static_capacity && s.node_repair);
    assert_eq!(s.batch_idle_duration, SimDuration::from_secs(2));
    assert_eq!(s.batch_max_duration, SimDuration::from_secs(30));
    let engine = s.engine_options();
    assert!(
        engine.disruption.spot_to_spot_consolidation
            && engine.static_capacity
            && engine.node_repair
    );
    assert_eq!(engine.batch_max_duration, SimDuration::from_secs(30));
}

/// Unknown settings and gates are errors with their place and the valid
/// names, as a mistyped `--feature-gates` entry fails the operator's start.
#[test]
fn unknown_settings_and_gates_are_errors() {
    let e = error("        batchIdle: 2s\n");
    assert!(
        e.starts_with("8:9: variants[0].karpenter.settings: unknown key \"batchIdle\""),
        "{e}"
    );
    let e = error("        featureGates: {SpotToSpot: true}\n");
    assert!(
        e.starts_with(
            "8:24: variants[0].karpenter.settings.featureGates: unknown key \"SpotToSpot\""
        ),
        "{e}"
    );
    let e = error("        featureGates: {NodeOverlay: yes please}\n");
    assert!(e.contains("expected true or false"), "{e}");
    let e = error("        batchMaxDuration: 0s\n");
    assert!(e.contains("batchMaxDuration: must be longer than 0"), "{e}");
}

/// The gate karpsim does not simulate (CapacityBuffer) is accepted at
/// upstream's default and refused, naming the default, at another value.
#[test]
fn unmodelled_gates_refuse_non_default_values() {
    let e = error("        featureGates: {CapacityBuffer: true}\n");
    assert!(
        e.ends_with(
            "featureGates.CapacityBuffer: CapacityBuffer: true is not modelled yet by karpsim (upstream default: false)"
        ),
        "{e}"
    );
}

/// options_test.go feature gates: `ReservedCapacity` is modelled and read
/// either way.
#[test]
fn reserved_capacity_gate_is_read() {
    let off = settings("        featureGates: {ReservedCapacity: false}\n").unwrap();
    assert!(!off.reserved_capacity);
    let on = settings("        featureGates: {ReservedCapacity: true}\n").unwrap();
    assert!(on.reserved_capacity);
}

/// minValuesPolicy (Strict | BestEffort, v1.6) and preferencePolicy
/// (Respect | Ignore, v1.4) reach the scheduler's policies; other values
/// are not policies at all.
#[test]
fn policies_are_read() {
    use crate::karpenter::provisioning::MinValuesPolicy;
    let s = settings("        minValuesPolicy: BestEffort\n").unwrap();
    assert_eq!(s.scheduling.min_values, MinValuesPolicy::BestEffort);
    assert_eq!(
        s.engine_options().scheduling.min_values,
        MinValuesPolicy::BestEffort
    );
    let s = settings("        minValuesPolicy: Strict\n").unwrap();
    assert_eq!(s.scheduling.min_values, MinValuesPolicy::Strict);
    let e = error("        minValuesPolicy: Loose\n");
    assert!(
        e.contains("unknown value \"Loose\" (valid values: Strict, BestEffort)"),
        "{e}"
    );
    use crate::karpenter::provisioning::PreferencePolicy;
    let s = settings("        preferencePolicy: Ignore\n").unwrap();
    assert_eq!(s.scheduling.preference, PreferencePolicy::Ignore);
    assert_eq!(
        s.engine_options().scheduling.preference,
        PreferencePolicy::Ignore
    );
    let e = error("        preferencePolicy: Prefer\n");
    assert!(
        e.contains("unknown value \"Prefer\" (valid values: Respect, Ignore)"),
        "{e}"
    );
}

/// The NodeOverlay gate: on, the overlay's prices are in the variant's
/// catalogs; off (upstream's default), the same files give list prices
/// and one warning saying the overlays are ignored.
#[test]
fn node_overlay_gate_decides_whether_overlays_apply() {
    let path = Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../scenarios/savings-plan.yaml"
    ));
    let mut scenario = Scenario::load(path, &BundledRegions).unwrap();
    let on = prepare(&scenario, Some("savings-plan-30")).unwrap();
    assert!(
        on.warnings.iter().all(|w| !w.contains("NodeOverlay")),
        "{:?}",
        on.warnings
    );
    let Provisioner::Karpenter(config) = &mut scenario.variants[1].provisioner else {
        panic!("karpenter variant")
    };
    config.settings.node_overlay = false;
    let off = prepare(&scenario, Some("savings-plan-30")).unwrap();
    let ignored: Vec<&String> = off
        .warnings
        .iter()
        .filter(|w| w.contains("NodeOverlay"))
        .collect();
    assert_eq!(ignored.len(), 1, "{:?}", off.warnings);
    assert!(
        ignored[0].contains("1 NodeOverlay(s) ignored"),
        "{}",
        ignored[0]
    );
    let price = |p: &Prepared| {
        let it = p.runs[0].nodepools[0].catalog.get("m6i.xlarge").unwrap();
        it.cheapest(crate::cloud::CapacityType::OnDemand)
            .unwrap()
            .price
    };
    assert_eq!(price(&on), price(&off).scale(70, 100).unwrap());
    // Families the overlay does not name keep their price either way.
    let c6a = |p: &Prepared| {
        p.runs[0].nodepools[0]
            .catalog
            .get("c6a.xlarge")
            .unwrap()
            .on_demand_price
    };
    assert_eq!(c6a(&on), c6a(&off));
}

/// A `nodePools` step's NodeOverlays apply per variant: the step's pools
/// are overlaid for the variant with the gate on and left at list price
/// for the one without.
#[test]
fn nodepools_step_overlays_follow_each_variants_gate() {
    let text = "duration: 4h\nworkloads:\n  - manifests: workloads/base.yaml\n  - at: 3h\n    nodePools: [nodepools/spot.yaml, nodepools/half-price-overlay.yaml]\nvariants:\n  - name: gated\n    karpenter:\n      nodePools: [nodepools/default.yaml]\n      settings: {featureGates: {NodeOverlay: true}}\n  - name: plain\n    karpenter: {nodePools: [nodepools/default.yaml]}\n";
    let scenario = Scenario::parse(text, Path::new(INLINE), &BundledRegions).unwrap();
    let prepared = prepare(&scenario, None).unwrap();
    let step_price = |run: usize| match &prepared.runs[run].steps[1].action {
        crate::sim::engine::StepAction::NodePools { nodepools, .. } => {
            nodepools[0].catalog.get("m5.large").unwrap().offerings[0].price
        }
        other => panic!("expected a NodePools step, got {other:?}"),
    };
    assert_eq!(step_price(0), step_price(1).scale(1, 2).unwrap());
    assert!(
        prepared
            .warnings
            .iter()
            .any(|w| w.contains("1 NodeOverlay(s) ignored")),
        "{:?}",
        prepared.warnings
    );
}

/// The StaticCapacity gate: off (upstream's default), a static NodePool is
/// kept, with one warning that it gets no NodeClaims; on, no warning. A
/// `nodePools` step may not turn a NodePool between static and dynamic
/// (core pkg/apis/v1/nodepool.go's CEL rule on updates).
#[test]
fn static_capacity_gate_and_mode_transitions() {
    let text = |gate: &str, step: &str| {
        format!(
            "duration: 1h\nworkloads:\n  - manifests: workloads/base.yaml\n{step}variants:\n  - name: k\n    karpenter:\n      nodePools: [nodepools/static-default.yaml]\n{gate}"
        )
    };
    let prepared = |text: String| {
        let scenario = Scenario::parse(&text, Path::new(INLINE), &BundledRegions).unwrap();
        prepare(&scenario, None)
    };
    let off = prepared(text("", "")).unwrap();
    let warned: Vec<&String> = off
        .warnings
        .iter()
        .filter(|w| w.contains("StaticCapacity"))
        .collect();
    assert_eq!(warned.len(), 1, "{:?}", off.warnings);
    assert!(
        warned[0].contains("static NodePool(s) default (spec.replicas) get no NodeClaims"),
        "{}",
        warned[0]
    );
    assert_eq!(off.runs[0].nodepools[0].pool.replicas, Some(3));
    let on = prepared(text(
        "      settings: {featureGates: {StaticCapacity: true}}\n",
        "",
    ))
    .unwrap();
    assert!(on.warnings.iter().all(|w| !w.contains("StaticCapacity")));
    assert!(on.runs[0].karpenter.static_capacity);
    let e = prepared(text(
        "",
        "  - at: 30m\n    nodePools: nodepools/default.yaml\n",
    ))
    .expect_err("static to dynamic")
    .to_string();
    assert!(
        e.contains(
            "NodePool \"default\": Cannot transition NodePool between static (replicas set) and dynamic (replicas unset) provisioning modes"
        ),
        "{e}"
    );
}

/// A `nodeCondition` step names a node of the snapshot or a name the run's
/// NodeClaims take, one of the repair policies' condition types, and a
/// condition status; anything else is an error naming the place.
#[test]
fn node_condition_steps_are_checked() {
    let text = |condition: &str| {
        format!(
            "duration: 1h\nworkloads:\n  - manifests: workloads/base.yaml\n  - at: 10m\n    nodeCondition: {condition}\nvariants:\n  - name: k\n    karpenter: {{nodePools: [nodepools/default.yaml], settings: {{featureGates: {{NodeRepair: true}}}}}}\n"
        )
    };
    let parse =
        |condition: &str| Scenario::parse(&text(condition), Path::new(INLINE), &BundledRegions);
    let scenario = parse("{node: default-00001, type: Ready, status: \"False\"}").unwrap();
    let prepared = prepare(&scenario, None).unwrap();
    assert!(prepared.runs[0].karpenter.node_repair);
    assert!(matches!(
        &prepared.runs[0].steps[1].action,
        crate::sim::engine::StepAction::NodeCondition { node, condition_type, .. }
            if node == "default-00001" && condition_type == "Ready"
    ));
    let e = parse("{node: default-00001, type: DiskPressure, status: \"True\"}")
        .unwrap_err()
        .to_string();
    assert!(e.contains("unknown value \"DiskPressure\""), "{e}");
    let e = parse("{node: default-00001, type: Ready, status: false}")
        .unwrap_err()
        .to_string();
    assert!(e.contains("nodeCondition.status"), "{e}");
    let scenario = parse("{node: my-node, type: Ready, status: Unknown}").unwrap();
    let e = prepare(&scenario, None).unwrap_err().to_string();
    assert!(
        e.contains(
            "nodeCondition names node \"my-node\", which is neither in the initialState snapshot"
        ),
        "{e}"
    );
}
