//! Capacity reservations end to end: the scenario's `capacityReservations`
//! and the EC2NodeClass's `capacityReservationSelectorTerms` read strictly,
//! and runs that launch into, release, outlast and are charged for them
//! (aws: pkg/providers/capacityreservation/suite_test.go,
//! pkg/controllers/capacityreservation/expiration/suite_test.go; core:
//! scheduling/suite_test.go "Reserved Instance Types").

use std::path::Path;

use super::{BundledRegions, Scenario, prepare};
use crate::cloud::{CapacityType, Price};
use crate::nodepools::load_str;
use crate::sim::engine::{RunOutput, run};

/// A pool allowed reserved and on-demand m6i.xlarge, whose EC2NodeClass
/// selects reservations by `terms` (YAML lines under the key).
fn pool_yaml(terms: &str) -> String {
    format!(
        "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {{name: pool}}\nspec:\n  template:\n    spec:\n      nodeClassRef: {{group: karpenter.k8s.aws, kind: EC2NodeClass, name: cls}}\n      requirements:\n        - {{key: karpenter.sh/capacity-type, operator: In, values: [reserved, on-demand]}}\n        - {{key: node.kubernetes.io/instance-type, operator: In, values: [m6i.xlarge]}}\n---\napiVersion: karpenter.k8s.aws/v1\nkind: EC2NodeClass\nmetadata: {{name: cls}}\nspec:\n  amiSelectorTerms: [{{alias: al2023@latest}}]\n  capacityReservationSelectorTerms:\n{terms}"
    )
}

/// A Deployment `name` of `replicas` pods of 3 CPUs (one per m6i.xlarge).
fn deployment(name: &str, replicas: u32) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: {name}}}\nspec:\n  replicas: {replicas}\n  selector: {{matchLabels: {{app: {name}}}}}\n  template:\n    metadata: {{labels: {{app: {name}}}}}\n    spec:\n      containers: [{{name: c, resources: {{requests: {{cpu: '3', memory: 1Gi}}}}}}]\n"
    )
}

/// Writes the files and prepares the scenario whose text is `scenario`
/// (it names `pool.yaml`, `a.yaml`, `b.yaml`).
fn prepared(scenario: &str, pool: &str) -> Result<super::Prepared, String> {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| std::fs::write(dir.path().join(name), text).unwrap();
    write("pool.yaml", pool);
    write("a.yaml", &deployment("a", 2));
    write("b.yaml", &deployment("b", 1));
    write("s.yaml", scenario);
    let scenario =
        Scenario::load(&dir.path().join("s.yaml"), &BundledRegions).map_err(|e| e.to_string())?;
    prepare(&scenario, None).map_err(|e| e.to_string())
}

fn run_one(scenario: &str, pool: &str) -> RunOutput {
    let prepared = prepared(scenario, pool).unwrap_or_else(|e| panic!("{e}"));
    run(&prepared.runs[0], &mut |_| {}).unwrap()
}

const HEAD: &str = "name: t\nseed: 1\nregion: us-east-1\nzones: [us-east-1a, us-east-1b]\nnodeLaunchLatency: {fixed: 30s}\n";

fn error_of(scenario: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.yaml");
    std::fs::write(&path, scenario).unwrap();
    std::fs::write(dir.path().join("a.yaml"), deployment("a", 1)).unwrap();
    std::fs::write(dir.path().join("pool.yaml"), pool_yaml("    - id: cr-1\n")).unwrap();
    let err = Scenario::load(Path::new(&path), &BundledRegions).unwrap_err();
    let text = err.to_string();
    text.split_once("s.yaml:")
        .map_or(text.clone(), |(_, rest)| rest.to_string())
}

const VARIANTS: &str = "workloads:\n  - manifests: a.yaml\nvariants:\n  - name: v\n    karpenter: {nodePools: pool.yaml}\n";

/// Every field of a `capacityReservations` entry is checked where it is
/// written: unknown keys, bad ids, repeats, counts, zones, types.
#[test]
fn capacity_reservation_fields_are_errors_with_their_line() {
    let case = |entry: &str| {
        error_of(&format!(
            "{HEAD}duration: 1h\ncapacityReservations:\n{entry}{VARIANTS}"
        ))
    };
    assert_eq!(
        case("  - {id: cr-1, instanceType: m6i.xlarge, zone: us-east-1a, count: 1, size: 2}\n"),
        "8:70: capacityReservations[0]: unknown key \"size\" (valid keys: id, instanceType, zone, count, type, end, tags, ownerID, price)"
    );
    assert!(
        case("  - {id: cr-1, instanceType: m6i.xlarge, zone: us-east-1a, count: 0}\n")
            .contains("capacityReservations[0].count: must be at least 1"),
    );
    let repeated = case(
        "  - {id: cr-1, instanceType: m6i.xlarge, zone: us-east-1a, count: 1}\n  - {id: cr-1, instanceType: m6i.xlarge, zone: us-east-1b, count: 1}\n",
    );
    assert!(repeated.starts_with("9:"), "{repeated}");
    assert!(
        repeated.contains("capacityReservations[1].id: \"cr-1\" is listed twice"),
        "{repeated}"
    );
    assert!(
        case("  - {id: CR-1, instanceType: m6i.xlarge, zone: us-east-1a, count: 1}\n")
            .contains("capacityReservations[0].id: invalid name \"CR-1\""),
    );
    assert!(
        case("  - {id: cr-1, instanceType: m6i.xlarge, zone: us-east-1c, count: 1}\n").contains(
            "capacityReservations[0].zone: zone \"us-east-1c\" is not among the scenario's zones"
        ),
    );
    assert!(
        case("  - {id: cr-1, instanceType: m6i.xlarge, zone: us-east-1a, count: 1, type: block}\n")
            .contains("capacityReservations[0].type: unknown value \"block\" (valid values: default, capacity-block)"),
    );
    assert!(
        case("  - {id: cr-1, instanceType: m6i.xlarge, zone: us-east-1a, count: 1, type: capacity-block}\n")
            .contains("capacityReservations[0]: missing required key \"end\""),
    );
    assert!(
        case("  - {id: cr-1, instanceType: m6i.xlarge, zone: us-east-1a, count: 1, end: 1h}\n")
            .contains("capacityReservations[0].end: end is modelled for capacity blocks only"),
    );
}

/// An instance type the region does not sell is refused when the scenario
/// is prepared, at the line it is written on.
#[test]
fn unknown_reservation_instance_type_is_an_error_with_its_line() {
    let err = prepared(
        &format!("{HEAD}duration: 1h\ncapacityReservations:\n  - {{id: cr-1, instanceType: m6i.xlarg, zone: us-east-1a, count: 1}}\n{VARIANTS}"),
        &pool_yaml("    - id: cr-1\n"),
    )
    .unwrap_err();
    assert!(
        err.ends_with("s.yaml:8:30: capacityReservations[0].instanceType: unknown instance type \"m6i.xlarg\" in us-east-1 (did you mean \"m6i.xlarge\"?)"),
        "{err}"
    );
}

/// aws ec2nodeclass CEL rules on `capacityReservationSelectorTerms`: a
/// term needs `id` or `tags`; `id` stands alone; ids are `cr-…`; unknown
/// fields are errors.
#[test]
fn capacity_reservation_selector_terms_are_validated() {
    let read = |terms: &str| {
        load_str("pool.yaml", &pool_yaml(terms))
            .map(|m| m.nodeclasses[0].capacity_reservation_terms.clone())
            .map_err(|e| e.to_string())
    };
    let terms = read(
        "    - id: cr-0a1\n    - tags: {team: web, env: '*'}\n      ownerID: '123456789012'\n",
    )
    .unwrap();
    assert_eq!(terms[0].id.as_deref(), Some("cr-0a1"));
    assert_eq!(terms[1].tags["env"], "*");
    assert_eq!(terms[1].owner_id.as_deref(), Some("123456789012"));
    let err = read("    - {id: cr-1, tags: {team: web}}\n").unwrap_err();
    assert!(err.contains("pool.yaml:18:12:"), "{err}");
    assert!(err.contains("'id' is mutually exclusive"), "{err}");
    let err = read("    - {ownerID: '123456789012'}\n").unwrap_err();
    assert!(
        err.contains("expected at least one, got none, ['tags', 'id']"),
        "{err}"
    );
    let err = read("    - {id: sg-1}\n").unwrap_err();
    assert!(
        err.contains("invalid capacity reservation id \"sg-1\""),
        "{err}"
    );
    let err = read("    - {name: x}\n").unwrap_err();
    assert!(err.contains("name"), "{err}");
}

/// core scheduling suite "Reserved Instance Types" with the capacity
/// reservation provider's accounting (aws capacityreservation
/// `MarkLaunched`/`MarkTerminated`): two pods take the one reserved
/// instance and one on-demand instance; when Deployment `a` is deleted its
/// nodes are consolidated away, and `b`'s pod, later, is launched into the
/// freed reservation. The reservation is charged for the whole run: 2 h ×
/// $1/h; the reserved nodes cost nothing more.
#[test]
fn released_reservation_slot_is_reused_and_charged_for_the_whole_run() {
    let out = run_one(
        &format!(
            "{HEAD}duration: 2h\ncapacityReservations:\n  - {{id: cr-1, instanceType: m6i.xlarge, zone: us-east-1a, count: 1, price: 1.0}}\nworkloads:\n  - manifests: a.yaml\n  - at: 30m\n    delete: {{deployment: a}}\n  - at: 1h\n    manifests: b.yaml\nvariants:\n  - name: v\n    karpenter: {{nodePools: pool.yaml}}\n"
        ),
        &pool_yaml("    - id: cr-1\n"),
    );
    let types: Vec<(CapacityType, &str)> = out
        .nodeclaims
        .iter()
        .map(|c| (c.capacity_type, c.zone.as_str()))
        .collect();
    assert_eq!(
        types,
        [
            (CapacityType::Reserved, "us-east-1a"),
            (CapacityType::OnDemand, "us-east-1a"),
            (CapacityType::Reserved, "us-east-1a"),
        ],
        "{:?}",
        out.nodeclaims
    );
    let first = &out.nodeclaims[0];
    let third = &out.nodeclaims[2];
    assert!(first.deleted_at.is_some_and(|d| d <= third.launched_at));
    assert_eq!(first.price, Price::ZERO);
    assert_eq!(first.cost.0, 0);
    let reserved = out.summary.cost_by_capacity_type[&CapacityType::Reserved];
    assert_eq!(reserved.0, 2_000_000);
    let on_demand = out.summary.cost_by_capacity_type[&CapacityType::OnDemand];
    assert_eq!(out.summary.total_cost.0, reserved.0 + on_demand.0);
}

/// With `featureGates.ReservedCapacity: false` the reservations are
/// ignored (upstream's resolver and scheduler both check the gate): no
/// reserved node, no reservation charge.
#[test]
fn gate_off_ignores_reservations() {
    let scenario = format!(
        "{HEAD}duration: 1h\ncapacityReservations:\n  - {{id: cr-1, instanceType: m6i.xlarge, zone: us-east-1a, count: 5}}\nworkloads:\n  - manifests: a.yaml\nvariants:\n  - name: v\n    karpenter:\n      nodePools: pool.yaml\n      settings: {{featureGates: {{ReservedCapacity: false}}}}\n"
    );
    let prepared = prepared(&scenario, &pool_yaml("    - id: cr-1\n")).unwrap();
    assert!(prepared.runs[0].reservations.is_empty());
    assert!(
        prepared
            .warnings
            .iter()
            .any(|w| w.contains("ReservedCapacity feature gate is off"))
    );
    let out = run(&prepared.runs[0], &mut |_| {}).unwrap();
    assert!(
        out.nodeclaims
            .iter()
            .all(|c| c.capacity_type == CapacityType::OnDemand)
    );
    assert!(
        !out.summary
            .cost_by_capacity_type
            .contains_key(&CapacityType::Reserved)
    );
}

/// aws capacityreservation expiration suite: a capacity block counts as
/// expiring 40 minutes before its end, and its NodeClaims are deleted
/// then (`capacity-block-expiring`); the pods move to on-demand; the block
/// is charged until its end (2 h × 2 instances × $0.5/h).
#[test]
fn capacity_block_end_interrupts_its_nodes_forty_minutes_early() {
    let out = run_one(
        &format!(
            "{HEAD}duration: 3h\ncapacityReservations:\n  - {{id: cr-1, instanceType: m6i.xlarge, zone: us-east-1b, count: 2, type: capacity-block, end: 2h, price: 0.5, tags: {{team: ml}}}}\n{VARIANTS}"
        ),
        &pool_yaml("    - tags: {team: ml}\n"),
    );
    let reserved: Vec<_> = out
        .nodeclaims
        .iter()
        .filter(|c| c.capacity_type == CapacityType::Reserved)
        .collect();
    assert_eq!(reserved.len(), 2, "{:?}", out.nodeclaims);
    for claim in &reserved {
        assert_eq!(claim.reason_deleted, "capacity-block-expiring");
        assert_eq!(claim.zone, "us-east-1b");
        assert!(
            claim
                .deleted_at
                .is_some_and(|d| d.as_millis() <= 2 * 3_600_000)
        );
    }
    let replacements = out
        .nodeclaims
        .iter()
        .filter(|c| c.capacity_type == CapacityType::OnDemand)
        .count();
    assert_eq!(replacements, 2);
    assert_eq!(
        out.summary.cost_by_capacity_type[&CapacityType::Reserved].0,
        2_000_000
    );
    assert!(out.events.iter().any(|e| e.reason == "CapacityReservationExpiring"
        && e.time.as_millis() == 80 * 60_000));
}

/// core scheduling suite "Reserved Instance Types": a NodePool allowed
/// only `reserved` launches as many nodes as the reservation has
/// instances, and the pod left over stays pending (nothing to fall back
/// to); the pool is accepted although the region offers nothing
/// `reserved` without the reservation.
#[test]
fn reserved_only_pool_launches_no_more_than_the_count() {
    let pool = pool_yaml("    - id: cr-1\n").replace("[reserved, on-demand]", "[reserved]");
    let prepared = prepared(
        &format!("{HEAD}duration: 1h\ncapacityReservations:\n  - {{id: cr-1, instanceType: m6i.xlarge, zone: us-east-1a, count: 1}}\n{VARIANTS}"),
        &pool,
    )
    .unwrap();
    assert!(
        !prepared
            .warnings
            .iter()
            .any(|w| w.contains("offered as reserved")),
        "{:?}",
        prepared.warnings
    );
    let out = run(&prepared.runs[0], &mut |_| {}).unwrap();
    assert_eq!(out.nodeclaims.len(), 1, "{:?}", out.nodeclaims);
    assert_eq!(out.nodeclaims[0].capacity_type, CapacityType::Reserved);
    assert_eq!(out.summary.pods_unschedulable, 1);
}
