//! `karpenter.sh/v1alpha1` NodeOverlay, read strictly and validated as its
//! CRD schema and CEL rules are (core pkg/apis/v1alpha1/nodeoverlay.go,
//! nodeoverlay_validation.go): at most 100 requirements with the NodePool
//! operators, `price` and `priceAdjustment` in their patterns and not both,
//! `weight` 1–10000, and `capacity` holding extended resources only.

use serde::Deserialize;

use super::nodepool::{At, RawObject, object_name, operator};
use crate::cloud::overlay::{NodeOverlay, PriceChange};
use crate::kube::labels::validate_label_key;
use crate::kube::quantity::Quantity;
use crate::kube::requirements::{Operator, Requirement, Requirements};
use crate::kube::resources::ResourceKind;
use crate::manifest::convert::check_values;
use crate::manifest::{Document, Located, ManifestError, Position};

/// Upstream `MaxItems` of `spec.requirements`.
const MAX_REQUIREMENTS: usize = 100;
/// Upstream `Maximum` of `spec.weight`.
const MAX_WEIGHT: i64 = 10_000;

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawSpec {
    requirements: Option<Located<Vec<Located<RawRequirement>>>>,
    price_adjustment: Option<Located<String>>,
    price: Option<Located<String>>,
    capacity: Option<Located<std::collections::BTreeMap<String, Located<String>>>>,
    weight: Option<Located<i64>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawRequirement {
    key: Located<String>,
    operator: Located<String>,
    values: Option<Located<Vec<Located<String>>>>,
}

/// A NodeOverlay and where its name is written.
#[derive(Debug, Clone)]
pub struct ReadOverlay {
    /// The overlay.
    pub overlay: NodeOverlay,
    /// `metadata.name`.
    pub at: Position,
}

/// Reads one `karpenter.sh/v1alpha1 NodeOverlay` document.
pub fn read_nodeoverlay(doc: &Document) -> Result<ReadOverlay, ManifestError> {
    let raw: RawObject<RawSpec> = doc.deserialize()?;
    let at = At { doc };
    let name = object_name(&at, &raw.metadata, "NodeOverlay")?;
    let spec = raw.spec;
    const REQ: &str = "spec.requirements";
    let mut requirements = Requirements::new();
    if let Some(list) = &spec.requirements {
        if list.value.len() > MAX_REQUIREMENTS {
            return Err(at.error(
                list,
                REQ,
                format!(
                    "at most {MAX_REQUIREMENTS} requirements are allowed, got {}",
                    list.value.len()
                ),
            ));
        }
        for (i, r) in list.value.iter().enumerate() {
            requirements.add(requirement(&at, r, &format!("{REQ}[{i}]"))?);
        }
    }
    let price = match (&spec.price, &spec.price_adjustment) {
        (Some(_), Some(adjustment)) => {
            return Err(at.error(
                adjustment,
                "spec.priceAdjustment",
                "cannot set both 'price' and 'priceAdjustment'",
            ));
        }
        (Some(p), None) => Some(
            PriceChange::parse_price(&p.value)
                .map_err(|e| at.error(p, "spec.price", e.to_string()))?,
        ),
        (None, Some(a)) => Some(
            PriceChange::parse_adjustment(&a.value)
                .map_err(|e| at.error(a, "spec.priceAdjustment", e.to_string()))?,
        ),
        (None, None) => None,
    };
    let weight = match &spec.weight {
        None => 0,
        Some(w) if (1..=MAX_WEIGHT).contains(&w.value) => w.value as u32,
        Some(w) => {
            return Err(at.error(
                w,
                "spec.weight",
                format!("weight {} out of range 1..{MAX_WEIGHT}", w.value),
            ));
        }
    };
    let mut capacity = Vec::new();
    for (resource, quantity) in spec.capacity.iter().flat_map(|c| c.value.iter()) {
        let path = format!("spec.capacity.{resource}");
        if matches!(
            resource.as_str(),
            "cpu" | "memory" | "ephemeral-storage" | "pods"
        ) {
            return Err(at.error(
                quantity,
                &path,
                format!(
                    "invalid resource restricted: {resource:?} is not an extended resource (capacity adds extended resources only)"
                ),
            ));
        }
        // Pods' extended resources are named per manifest set; only the
        // well-known ones mean the same slot everywhere.
        let Some(kind) = ResourceKind::from_well_known_name(resource) else {
            return Err(at.error(
                quantity,
                &path,
                format!(
                    "capacity of extended resource {resource:?} is not modelled yet (supported: nvidia.com/gpu, amd.com/gpu, aws.amazon.com/neuron, aws.amazon.com/neuroncore, habana.ai/gaudi, vpc.amazonaws.com/efa, vpc.amazonaws.com/pod-eni)"
                ),
            ));
        };
        let parsed = Quantity::parse(&quantity.value)
            .map_err(|e| at.error(quantity, &path, e.to_string()))?;
        let amount = kind.amount(parsed);
        if amount < 0 {
            return Err(at.error(quantity, &path, "must not be negative"));
        }
        capacity.push((kind, amount));
    }
    Ok(ReadOverlay {
        overlay: NodeOverlay {
            name: name.value.clone(),
            weight,
            requirements,
            price,
            capacity,
        },
        at: Position::at(&doc.file, name.position),
    })
}

/// One requirement: the operator enum, a qualified key, the value counts
/// of the CEL rules, and Gt/Lt/Gte/Lte on one non-negative integer.
fn requirement(
    at: &At<'_>,
    r: &Located<RawRequirement>,
    path: &str,
) -> Result<Requirement, ManifestError> {
    let raw = &r.value;
    let operator = operator(at, &raw.operator, path)?;
    validate_label_key(&raw.key.value)
        .map_err(|e| at.error(&raw.key, &format!("{path}.key"), e.to_string()))?;
    let values: Vec<String> = raw
        .values
        .iter()
        .flat_map(|v| v.value.iter())
        .map(|v| v.value.clone())
        .collect();
    check_values(operator, &values).map_err(|m| at.error(r, path, m))?;
    if matches!(
        operator,
        Operator::Gt | Operator::Lt | Operator::Gte | Operator::Lte
    ) && values[0].parse::<u64>().is_err()
    {
        return Err(at.error(
            r,
            path,
            format!(
                "requirements operator 'Gt', 'Lt', 'Gte' or 'Lte' must have a single positive integer value, got {:?}",
                values[0]
            ),
        ));
    }
    Requirement::new(&raw.key.value, operator, &values)
        .map_err(|e| at.error(r, path, e.to_string()))
}
