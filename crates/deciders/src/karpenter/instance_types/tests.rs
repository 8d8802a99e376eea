//! Tests of the NodePool instance-type filter.

use super::*;
use crate::cloud::CapacityType;
use crate::cloud::nodeclass::NodeClassSettings;
use crate::kube::labels::{LABEL_ARCH, LABEL_INSTANCE_CATEGORY, LABEL_INSTANCE_GENERATION};
use karpsim_catalog::BundledCatalog;
use karpsim_input::nodepools::load_str;

fn nodepool_with(requirements: &str) -> NodePool {
    let yaml = format!(
        "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {{name: test}}\nspec:\n  template:\n    spec:\n      nodeClassRef: {{group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}}\n      requirements:\n{requirements}"
    );
    let mut manifests = load_str("pool.yaml", &yaml).unwrap_or_else(|e| panic!("{e}"));
    manifests.nodepools.remove(0)
}

fn catalog(region: &str) -> Catalog {
    Catalog::load(region, &NodeClassSettings::default()).unwrap()
}

fn names(catalog: &Catalog, result: &NodePoolInstanceTypes) -> Vec<String> {
    result
        .allowed
        .iter()
        .map(|&i| catalog.instance_types()[i].name().to_string())
        .collect()
}

/// The widely copied example (category In [c m r], generation Gt 4): the
/// allowed set is exactly the types whose labels satisfy both, counted here
/// independently from the labels, and every other type is attributed to
/// exactly one first cause.
#[test]
fn category_and_generation_filter_matches_labels() {
    let catalog = catalog("us-east-1");
    let pool = nodepool_with(
        "      - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m, r]}\n      - {key: karpenter.k8s.aws/instance-generation, operator: Gt, values: [\"4\"]}\n",
    );
    let result = filter_instance_types(&pool, &catalog);
    let expected: Vec<String> = catalog
        .instance_types()
        .iter()
        .filter(|t| {
            matches!(t.label(LABEL_INSTANCE_CATEGORY), Some("c" | "m" | "r"))
                && t.label(LABEL_INSTANCE_GENERATION)
                    .and_then(|g| g.parse::<i64>().ok())
                    .is_some_and(|g| g > 4)
        })
        .map(|t| t.name().to_string())
        .collect();
    assert!(expected.len() > 100, "{}", expected.len());
    assert_eq!(names(&catalog, &result), expected);
    let first_sum: usize = result.exclusions.iter().map(|e| e.first).sum();
    assert_eq!(first_sum, catalog.len() - expected.len());
    assert_eq!(result.exclusions.len(), 2);
    assert!(
        result.exclusions[0]
            .cause
            .starts_with(LABEL_INSTANCE_CATEGORY)
    );
    assert!(
        result.exclusions[1]
            .cause
            .starts_with(LABEL_INSTANCE_GENERATION)
    );
    // m4.large fails both; it is counted first under category.
    assert!(result.exclusions[1].total > result.exclusions[1].first);
}

/// core: provisioning suite "should not schedule if no instance type matches
/// the NodePool requirements": incompatible requirements leave nothing, and
/// the report names the key that removed the last candidates.
#[test]
fn contradictory_requirements_allow_nothing() {
    let catalog = catalog("eu-west-1");
    let pool = nodepool_with(
        "      - {key: kubernetes.io/arch, operator: In, values: [arm64]}\n      - {key: karpenter.k8s.aws/instance-family, operator: In, values: [m5]}\n",
    );
    let result = filter_instance_types(&pool, &catalog);
    assert!(result.allowed.is_empty());
    let arch = result
        .exclusions
        .iter()
        .find(|e| e.cause.starts_with(LABEL_ARCH))
        .unwrap();
    let family = result
        .exclusions
        .iter()
        .find(|e| e.cause.contains("instance-family"))
        .unwrap();
    // The family check rejects every type but the m5s; the arch check
    // rejects every amd64 type, so no m5 survives either.
    assert_eq!(family.total, catalog.len() - count_family(&catalog, "m5"));
    let amd64 = catalog
        .instance_types()
        .iter()
        .filter(|t| t.arch().label() == "amd64")
        .count();
    assert_eq!(arch.total, amd64);
    let first_sum: usize = result.exclusions.iter().map(|e| e.first).sum();
    assert_eq!(first_sum, catalog.len());
}

fn count_family(catalog: &Catalog, family: &str) -> usize {
    catalog
        .instance_types()
        .iter()
        .filter(|t| t.family() == family)
        .count()
}

/// core: scheduling `SatisfiesMinValues` under the default Strict policy: a
/// NodePool whose compatible types offer fewer distinct values than
/// `minValues` provides no instance types at all.
#[test]
fn unmet_min_values_drop_every_type() {
    let catalog = catalog("us-east-1");
    let pool = nodepool_with(
        "      - {key: karpenter.k8s.aws/instance-family, operator: In, values: [m5, c5], minValues: 2}\n      - {key: karpenter.k8s.aws/instance-size, operator: In, values: [large]}\n      - {key: node.kubernetes.io/instance-type, operator: Exists, minValues: 3}\n",
    );
    let result = filter_instance_types(&pool, &catalog);
    assert_eq!(result.compatible, 2, "m5.large and c5.large");
    assert!(result.allowed.is_empty());
    assert_eq!(
        result.min_values_shortfalls,
        vec![MinValuesShortfall {
            key: LABEL_INSTANCE_TYPE.to_string(),
            required: 3,
            available: 2,
        }]
    );
    let relaxed = nodepool_with(
        "      - {key: karpenter.k8s.aws/instance-family, operator: In, values: [m5, c5], minValues: 2}\n      - {key: karpenter.k8s.aws/instance-size, operator: In, values: [large]}\n",
    );
    let result = filter_instance_types(&relaxed, &catalog);
    assert_eq!(names(&catalog, &result), ["c5.large", "m5.large"]);
    assert!(result.min_values_shortfalls.is_empty());
}

/// core: provisioning "should schedule only on available offerings": a type
/// whose every offering in the allowed zone × capacity type is unavailable is
/// excluded by the offering check, not by a label requirement.
#[test]
fn offerings_must_be_available_in_the_allowed_zone_and_capacity_type() {
    let mut catalog = catalog("us-east-1");
    let pool = nodepool_with(
        "      - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.large, m5.xlarge]}\n      - {key: karpenter.sh/capacity-type, operator: In, values: [spot]}\n      - {key: topology.kubernetes.io/zone, operator: In, values: [us-east-1a]}\n",
    );
    let before = filter_instance_types(&pool, &catalog);
    assert_eq!(names(&catalog, &before), ["m5.large", "m5.xlarge"]);
    assert!(catalog.mark_unavailable("m5.xlarge", "us-east-1a", CapacityType::Spot));
    let after = filter_instance_types(&pool, &catalog);
    assert_eq!(names(&catalog, &after), ["m5.large"]);
    let offering = after.exclusions.last().unwrap();
    assert!(
        offering.cause.starts_with("no available offering"),
        "{}",
        offering.cause
    );
    assert_eq!(offering.first, 1);
}

fn unknown_messages(
    pool: &NodePool,
    catalog: &Catalog,
    zones: &[&str],
) -> Vec<(usize, usize, String)> {
    let zones: Vec<String> = zones.iter().map(|z| z.to_string()).collect();
    unknown_in_values(pool, catalog, &zones)
        .into_iter()
        .map(|u| (u.requirement, u.value, u.message))
        .collect()
}

/// An `In` value of a well-known label that no type or offering of the
/// region has (Karpenter accepts it: only capacity type and tenancy have
/// fixed values, core labels.go `WellKnownValuesForRequirements`) is named,
/// with the nearest catalog values when one is a likely typo.
#[test]
fn in_values_missing_from_the_catalog_are_named() {
    let catalog = catalog("us-east-1");
    let pool = nodepool_with(
        "      - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.large, c5.8xlarge]}\n      - {key: karpenter.k8s.aws/instance-family, operator: In, values: [m5, m55]}\n      - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, q]}\n      - {key: karpenter.k8s.aws/instance-cpu, operator: In, values: [\"2\", \"3\"]}\n      - {key: topology.kubernetes.io/zone, operator: In, values: [us-east-1a, us-east-1z, us-east-1f]}\n      - {key: kubernetes.io/arch, operator: In, values: [amd64, x86_64]}\n      - {key: karpenter.k8s.aws/instance-size, operator: NotIn, values: [huge]}\n      - {key: example.com/team, operator: In, values: [nobody]}\n",
    );
    let got = unknown_messages(&pool, &catalog, &["us-east-1a", "us-east-1b"]);
    let text: Vec<String> = got.iter().map(|(_, _, m)| m.clone()).collect();
    assert_eq!(
        got.iter().map(|(r, v, _)| (*r, *v)).collect::<Vec<_>>(),
        [(0, 1), (1, 1), (2, 1), (3, 1), (4, 1), (4, 2), (5, 1)],
        "{text:#?}"
    );
    assert!(
        text[0].starts_with("c5.8xlarge does not exist in us-east-1 (did you mean c5.")
            && text[0].contains("c5.9xlarge"),
        "{}",
        text[0]
    );
    assert!(
        text[1].starts_with(
            "no instance type in us-east-1 has karpenter.k8s.aws/instance-family=m55 (did you mean "
        ) && text[1].contains("m5a"),
        "{}",
        text[1]
    );
    assert!(
        text[2]
            .starts_with("no instance type in us-east-1 has karpenter.k8s.aws/instance-category=q")
    );
    // Numbers get no hint.
    assert_eq!(
        text[3],
        "no instance type in us-east-1 has karpenter.k8s.aws/instance-cpu=3"
    );
    assert!(
        text[4].starts_with("zone us-east-1z does not exist in us-east-1"),
        "{}",
        text[4]
    );
    assert_eq!(
        text[5],
        "zone us-east-1f is not one of the scenario's zones (us-east-1a, us-east-1b)"
    );
    assert!(text[6].starts_with("no instance type in us-east-1 has kubernetes.io/arch=x86_64"));
}

/// Capacity types come from the offerings, and `reserved` from capacity
/// reservations, which the scenario adds per variant: it is never named,
/// a misspelling of it is.
#[test]
fn capacity_types_without_offerings_are_named() {
    let catalog = catalog("us-east-1");
    let pool = nodepool_with(
        "      - {key: karpenter.sh/capacity-type, operator: In, values: [spot, on-demand, reserved, reserve]}\n",
    );
    let messages = unknown_messages(&pool, &catalog, &[]);
    assert_eq!(messages.len(), 1, "{messages:?}");
    assert_eq!((messages[0].0, messages[0].1), (0, 3));
    assert!(
        messages[0]
            .2
            .starts_with("no instance type in us-east-1 is offered as reserve"),
        "{messages:?}"
    );
    let fine = nodepool_with(
        "      - {key: karpenter.sh/capacity-type, operator: In, values: [spot, on-demand]}\n      - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.large]}\n",
    );
    assert!(unknown_messages(&fine, &catalog, &["us-east-1a"]).is_empty());
}

#[test]
fn edit_distance_counts_single_edits() {
    assert_eq!(edit_distance("c5.8xlarge", "c5.9xlarge"), 1);
    assert_eq!(edit_distance("c5.8xlarge", "c5.xlarge"), 1);
    assert_eq!(edit_distance("", "abc"), 3);
    assert_eq!(edit_distance("same", "same"), 0);
}
