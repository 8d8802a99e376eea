//! Tests of the regional catalog over the bundled snapshot.

use super::*;
use crate::cloud::Arch;
use crate::cloud::nodeclass::AmiFamily;
use crate::kube::labels;
use crate::kube::resources::GIB;

fn load(region: &str) -> Catalog {
    Catalog::load(region, &NodeClassSettings::default()).unwrap()
}

/// Pricing 2026-07 table (aws: zz_generated.pricing_aws.go): m5.large 0.096.
#[test]
fn us_east_1_m5_large() {
    let catalog = load("us-east-1");
    let m5 = catalog.get("m5.large").unwrap();
    assert_eq!(m5.on_demand_price, Price::from_micros(96_000));
    assert_eq!(m5.on_demand_price.to_string(), "$0.096");
    assert_eq!(m5.allocatable.cpu_millis(), 1930);
    assert_eq!(m5.label(labels::LABEL_INSTANCE_FAMILY), Some("m5"));
    assert_eq!(m5.label(labels::LABEL_TOPOLOGY_REGION), Some("us-east-1"));
    assert_eq!(catalog.zones().len(), 6);
    let od = m5.cheapest(CapacityType::OnDemand).unwrap();
    let spot = m5.cheapest(CapacityType::Spot).unwrap();
    assert!(spot.price < od.price);
    assert!(spot.interruption_band.is_some());
    assert_eq!(
        m5.offerings.len(),
        12,
        "6 zones × on-demand and spot: {:?}",
        m5.offerings
    );
}

#[test]
fn eu_west_1_zones() {
    let catalog = load("eu-west-1");
    let names: Vec<&str> = catalog.zones().iter().map(|z| z.name).collect();
    assert_eq!(names, ["eu-west-1a", "eu-west-1b", "eu-west-1c"]);
    let ids: Vec<&str> = catalog.zones().iter().map(|z| z.id).collect();
    assert_eq!(ids, ["euw1-az1", "euw1-az2", "euw1-az3"]);
    // us-west-1 has only b and c for new accounts.
    let names: Vec<&str> = load("us-west-1").zones().iter().map(|z| z.name).collect();
    assert_eq!(names, ["us-west-1b", "us-west-1c"]);
}

#[test]
fn unknown_region_lists_valid_ones() {
    let err = Catalog::load("mars-north-1", &NodeClassSettings::default()).unwrap_err();
    let text = err.to_string();
    assert!(text.contains("mars-north-1"), "{text}");
    assert!(text.contains("us-east-1, us-east-2"), "{text}");
    assert!(matches!(err, CatalogError::UnknownRegion { ref valid, .. } if valid.len() == 34));
}

/// Every region loads; in every catalog, types with ≥ 1 GiB of memory have
/// 0 < allocatable < capacity for CPU and memory, every offering is priced,
/// spot never costs more than on-demand, and the price order is sorted.
#[test]
fn every_region_is_consistent() {
    for region in Catalog::regions() {
        let catalog = load(region);
        assert!(catalog.len() > 100, "{region}: {catalog}");
        assert!(!catalog.zones().is_empty(), "{region}");
        for t in catalog.instance_types() {
            if t.memory_mib() >= 1024 {
                for (have, cap) in [
                    (t.allocatable.cpu_millis(), t.capacity.cpu_millis()),
                    (t.allocatable.memory_bytes(), t.capacity.memory_bytes()),
                ] {
                    assert!(0 < have && have < cap, "{region} {}", t.name());
                }
            }
            assert_eq!(t.offerings.len() % catalog.zones().len(), 0);
            for o in &t.offerings {
                assert!(o.price > Price::ZERO, "{region} {}", t.name());
                match o.capacity_type {
                    CapacityType::OnDemand => assert_eq!(o.price, t.on_demand_price),
                    CapacityType::Spot => {
                        assert!(o.price <= t.on_demand_price, "{region} {}", t.name())
                    }
                    CapacityType::Reserved => panic!("the snapshot has no reservations"),
                }
            }
        }
        let order: Vec<(Price, &str)> = catalog
            .by_on_demand_price()
            .map(|t| (t.on_demand_price, t.name()))
            .collect();
        assert!(order.windows(2).all(|w| w[0] < w[1]), "{region}");
        assert_eq!(order.len(), catalog.len());
    }
}

/// Spot is offered only where the advisor prices it and EC2 sells it:
/// GovCloud has no advisor data; hpc7g is On-Demand only.
#[test]
fn spot_offerings_follow_usage_classes_and_advisor() {
    let gov = load("us-gov-west-1");
    assert!(
        gov.instance_types()
            .iter()
            .all(|t| t.cheapest(CapacityType::Spot).is_none())
    );
    assert!(gov.get("m5.large").is_some());
    let use1 = load("us-east-1");
    if let Some(hpc) = use1.get("hpc7g.16xlarge") {
        assert!(hpc.cheapest(CapacityType::Spot).is_none());
    }
    let with_spot = use1
        .instance_types()
        .iter()
        .filter(|t| t.cheapest(CapacityType::Spot).is_some())
        .count();
    assert!(with_spot > 500, "{with_spot}");
}

/// A GPU type's labels and capacity.
#[test]
fn gpu_type_labels() {
    let catalog = load("us-east-1");
    let g5 = catalog.get("g5.xlarge").unwrap();
    assert_eq!(g5.label(labels::LABEL_INSTANCE_GPU_NAME), Some("a10g"));
    assert_eq!(
        g5.label(labels::LABEL_INSTANCE_GPU_MANUFACTURER),
        Some("nvidia")
    );
    assert_eq!(g5.label(labels::LABEL_INSTANCE_GPU_COUNT), Some("1"));
    assert_eq!(g5.label(labels::LABEL_INSTANCE_CATEGORY), Some("g"));
    assert_eq!(
        g5.capacity
            .get(crate::kube::resources::ResourceKind::NvidiaGpu),
        1
    );
    let m5 = catalog.get("m5.large").unwrap();
    assert_eq!(m5.label(labels::LABEL_INSTANCE_GPU_NAME), None);
}

/// Windows catalogs drop arm64 types and label the rest windows; the
/// settings reach allocatable.
#[test]
fn windows_catalog() {
    let settings = NodeClassSettings {
        ami_family: AmiFamily::Windows2022,
        ..NodeClassSettings::default()
    };
    let catalog = Catalog::load("eu-west-1", &settings).unwrap();
    assert!(
        catalog
            .instance_types()
            .iter()
            .all(|t| t.arch() == Arch::Amd64)
    );
    let m5 = catalog.get("m5.large").unwrap();
    assert_eq!(m5.label(labels::LABEL_OS), Some("windows"));
    assert_eq!(m5.capacity.pods(), 110);
    assert_eq!(m5.capacity.ephemeral_bytes(), 50 * GIB);
    assert!(load("eu-west-1").get("m6g.large").is_some());
}

/// Loading is deterministic.
#[test]
fn loads_identically_twice() {
    assert_eq!(load("ap-northeast-1"), load("ap-northeast-1"));
}

/// The spot rule on real data, derived by hand: us-east-1 m5.large has
/// On-Demand 0.096, advisor savings 66 % (band 3), and 2022 samples
/// 0.0424 (use1-az2) and 0.0416 (use1-az4). Regional = 0.096 × 0.34 =
/// 0.03264; az2 = 0.03264 × 0.0424 × 2 / 0.084 = 0.0329510…; az4 =
/// 0.03264 × 0.0416 × 2 / 0.084 = 0.0323291…; unsampled zones 0.03264.
#[test]
fn m5_large_spot_prices_by_zone() {
    let catalog = load("us-east-1");
    let m5 = catalog.get("m5.large").unwrap();
    let spot: Vec<(&str, &str, i64)> = m5
        .offerings
        .iter()
        .filter(|o| o.capacity_type == CapacityType::Spot)
        .map(|o| (o.zone, o.zone_id, o.price.micros()))
        .collect();
    assert_eq!(
        spot,
        [
            ("us-east-1a", "use1-az1", 32_640),
            ("us-east-1b", "use1-az2", 32_951),
            ("us-east-1c", "use1-az3", 32_640),
            ("us-east-1d", "use1-az4", 32_329),
            ("us-east-1e", "use1-az5", 32_640),
            ("us-east-1f", "use1-az6", 32_640),
        ]
    );
    let band = m5.cheapest(CapacityType::Spot).unwrap().interruption_band;
    assert_eq!(band.map(|b| b.label()), Some("15-20%"));
}

/// Restricting to zones equals marking every outside offering unavailable
/// one by one, requirements included.
#[test]
fn restrict_to_zones_matches_marking_offerings_one_by_one() {
    let full = Catalog::load("us-east-1", &NodeClassSettings::default()).unwrap();
    let zones = vec!["us-east-1a".to_string(), "us-east-1c".to_string()];
    let mut batch = full.clone();
    batch.restrict_to_zones(&zones);
    let mut single = full.clone();
    for t in full.instance_types() {
        for o in &t.offerings {
            if !zones.iter().any(|z| z == o.zone) {
                single.mark_unavailable(t.name(), o.zone, o.capacity_type);
            }
        }
    }
    assert_eq!(batch, single);
    let m5 = batch.get("m5.large").unwrap();
    for o in &m5.offerings {
        let allowed = o.zone == "us-east-1a" || o.zone == "us-east-1c";
        assert_eq!(o.available, allowed, "{}", o.zone);
    }
}

/// The kept requirements, which availability changes update in their
/// zone, zone id and capacity type only, equal every type's requirements
/// made afresh: after restricting to zones (none left as well), after
/// marking offerings unavailable one by one, for a Linux and a Windows
/// AMI family.
#[test]
fn kept_requirements_equal_fresh_ones_after_availability_changes() {
    let assert_fresh = |catalog: &Catalog, what: &str| {
        for (kept, t) in catalog
            .type_requirements()
            .iter()
            .zip(catalog.instance_types())
        {
            assert_eq!(*kept, t.requirements(), "{what}: {}", t.name());
        }
    };
    for ami_family in [AmiFamily::Al2023, AmiFamily::Windows2022] {
        let settings = NodeClassSettings {
            ami_family,
            ..NodeClassSettings::default()
        };
        let full = Catalog::load("us-east-1", &settings).unwrap();
        let mut restricted = full.clone();
        restricted.restrict_to_zones(&["us-east-1b".to_string()]);
        assert_ne!(restricted.type_requirements(), full.type_requirements());
        assert_fresh(&restricted, "one zone");
        restricted.restrict_to_zones(&[]);
        assert_fresh(&restricted, "no zone");
        let mut marked = full.clone();
        for t in full.instance_types().iter().step_by(7) {
            for o in t.offerings.iter().step_by(2) {
                assert!(marked.mark_unavailable(t.name(), o.zone, o.capacity_type));
            }
        }
        assert_ne!(marked.type_requirements(), full.type_requirements());
        assert_fresh(&marked, "marked");
    }
}

/// The kept cheapest prices follow availability and spot price changes:
/// m5.large spot is cheapest in us-east-1d (0.032329, see above), then in
/// 1a once 1d is unavailable, then at a new 1a price; on-demand stays 0.096
/// until every on-demand offering is gone.
#[test]
fn cheapest_price_follows_offering_changes() {
    let mut catalog = load("us-east-1");
    let index = catalog
        .instance_types()
        .iter()
        .position(|t| t.name() == "m5.large")
        .unwrap();
    let spot = |c: &Catalog| c.cheapest_price(index, CapacityType::Spot);
    let on_demand = |c: &Catalog| c.cheapest_price(index, CapacityType::OnDemand);
    assert_eq!(spot(&catalog), Some(Price::from_micros(32_329)));
    assert_eq!(catalog.cheapest_price(index, CapacityType::Reserved), None);
    assert!(catalog.mark_unavailable("m5.large", "us-east-1d", CapacityType::Spot));
    assert_eq!(spot(&catalog), Some(Price::from_micros(32_640)));
    assert!(catalog.set_offering_price(
        "m5.large",
        "us-east-1a",
        CapacityType::Spot,
        Price::from_micros(30_000)
    ));
    assert_eq!(spot(&catalog), Some(Price::from_micros(30_000)));
    assert_eq!(on_demand(&catalog), Some(Price::from_micros(96_000)));
    catalog.restrict_to_zones(&[]);
    assert_eq!(on_demand(&catalog), None);
    assert_eq!(spot(&catalog), None);
    // Every type agrees with a walk of its offerings.
    let fresh = load("us-east-1");
    for (i, t) in fresh.instance_types().iter().enumerate() {
        for ct in [CapacityType::OnDemand, CapacityType::Spot] {
            assert_eq!(
                fresh.cheapest_price(i, ct),
                t.cheapest(ct).map(|o| o.price),
                "{}",
                t.name()
            );
        }
    }
}
