//! Instance-type requirements over the bundled catalog.

use crate::BundledCatalog;
use crate::cloud::{Catalog, nodeclass::NodeClassSettings};
use crate::kube::labels::*;
use crate::kube::requirements::{Operator, Requirement, Requirements};

fn req(key: &str, op: Operator, values: &[&str]) -> Requirements {
    let values: Vec<String> = values.iter().map(|v| v.to_string()).collect();
    [Requirement::new(key, op, &values).unwrap()]
        .into_iter()
        .collect()
}

/// aws: types.go `computeRequirements` sets GPU keys to DoesNotExist on a
/// CPU-only type, so a GPU-name requirement excludes it.
#[test]
fn missing_gpu_labels_are_does_not_exist() {
    let catalog = Catalog::load("us-east-1", &NodeClassSettings::default()).unwrap();
    let m5 = catalog.get("m5.large").unwrap().requirements();
    let g5 = catalog.get("g5.xlarge").unwrap().requirements();
    let wants_a10g = req(LABEL_INSTANCE_GPU_NAME, Operator::In, &["a10g"]);
    assert!(!m5.is_intersecting(&wants_a10g));
    assert!(g5.is_intersecting(&wants_a10g));
    let no_gpu = req(LABEL_INSTANCE_GPU_NAME, Operator::DoesNotExist, &[]);
    assert!(m5.is_intersecting(&no_gpu));
    assert!(!g5.is_intersecting(&no_gpu));
    // A custom key neither side defines is not compared.
    assert!(m5.is_intersecting(&req("team", Operator::In, &["a"])));
}

/// Zone and capacity type come from the available offerings only.
#[test]
fn zones_and_capacity_types_follow_available_offerings() {
    let catalog = Catalog::load("eu-west-1", &NodeClassSettings::default()).unwrap();
    let mut m5 = catalog.get("m5.large").unwrap().clone();
    for o in &mut m5.offerings {
        o.available = o.zone != "eu-west-1a";
    }
    let reqs = m5.requirements();
    let zone = reqs.get(LABEL_TOPOLOGY_ZONE).unwrap();
    assert!(!zone.has("eu-west-1a"));
    assert!(zone.has("eu-west-1b") && zone.has("eu-west-1c"));
    assert!(reqs.get(LABEL_CAPACITY_TYPE).unwrap().has("spot"));
    let spot_in_b = req(LABEL_CAPACITY_TYPE, Operator::In, &["spot"]);
    let spot_b = m5
        .offerings
        .iter()
        .find(|o| o.zone == "eu-west-1b" && o.capacity_type.label() == "spot")
        .unwrap();
    assert!(spot_b.is_compatible(&spot_in_b));
    let od_b = m5
        .offerings
        .iter()
        .find(|o| o.zone == "eu-west-1b" && o.capacity_type.label() == "on-demand")
        .unwrap();
    assert!(!od_b.is_compatible(&spot_in_b));
}
