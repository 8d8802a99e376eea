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
//! which is what a user needs to fix a NodePool that leaves pods pending.

use std::collections::BTreeSet;

use super::nodepool::NodePool;
use crate::cloud::{Catalog, InstanceType};
use crate::kube::labels::{LABEL_CAPACITY_TYPE, LABEL_NODEPOOL, LABEL_TOPOLOGY_ZONE};
use crate::kube::labels::{LABEL_INSTANCE_TYPE, LABEL_TOPOLOGY_ZONE_ID};
use crate::kube::requirements::{Requirement, Requirements};

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

#[cfg(test)]
mod tests;
