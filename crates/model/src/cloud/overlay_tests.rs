//! NodeOverlay application, after the examples of upstream's
//! designs/node-overlay.md, `AdjustedPrice` (cloudprovider/types.go),
//! `OrderByWeight` (apis/v1alpha1/nodeoverlay.go) and the store tests
//! (controllers/nodeoverlay/store_test.go).

use std::collections::BTreeMap;

use super::*;
use crate::cloud::CapacityType;
use crate::cloud::fake;
use crate::kube::labels::{LABEL_CAPACITY_TYPE, LABEL_INSTANCE_TYPE};

fn overlay(name: &str, weight: u32, reqs: Vec<Requirement>, price: Option<&str>) -> NodeOverlay {
    NodeOverlay {
        name: name.to_string(),
        weight,
        requirements: reqs.into_iter().collect(),
        price: price.map(|p| {
            PriceChange::parse_adjustment(p)
                .or_else(|_| PriceChange::parse_price(p))
                .unwrap()
        }),
        capacity: Vec::new(),
    }
}

fn run(catalog: &Catalog, overlays: &[NodeOverlay]) -> (Catalog, Vec<String>) {
    let labels = BTreeMap::new();
    let view = PoolView {
        name: "default",
        labels: &labels,
    };
    let (mut out, conflicts) = apply_overlays(&[(view, catalog)], overlays);
    (out.remove(0).catalog, conflicts)
}

fn price_of(catalog: &Catalog, it: &str, ct: CapacityType) -> i64 {
    catalog
        .get(it)
        .unwrap()
        .cheapest(ct)
        .unwrap()
        .price
        .micros()
}

/// `AdjustedPrice`: "+10%" of 1.00 is 1.10; "-15%" is 0.85; "-100%" is 0;
/// "+0.5" adds; "-7.50" below zero clamps to 0; a bare "5.00" (spec.price)
/// replaces.
#[test]
fn adjusted_price_forms() {
    let one = Price::from_micros(1_000_000);
    let apply = |text: &str| {
        PriceChange::parse_adjustment(text)
            .unwrap()
            .apply(one)
            .micros()
    };
    assert_eq!(apply("+10%"), 1_100_000);
    assert_eq!(apply("-15%"), 850_000);
    assert_eq!(apply("-12.5%"), 875_000);
    assert_eq!(apply("-100%"), 0);
    assert_eq!(apply("+0.5"), 1_500_000);
    assert_eq!(apply("-7.50"), 0);
    let set = PriceChange::parse_price("5.00").unwrap();
    assert_eq!(set.apply(one).micros(), 5_000_000);
}

/// The CRD patterns: priceAdjustment needs a sign, a decrease is at most
/// 100 % (-\d{1,2}(\.\d+)?% | -100%); price is an unsigned decimal.
#[test]
fn price_adjustment_pattern() {
    for bad in [
        "10%", "0.5", "-101%", "-150%", "+", "-%", "+1.", "abc", "-1e3",
    ] {
        assert!(PriceChange::parse_adjustment(bad).is_err(), "{bad}");
    }
    for good in ["+150%", "-99.9%", "-0%", "+.5", "-0.1"] {
        assert!(PriceChange::parse_adjustment(good).is_ok(), "{good}");
    }
    for bad in ["-1", "+1", ".5", "1.", "1e2", ""] {
        assert!(PriceChange::parse_price(bad).is_err(), "{bad}");
    }
}

/// `OrderByWeight`: larger weight first, equal weight the later name first.
#[test]
fn order_by_weight_then_reverse_name() {
    let overlays = vec![
        overlay("a", 10, vec![], None),
        overlay("b", 10, vec![], None),
        overlay("c", 0, vec![], None),
        overlay("d", 50, vec![], None),
    ];
    let names: Vec<&str> = order_by_weight(&overlays)
        .iter()
        .map(|o| o.name.as_str())
        .collect();
    assert_eq!(names, ["d", "b", "a", "c"]);
}

/// Design "Price Adjustment" example: an overlay on
/// `capacity-type In [on-demand]` changes only on-demand offerings.
#[test]
fn design_price_adjustment_on_demand_only() {
    let catalog = fake::instance_types(3);
    let before_od = price_of(&catalog, "fake-it-1", CapacityType::OnDemand);
    let before_spot = price_of(&catalog, "fake-it-1", CapacityType::Spot);
    let discount = overlay(
        "savings-plan",
        0,
        vec![Requirement::in_values(LABEL_CAPACITY_TYPE, ["on-demand"])],
        Some("-30%"),
    );
    let (out, conflicts) = run(&catalog, &[discount]);
    assert!(conflicts.is_empty());
    let after_od = price_of(&out, "fake-it-1", CapacityType::OnDemand);
    assert_eq!(after_od, (before_od * 7 + 5) / 10);
    assert_eq!(price_of(&out, "fake-it-1", CapacityType::Spot), before_spot);
    assert_eq!(
        out.get("fake-it-1").unwrap().on_demand_price.micros(),
        after_od
    );
}

/// Requirements select instance types: one named type changes, the others
/// keep their prices.
#[test]
fn requirements_select_instance_types() {
    let catalog = fake::instance_types(3);
    let only = overlay(
        "one-type",
        0,
        vec![Requirement::in_values(LABEL_INSTANCE_TYPE, ["fake-it-2"])],
        Some("0.01"),
    );
    let (out, _) = run(&catalog, &[only]);
    assert_eq!(price_of(&out, "fake-it-2", CapacityType::Spot), 10_000);
    assert_eq!(
        price_of(&out, "fake-it-0", CapacityType::Spot),
        price_of(&catalog, "fake-it-0", CapacityType::Spot)
    );
}

/// An overlay on a NodePool label selects by `karpenter.sh/nodepool`; an
/// overlay on a label the pool does not define matches nothing.
#[test]
fn nodepool_key_and_undefined_labels() {
    let catalog = fake::instance_types(2);
    let labels: BTreeMap<String, String> = [("team".to_string(), "web".to_string())].into();
    let views = [
        (
            PoolView {
                name: "web",
                labels: &labels,
            },
            &catalog,
        ),
        (
            PoolView {
                name: "batch",
                labels: &BTreeMap::new(),
            },
            &catalog,
        ),
    ];
    let by_team = overlay(
        "team",
        0,
        vec![Requirement::in_values("team", ["web"])],
        Some("+1"),
    );
    let (out, _) = apply_overlays(&views, &[by_team]);
    let base = price_of(&catalog, "fake-it-0", CapacityType::Spot);
    assert_eq!(
        price_of(&out[0].catalog, "fake-it-0", CapacityType::Spot),
        base + 1_000_000
    );
    assert_eq!(
        price_of(&out[1].catalog, "fake-it-0", CapacityType::Spot),
        base
    );
    let by_pool = overlay(
        "pool",
        0,
        vec![Requirement::in_values(LABEL_NODEPOOL, ["batch"])],
        Some("+2"),
    );
    let (out, _) = apply_overlays(&views, &[by_pool]);
    assert_eq!(
        price_of(&out[0].catalog, "fake-it-0", CapacityType::Spot),
        base
    );
    assert_eq!(
        price_of(&out[1].catalog, "fake-it-0", CapacityType::Spot),
        base + 2_000_000
    );
}

/// Design "Merge by Weight": the higher weight's price wins where both
/// match; the lower one still applies where it alone matches.
#[test]
fn design_merge_by_weight_higher_wins() {
    let catalog = fake::instance_types(2);
    let base = overlay("default", 0, vec![], Some("-10%"));
    let specific = overlay(
        "specific",
        1,
        vec![Requirement::in_values(LABEL_INSTANCE_TYPE, ["fake-it-1"])],
        Some("0.02"),
    );
    let (out, conflicts) = run(&catalog, &[base, specific]);
    assert!(conflicts.is_empty());
    assert_eq!(price_of(&out, "fake-it-1", CapacityType::OnDemand), 20_000);
    let before = price_of(&catalog, "fake-it-0", CapacityType::OnDemand);
    assert_eq!(
        price_of(&out, "fake-it-0", CapacityType::OnDemand),
        (before * 9 + 5) / 10
    );
}

/// Design "Misconfiguration" (fail open): two overlays of equal weight
/// pricing the same offering conflict; the one ordered first (the later
/// name) applies and the other is refused whole, even where it alone
/// matches.
#[test]
fn design_misconfiguration_equal_weight_conflict() {
    let catalog = fake::instance_types(3);
    let first = overlay(
        "memory-1",
        90,
        vec![Requirement::in_values(
            LABEL_INSTANCE_TYPE,
            ["fake-it-0", "fake-it-1"],
        )],
        Some("0.01"),
    );
    let second = overlay(
        "capacity-1",
        90,
        vec![Requirement::in_values(
            LABEL_INSTANCE_TYPE,
            ["fake-it-1", "fake-it-2"],
        )],
        Some("0.03"),
    );
    let (out, conflicts) = run(&catalog, &[second, first]);
    assert_eq!(conflicts, ["capacity-1"]);
    assert_eq!(price_of(&out, "fake-it-1", CapacityType::Spot), 10_000);
    assert_eq!(
        price_of(&out, "fake-it-2", CapacityType::Spot),
        price_of(&catalog, "fake-it-2", CapacityType::Spot)
    );
}

/// Design "Capacity" example: extended resources are added to matching
/// types (capacity and allocatable), others are untouched.
#[test]
fn design_capacity_adds_extended_resources() {
    let catalog = fake::instance_types(2);
    let mut gpu = overlay(
        "extended-resource",
        0,
        vec![Requirement::in_values(LABEL_INSTANCE_TYPE, ["fake-it-1"])],
        None,
    );
    gpu.capacity = vec![(ResourceKind::NvidiaGpu, 4)];
    let (out, _) = run(&catalog, &[gpu]);
    let it = out.get("fake-it-1").unwrap();
    assert_eq!(it.capacity.get(ResourceKind::NvidiaGpu), 4);
    assert_eq!(it.allocatable.get(ResourceKind::NvidiaGpu), 4);
    assert_eq!(
        out.get("fake-it-0")
            .unwrap()
            .allocatable
            .get(ResourceKind::NvidiaGpu),
        0
    );
    // Prices are untouched by a capacity-only overlay.
    assert_eq!(
        out.get("fake-it-1").unwrap().offerings,
        catalog.get("fake-it-1").unwrap().offerings
    );
}
