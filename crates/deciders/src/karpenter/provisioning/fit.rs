//! What the instance-type filter checks a NodeClaim's pods against, shared
//! by templates, claims and existing nodes: the filter's failure messages,
//! minValues, and requirement lookups over a merge that is never built.

use std::borrow::Cow;
use std::collections::BTreeSet;

use crate::kube::labels::{
    LABEL_HOSTNAME, LABEL_NODE_INITIALIZED, LABEL_NODE_REGISTERED, LABEL_NODEPOOL, LabelKeySet,
};
use crate::kube::requirements::{Requirement, Requirements};
use crate::kube::resources::Resources;

/// What the instance-type filter found, for the message.
#[derive(Debug, Clone, Default)]
pub(super) struct FilterFailure {
    pub requirements_met: bool,
    pub fits: bool,
    pub offering: bool,
    pub host_ports: bool,
    pub min_values: Option<String>,
}

impl FilterFailure {
    /// A one-line reason.
    pub fn describe(&self, shown: &Requirements, requests: &Resources) -> String {
        let shown = conjunction(shown);
        if let Some(shortfall) = &self.min_values {
            return format!("minValues not met: {shortfall}");
        }
        if !self.requirements_met && !self.fits && !self.offering && self.host_ports {
            return "host port conflict with DaemonSet or earlier pods".to_string();
        }
        if !self.requirements_met {
            format!("no instance type satisfies {shown}")
        } else if !self.fits {
            format!(
                "no instance type has room for {}",
                format_resources(requests)
            )
        } else if !self.offering {
            format!("no available offering satisfies {shown}")
        } else {
            format!(
                "no instance type satisfies {shown} with room for {} and an available offering",
                format_resources(requests)
            )
        }
    }
}

/// `a ∧ b ∧ c`, leaving out bookkeeping keys.
pub(super) fn conjunction(requirements: &Requirements) -> String {
    let parts: Vec<String> = requirements
        .iter()
        .filter(|r| !is_bookkeeping(r.key()))
        .map(ToString::to_string)
        .collect();
    if parts.is_empty() {
        "the NodePool requirements".to_string()
    } else {
        parts.join(" ∧ ")
    }
}

fn is_bookkeeping(key: &str) -> bool {
    matches!(
        key,
        LABEL_HOSTNAME | LABEL_NODEPOOL | LABEL_NODE_REGISTERED | LABEL_NODE_INITIALIZED
    )
}

/// `cpu=1500m, memory=2Gi, pods=3` (non-zero amounts).
pub(super) fn format_resources(resources: &Resources) -> String {
    use crate::kube::resources::{GIB, MIB, ResourceKind};
    let parts: Vec<String> = resources
        .iter()
        .map(|(kind, amount)| {
            let name = kind.well_known_name().unwrap_or("extended");
            let value = match kind {
                ResourceKind::Cpu if amount % 1000 == 0 => format!("{}", amount / 1000),
                ResourceKind::Cpu => format!("{amount}m"),
                ResourceKind::Memory | ResourceKind::EphemeralStorage if amount % GIB == 0 => {
                    format!("{}Gi", amount / GIB)
                }
                ResourceKind::Memory | ResourceKind::EphemeralStorage if amount % MIB == 0 => {
                    format!("{}Mi", amount / MIB)
                }
                _ => amount.to_string(),
            };
            format!("{name}={value}")
        })
        .collect();
    parts.join(", ")
}

/// The first key whose minValues the types do not reach, described
/// (upstream `SatisfiesMinValues` counts each type's own values).
pub(super) fn min_values_shortfall(
    types: &[u32],
    requirements: &Requirements,
    type_requirements: &[Requirements],
) -> Option<String> {
    for requirement in requirements.iter() {
        let Some(min) = requirement.min_values() else {
            continue;
        };
        let mut values: BTreeSet<&str> = BTreeSet::new();
        for &index in types {
            if let Some(own) = type_requirements[index as usize].get(requirement.key())
                && !own.is_complement()
            {
                values.extend(own.values().iter().map(String::as_str));
            }
        }
        if values.len() < min as usize {
            return Some(format!(
                "{} needs {min} values, {} available",
                requirement.key(),
                values.len()
            ));
        }
    }
    None
}

/// BestEffort's relaxation (core: nodeclaim.go `tryVolumeAlternative`
/// with `SatisfiesMinValues`): every `minValues` the types do not reach
/// becomes the number of values they do reach. Whether one was lowered.
pub(super) fn relax_min_values(
    types: &[u32],
    requirements: &mut Requirements,
    type_requirements: &[Requirements],
) -> bool {
    let mut lowered = Vec::new();
    for requirement in requirements.iter() {
        let Some(min) = requirement.min_values() else {
            continue;
        };
        let reached = values_reached(types, requirement.key(), type_requirements);
        if reached < min as usize {
            lowered.push((requirement.key().to_string(), reached as u32));
        }
    }
    for (key, reached) in &lowered {
        if let Some(r) = requirements.get_mut(key) {
            r.set_min_values(Some(*reached));
        }
    }
    !lowered.is_empty()
}

/// How many values of `key` the types' own requirements hold together.
fn values_reached(types: &[u32], key: &str, type_requirements: &[Requirements]) -> usize {
    let mut values: BTreeSet<&str> = BTreeSet::new();
    for &index in types {
        if let Some(own) = type_requirements[index as usize].get(key)
            && !own.is_complement()
        {
            values.extend(own.values().iter().map(String::as_str));
        }
    }
    values.len()
}

/// The requirement on `key` of `a ∩ b` without building the whole merge.
pub(super) fn merged_get<'r>(
    a: &'r Requirements,
    b: &'r Requirements,
    key: &str,
) -> Option<Cow<'r, Requirement>> {
    match (a.get(key), b.get(key)) {
        (Some(x), Some(y)) => Some(Cow::Owned(x.intersection(y))),
        (Some(x), None) | (None, Some(x)) => Some(Cow::Borrowed(x)),
        (None, None) => None,
    }
}

/// A shared helper for the allow-nothing key set.
pub(super) fn no_undefined() -> &'static LabelKeySet {
    static EMPTY: LabelKeySet = LabelKeySet::new();
    &EMPTY
}
