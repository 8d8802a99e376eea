//! Which instance types a NodePool allows, and why the others are excluded.
//!
//! This is the template pre-filter Karpenter runs once per NodePool before
//! scheduling (core: pkg/controllers/provisioning/provisioner.go
//! `NewScheduler`, scheduling/nodeclaimtemplate.go): the template's
//! requirements are the NodePool requirements ∩ its template labels ∩
//! `karpenter.sh/nodepool In [name]`; a type is kept iff its requirements
//! intersect the template's and it has an available offering compatible with
//! them; and under the default `Strict` minValues policy a NodePool whose
//! surviving types cannot satisfy a `minValues` gets no types at all.
//!
//! Karpenter only logs "no compatible instance types" here; karpsim also
//! attributes every excluded type to the first requirement that rejects it,
//! which is what a user needs to fix a NodePool that leaves pods pending,
//! and names the `In` values of well-known labels that nothing in the
//! catalog has (`unknown_in_values`), typos mostly.

use std::collections::BTreeSet;

use crate::cloud::{Catalog, InstanceType};
use crate::kube::labels::{LABEL_CAPACITY_TYPE, LABEL_NODEPOOL, LABEL_TOPOLOGY_ZONE};
use crate::kube::labels::{
    LABEL_INSTANCE_TYPE, LABEL_TOPOLOGY_ZONE_ID, is_well_known_label, normalize_label_key,
};
use crate::kube::requirements::{Operator, Requirement, Requirements};
use crate::nodepool::NodePool;
use crate::suggest::levenshtein as edit_distance;

/// The requirements of a NodePool's NodeClaim template.
pub fn template_requirements(pool: &NodePool) -> Requirements {
    let mut reqs = pool.requirement_set.clone();
    for (key, value) in &pool.labels {
        reqs.add(Requirement::in_values(key, [value.as_str()]));
    }
    reqs.add(Requirement::in_values(LABEL_NODEPOOL, [pool.name.as_str()]));
    reqs
}

/// What rejected an instance type first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExclusionCount {
    /// The requirement, as a user reads it (`karpenter.k8s.aws/instance-category In [c m r]`),
    /// or `no available offering …` for the joint zone × capacity-type check.
    pub cause: String,
    /// Types for which this was the first failing check.
    pub first: usize,
    /// Types that fail this check at all.
    pub total: usize,
}

/// A `minValues` the surviving types cannot meet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MinValuesShortfall {
    /// The label key.
    pub key: String,
    /// Required distinct values.
    pub required: u32,
    /// Distinct values the compatible types offer.
    pub available: usize,
}

/// The outcome of filtering a catalog with one NodePool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodePoolInstanceTypes {
    /// Indices into `catalog.instance_types()` of the allowed types, in
    /// catalog (name) order. Empty when a minValues shortfall applies.
    pub allowed: Vec<usize>,
    /// Types compatible with the requirements before the minValues check.
    pub compatible: usize,
    /// Exclusions, one row per check that rejected at least one type, in
    /// requirement order.
    pub exclusions: Vec<ExclusionCount>,
    /// minValues that cannot be met (Karpenter's Strict policy then drops
    /// every type of the NodePool).
    pub min_values_shortfalls: Vec<MinValuesShortfall>,
}

/// Filters `catalog` with `pool`'s template, as Karpenter does before it
/// schedules anything.
pub fn filter_instance_types(pool: &NodePool, catalog: &Catalog) -> NodePoolInstanceTypes {
    let template = template_requirements(pool);
    let checks: Vec<&Requirement> = template.iter().collect();
    let offering_cause = format!(
        "no available offering in the allowed {} × {}",
        LABEL_TOPOLOGY_ZONE, LABEL_CAPACITY_TYPE
    );
    let mut first = vec![0usize; checks.len() + 1];
    let mut total = vec![0usize; checks.len() + 1];
    let mut compatible = Vec::new();
    for (index, instance_type) in catalog.instance_types().iter().enumerate() {
        let type_reqs = &catalog.type_requirements()[index];
        let mut failed_first = None;
        for (i, check) in checks.iter().enumerate() {
            let rejects = type_reqs
                .get(check.key())
                .is_some_and(|own| !own.has_intersection(check));
            if rejects {
                total[i] += 1;
                failed_first.get_or_insert(i);
            }
        }
        if !instance_type
            .offerings
            .iter()
            .any(|o| o.available && o.is_compatible(&template))
        {
            total[checks.len()] += 1;
            failed_first.get_or_insert(checks.len());
        }
        match failed_first {
            Some(i) => first[i] += 1,
            None => compatible.push(index),
        }
    }
    let exclusions = (0..=checks.len())
        .filter(|&i| total[i] > 0)
        .map(|i| ExclusionCount {
            cause: checks
                .get(i)
                .map_or_else(|| offering_cause.clone(), |r| r.to_string()),
            first: first[i],
            total: total[i],
        })
        .collect();
    let min_values_shortfalls = min_values_shortfalls(&template, catalog, &compatible);
    NodePoolInstanceTypes {
        compatible: compatible.len(),
        allowed: if min_values_shortfalls.is_empty() {
            compatible
        } else {
            Vec::new()
        },
        exclusions,
        min_values_shortfalls,
    }
}

/// The template's `minValues` that the compatible types cannot meet
/// (core: scheduling `InstanceTypes.SatisfiesMinValues`): for each key with
/// minValues, the distinct values the types offer within the requirement.
fn min_values_shortfalls(
    template: &Requirements,
    catalog: &Catalog,
    compatible: &[usize],
) -> Vec<MinValuesShortfall> {
    let mut out = Vec::new();
    for requirement in template.iter() {
        let Some(required) = requirement.min_values() else {
            continue;
        };
        let mut values = BTreeSet::new();
        for &index in compatible {
            let instance_type = &catalog.instance_types()[index];
            for value in values_of(instance_type, requirement.key(), template) {
                if requirement.has(&value) {
                    values.insert(value);
                }
            }
        }
        if values.len() < required as usize {
            out.push(MinValuesShortfall {
                key: requirement.key().to_string(),
                required,
                available: values.len(),
            });
        }
    }
    out
}

/// The values an instance type has for `key`: its label, or for the
/// offering dimensions the values of its compatible available offerings.
fn values_of(instance_type: &InstanceType, key: &str, template: &Requirements) -> Vec<String> {
    let offerings = || {
        instance_type
            .offerings
            .iter()
            .filter(|o| o.available && o.is_compatible(template))
    };
    match key {
        LABEL_INSTANCE_TYPE => vec![instance_type.name().to_string()],
        LABEL_TOPOLOGY_ZONE => offerings().map(|o| o.zone.to_string()).collect(),
        LABEL_TOPOLOGY_ZONE_ID => offerings().map(|o| o.zone_id.to_string()).collect(),
        LABEL_CAPACITY_TYPE => offerings()
            .map(|o| o.capacity_type.label().to_string())
            .collect(),
        _ => instance_type
            .label(key)
            .map(|v| vec![v.to_string()])
            .unwrap_or_default(),
    }
}

/// An `In` value of a well-known label that nothing in the catalog has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownValue {
    /// Index into the pool's `requirements`.
    pub requirement: usize,
    /// Index into that requirement's values.
    pub value: usize,
    /// What is wrong, e.g. `c5.8xlarge does not exist in us-east-1`.
    pub message: String,
}

/// The `In` values of well-known labels (instance type, family, category,
/// generation, size, zone, zone id, architecture, capacity type, …) that
/// no instance type or offering of `catalog` has. Karpenter accepts them
/// (only capacity type and tenancy have a fixed value set), but such a
/// value can never be chosen: it is most often a typo. A zone of the
/// region that is not among `zones`, the scenario's, is reported too.
/// Keys the catalog has no value for at all are left alone.
pub fn unknown_in_values(
    pool: &NodePool,
    catalog: &Catalog,
    zones: &[String],
) -> Vec<UnknownValue> {
    let region = catalog.region();
    let mut out = Vec::new();
    for (r, requirement) in pool.requirements.iter().enumerate() {
        let expression = &requirement.expression;
        let key = normalize_label_key(&expression.key);
        if expression.operator != Operator::In || !is_well_known_label(key) || key == LABEL_NODEPOOL
        {
            continue;
        }
        let known = catalog_values(catalog, key);
        if known.is_empty() {
            continue;
        }
        for (v, value) in expression.values.iter().enumerate() {
            let message = if known.contains(value.as_str()) {
                if key != LABEL_TOPOLOGY_ZONE || zones.is_empty() || zones.contains(value) {
                    continue;
                }
                format!(
                    "zone {value} is not one of the scenario's zones ({})",
                    zones.join(", ")
                )
            } else {
                let what = match key {
                    LABEL_INSTANCE_TYPE => format!("{value} does not exist in {region}"),
                    LABEL_TOPOLOGY_ZONE => format!("zone {value} does not exist in {region}"),
                    LABEL_CAPACITY_TYPE => {
                        format!("no instance type in {region} is offered as {value}")
                    }
                    _ => format!("no instance type in {region} has {key}={value}"),
                };
                format!("{what}{}", did_you_mean(value, &known))
            };
            out.push(UnknownValue {
                requirement: r,
                value: v,
                message,
            });
        }
    }
    out
}

/// Every value the catalog has for `key`: the type's own labels, or for
/// the offering dimensions the region's zones, zone ids and capacity types.
fn catalog_values<'c>(catalog: &'c Catalog, key: &str) -> BTreeSet<&'c str> {
    let types = catalog.instance_types().iter();
    match key {
        LABEL_INSTANCE_TYPE => types.map(InstanceType::name).collect(),
        LABEL_TOPOLOGY_ZONE => types
            .flat_map(|t| t.offerings.iter().map(|o| o.zone))
            .collect(),
        LABEL_TOPOLOGY_ZONE_ID => types
            .flat_map(|t| t.offerings.iter().map(|o| o.zone_id))
            .collect(),
        // `reserved` comes from capacity reservations, not the region.
        LABEL_CAPACITY_TYPE => types
            .flat_map(|t| t.offerings.iter().map(|o| o.capacity_type.label()))
            .chain([crate::cloud::CapacityType::Reserved.label()])
            .collect(),
        _ => types.filter_map(|t| t.label(key)).collect(),
    }
}

/// ` (did you mean …?)` with the up to three known values nearest to a
/// misspelt one (at most two edits), or nothing; numbers get no hint, as
/// the nearest number is rarely the one meant.
fn did_you_mean(value: &str, known: &BTreeSet<&str>) -> String {
    if value.bytes().all(|b| b.is_ascii_digit()) {
        return String::new();
    }
    // Nearest first; among equals the longest shared prefix and the
    // closest length (c5.8xlarge: c5.9xlarge before c3.8xlarge).
    let mut near: Vec<(usize, std::cmp::Reverse<usize>, usize, &str)> = known
        .iter()
        .map(|k| {
            let prefix = value
                .chars()
                .zip(k.chars())
                .take_while(|(a, b)| a == b)
                .count();
            let length = value.chars().count().abs_diff(k.chars().count());
            (
                edit_distance(value, k),
                std::cmp::Reverse(prefix),
                length,
                *k,
            )
        })
        .filter(|(d, ..)| *d <= 2 && *d < value.chars().count())
        .collect();
    near.sort();
    let Some(&(best, ..)) = near.first() else {
        return String::new();
    };
    let names: Vec<&str> = near
        .iter()
        .filter(|(d, ..)| *d == best)
        .take(3)
        .map(|(.., k)| *k)
        .collect();
    format!(" (did you mean {}?)", names.join(", "))
}

#[cfg(test)]
mod tests;
