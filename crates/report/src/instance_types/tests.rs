//! Tests of the instance-types listing and its writers.

use super::*;
use crate::nodepools::load_str;

fn csv_rows(listing: &Listing) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    write_csv(listing, &mut out).unwrap();
    let mut reader = csv::Reader::from_reader(out.as_slice());
    let header: Vec<String> = reader.headers().unwrap().iter().map(String::from).collect();
    assert_eq!(&header[..CSV_HEADER.len()], CSV_HEADER);
    reader
        .records()
        .map(|r| r.unwrap().iter().map(String::from).collect())
        .collect()
}

/// The CSV contract: the leading columns in order, and m5.large's values
/// from the reference (aws types.go worked example, Karpenter's 2026-07
/// us-east-1 price table).
#[test]
fn csv_row_for_m5_large() {
    let listing = catalog_listing("us-east-1", SortBy::Name).unwrap();
    let rows = csv_rows(&listing);
    let m5 = rows.iter().find(|r| r[0] == "m5.large").unwrap();
    assert_eq!(
        &m5[..8],
        [
            "m5.large", "2", "8192", "amd64", "1930", "6903", "29", "0.096"
        ]
    );
    let spot: f64 = m5[8].parse().unwrap();
    assert!(spot > 0.0 && spot < 0.096, "{spot}");
    assert_eq!(rows.len(), listing.instance_types.len());
}

/// A NodePool that allows only on-demand lists no spot price, and its
/// summary accounts for every type of the catalog.
#[test]
fn nodepool_listing_restricts_prices_and_counts_exclusions() {
    let manifests = load_str(
        "pools.yaml",
        "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: od}\nspec:\n  template:\n    spec:\n      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}\n      requirements:\n      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}\n      - {key: karpenter.k8s.aws/instance-family, operator: In, values: [m5]}\n---\napiVersion: karpenter.k8s.aws/v1\nkind: EC2NodeClass\nmetadata: {name: default}\nspec:\n  amiFamily: AL2023\n  kubelet: {maxPods: 20}\n",
    )
    .unwrap();
    let listing = nodepool_listing("eu-west-1", &manifests, SortBy::Price).unwrap();
    let summary = &listing.nodepools[0];
    assert!(summary.node_class_found);
    let excluded: usize = summary.exclusions.iter().map(|e| e.first).sum();
    assert_eq!(summary.allowed + excluded, summary.catalog_types);
    assert!(!listing.instance_types.is_empty());
    for row in &listing.instance_types {
        assert_eq!(row.family, "m5");
        assert_eq!(row.spot_usd_per_hour_min, None);
        assert_eq!(row.max_pods, 20, "the EC2NodeClass maxPods applies");
        assert_eq!(row.nodepool.as_deref(), Some("od"));
    }
    let prices: Vec<Price> = listing
        .instance_types
        .iter()
        .map(|r| r.on_demand.unwrap())
        .collect();
    assert!(prices.windows(2).all(|w| w[0] <= w[1]), "sorted by price");
    let mut text = Vec::new();
    write_nodepool_summaries(&listing, &mut text).unwrap();
    let text = String::from_utf8(text).unwrap();
    assert!(
        text.starts_with(&format!(
            "NodePool od: {} of {} instance types in eu-west-1 are allowed\n",
            summary.allowed, summary.catalog_types
        )),
        "{text}"
    );
    assert!(
        text.contains("excluded by karpenter.k8s.aws/instance-family In [m5]"),
        "{text}"
    );
}

/// A NodePool whose EC2NodeClass is missing still lists, with a note.
#[test]
fn missing_node_class_is_noted() {
    let manifests = load_str(
        "pool.yaml",
        "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: p}\nspec:\n  template:\n    spec:\n      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: absent}\n      requirements: []\n",
    )
    .unwrap();
    let listing = nodepool_listing("us-east-1", &manifests, SortBy::Name).unwrap();
    assert!(!listing.nodepools[0].node_class_found);
    assert_eq!(listing.notes.len(), 1);
    assert!(listing.notes[0].contains("\"absent\""));
    assert_eq!(
        listing.nodepools[0].allowed,
        listing.nodepools[0].catalog_types
    );
}

#[test]
fn json_is_deterministic_and_parses() {
    let a = catalog_listing("ap-south-1", SortBy::Price).unwrap();
    let mut first = Vec::new();
    let mut second = Vec::new();
    write_json(&a, &mut first).unwrap();
    write_json(
        &catalog_listing("ap-south-1", SortBy::Price).unwrap(),
        &mut second,
    )
    .unwrap();
    assert_eq!(first, second);
    let value: serde_json::Value = serde_json::from_slice(&first).unwrap();
    assert_eq!(value["region"], "ap-south-1");
    assert_eq!(
        value["instance_types"].as_array().unwrap().len(),
        a.instance_types.len()
    );
}
