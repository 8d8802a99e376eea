//! NodeOverlays (`karpenter.sh/v1alpha1`): price and extended-capacity
//! changes applied to the instance types a NodePool sees, before any
//! decision reads them (core pkg/controllers/nodeoverlay, the
//! `InstanceTypeStore`). Applying them once to a NodePool's catalog gives
//! every consumer (launch, consolidation, billing, the lower bound) the
//! same adjusted prices.
//!
//! Rules, as upstream's store applies them:
//! - an overlay matches an instance type of a NodePool when its
//!   requirements are compatible with the type's requirements plus
//!   `karpenter.sh/nodepool In [pool]` and the pool's template labels;
//!   its price change then applies to the type's offerings compatible with
//!   the requirements (zone, capacity type);
//! - overlays are taken highest `weight` first; equal weights in reverse
//!   name order (a name later in the alphabet first);
//! - per offering, the first overlay with a price wins; a later overlay of
//!   the *same* weight that also prices an offering already priced is a
//!   conflict, and is not applied at all (upstream marks it
//!   `ValidationSucceeded=False`, reason `Conflict`);
//! - capacity merges per resource the same way: the first overlay to set a
//!   resource wins, an equal-weight overlay setting the same resource
//!   conflicts;
//! - an adjusted price below zero is zero.

use std::collections::{BTreeMap, BTreeSet};

use super::catalog::{Catalog, InstanceType};
use super::price::Price;
use crate::kube::labels::{LABEL_NODEPOOL, NO_UNDEFINED_LABELS};
use crate::kube::requirements::{Requirement, Requirements};
use crate::kube::resources::ResourceKind;

/// A NodeOverlay as decisions read it, already validated.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeOverlay {
    /// `metadata.name`.
    pub name: String,
    /// `spec.weight` (1–10000; absent = 0).
    pub weight: u32,
    /// `spec.requirements` in the algebra's form.
    pub requirements: Requirements,
    /// `spec.price` or `spec.priceAdjustment`.
    pub price: Option<PriceChange>,
    /// `spec.capacity`: extended resources set on matching types.
    pub capacity: Vec<(ResourceKind, i64)>,
}

/// How an overlay changes an offering's price.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PriceChange {
    /// `price: "0.05"`: this price, whatever the offering's.
    Set(Price),
    /// `priceAdjustment: "+0.05"` / `"-0.1"`: add this many micro-dollars.
    Add(i64),
    /// `priceAdjustment: "-30%"`: add `numerator / denominator` percent.
    Percent {
        /// Signed percentage numerator.
        numerator: i64,
        /// Positive power of ten.
        denominator: i64,
    },
}

/// Why a price text is refused (the CRD's patterns, said in words).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PriceChangeError {
    /// `price` is not an unsigned decimal.
    #[error("price {0:?} must be an unsigned decimal such as \"0.05\" (pattern ^\\d+(\\.\\d+)?$)")]
    Price(String),
    /// `priceAdjustment` matches none of its forms.
    #[error(
        "priceAdjustment {0:?} must be a signed amount (\"+0.05\", \"-0.1\"), an increase in percent (\"+10%\") or a decrease from \"-0%\" to \"-100%\""
    )]
    Adjustment(String),
}

/// Splits `digits[.digits]` into (value, power of ten); `None` unless it
/// is that shape.
fn decimal(text: &str) -> Option<(i64, i64)> {
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if !all_digits(whole) || !all_digits(fraction) || (whole.is_empty() && fraction.is_empty()) {
        return None;
    }
    if text.contains('.') && fraction.is_empty() {
        return None;
    }
    if fraction.len() > 9 || whole.len() > 9 {
        return None;
    }
    let value: i64 = format!("{whole}{fraction}").parse().ok()?;
    Some((value, 10_i64.pow(fraction.len() as u32)))
}

impl PriceChange {
    /// Parses `spec.price`.
    pub fn parse_price(text: &str) -> Result<PriceChange, PriceChangeError> {
        let error = || PriceChangeError::Price(text.to_string());
        // ^\d+(\.\d+)?$: a whole part is required.
        if text.starts_with('.') || decimal(text).is_none() {
            return Err(error());
        }
        Price::parse_dollars(text)
            .map(PriceChange::Set)
            .ok_or_else(error)
    }

    /// Parses `spec.priceAdjustment`: a sign is required; a percentage
    /// increase is unbounded, a decrease is at most 100 %.
    pub fn parse_adjustment(text: &str) -> Result<PriceChange, PriceChangeError> {
        let error = || PriceChangeError::Adjustment(text.to_string());
        let (negative, rest) = match text.as_bytes().first() {
            Some(b'+') => (false, &text[1..]),
            Some(b'-') => (true, &text[1..]),
            _ => return Err(error()),
        };
        if let Some(percent) = rest.strip_suffix('%') {
            let (value, denominator) = decimal(percent).ok_or_else(error)?;
            if negative {
                // -\d{1,2}(\.\d+)?% or -100%.
                let whole = percent.split_once('.').map_or(percent, |(w, _)| w);
                let ok = (!whole.is_empty() && whole.len() <= 2) || percent == "100";
                if !ok {
                    return Err(error());
                }
            }
            let numerator = if negative { -value } else { value };
            return Ok(PriceChange::Percent {
                numerator,
                denominator,
            });
        }
        decimal(rest).ok_or_else(error)?;
        let micros = Price::parse_dollars(rest).ok_or_else(error)?.micros();
        Ok(PriceChange::Add(if negative { -micros } else { micros }))
    }

    /// The price after this change (upstream `AdjustedPrice`), never below
    /// zero.
    pub fn apply(self, price: Price) -> Price {
        let adjusted = match self {
            PriceChange::Set(p) => p,
            PriceChange::Add(micros) => Price::from_micros(price.micros().saturating_add(micros)),
            PriceChange::Percent {
                numerator,
                denominator,
            } => {
                let whole = 100 * i128::from(denominator);
                price
                    .scale(whole + i128::from(numerator), whole)
                    .unwrap_or(Price::ZERO)
            }
        };
        adjusted.max(Price::ZERO)
    }
}

/// What applying overlays to one NodePool's catalog gave.
#[derive(Debug, Clone)]
pub struct Overlaid {
    /// The catalog with adjusted offerings and capacities.
    pub catalog: Catalog,
    /// Overlays that changed at least one type, by name.
    pub applied: BTreeSet<String>,
}

/// Upstream `OrderByWeight`: highest weight first; equal weights with the
/// later name first.
pub fn order_by_weight(overlays: &[NodeOverlay]) -> Vec<&NodeOverlay> {
    let mut ordered: Vec<&NodeOverlay> = overlays.iter().collect();
    ordered.sort_by(|a, b| b.weight.cmp(&a.weight).then_with(|| b.name.cmp(&a.name)));
    ordered
}

/// One NodePool as an overlay's requirements see it.
#[derive(Debug, Clone, Copy)]
pub struct PoolView<'a> {
    /// NodePool name.
    pub name: &'a str,
    /// Its template labels.
    pub labels: &'a BTreeMap<String, String>,
}

/// What each overlay would set, per (pool index, type index): offering
/// prices by offering index and capacity by resource, each with the weight
/// of the overlay that set it.
#[derive(Default)]
struct Store {
    prices: BTreeMap<(usize, usize, usize), (PriceChange, u32)>,
    capacity: BTreeMap<(usize, usize), BTreeMap<ResourceKind, (i64, u32)>>,
}

/// The offerings of `it` an overlay prices: none unless the type (under
/// `pool`) is compatible with the overlay.
fn matched_offerings(
    pool: PoolView<'_>,
    it: &InstanceType,
    type_requirements: &Requirements,
    overlay: &NodeOverlay,
) -> Option<Vec<usize>> {
    let mut reqs = type_requirements.clone();
    reqs.add(Requirement::in_values(LABEL_NODEPOOL, [pool.name]));
    for (key, value) in pool.labels {
        reqs.add(Requirement::in_values(key, [value.as_str()]));
    }
    if !reqs.is_compatible(&overlay.requirements, &NO_UNDEFINED_LABELS) {
        return None;
    }
    let offerings: Vec<usize> = (0..it.offerings.len())
        .filter(|&i| it.offerings[i].is_compatible(&overlay.requirements))
        .collect();
    (!offerings.is_empty()).then_some(offerings)
}

/// Applies `overlays` to every pool's catalog at once (a conflict is
/// decided over all pools, as upstream validates an overlay against every
/// NodePool before storing any of it). Returns the catalogs in `pools`
/// order and the names of overlays refused for a conflict.
pub fn apply_overlays(
    pools: &[(PoolView<'_>, &Catalog)],
    overlays: &[NodeOverlay],
) -> (Vec<Overlaid>, Vec<String>) {
    let mut store = Store::default();
    let mut conflicts = Vec::new();
    let mut applied: Vec<BTreeSet<String>> = vec![BTreeSet::new(); pools.len()];
    for overlay in order_by_weight(overlays) {
        // (pool, type, offerings) this overlay touches.
        let mut matches = Vec::new();
        for (p, (pool, catalog)) in pools.iter().enumerate() {
            let type_reqs = catalog.type_requirements();
            for (t, it) in catalog.instance_types().iter().enumerate() {
                if let Some(offerings) = matched_offerings(*pool, it, &type_reqs[t], overlay) {
                    matches.push((p, t, offerings));
                }
            }
        }
        let conflicting = matches.iter().any(|(p, t, offerings)| {
            let price = overlay.price.is_some()
                && offerings.iter().any(|o| {
                    store
                        .prices
                        .get(&(*p, *t, *o))
                        .is_some_and(|(_, w)| *w == overlay.weight)
                });
            let capacity = overlay.capacity.iter().any(|(kind, _)| {
                store
                    .capacity
                    .get(&(*p, *t))
                    .and_then(|set| set.get(kind))
                    .is_some_and(|(_, w)| *w == overlay.weight)
            });
            price || capacity
        });
        if conflicting {
            conflicts.push(overlay.name.clone());
            continue;
        }
        for (p, t, offerings) in matches {
            let mut changed = false;
            if let Some(change) = overlay.price {
                for o in offerings {
                    if let std::collections::btree_map::Entry::Vacant(slot) =
                        store.prices.entry((p, t, o))
                    {
                        slot.insert((change, overlay.weight));
                        changed = true;
                    }
                }
            }
            let set = store.capacity.entry((p, t)).or_default();
            for (kind, amount) in &overlay.capacity {
                if !set.contains_key(kind) {
                    set.insert(*kind, (*amount, overlay.weight));
                    changed = true;
                }
            }
            if changed {
                applied[p].insert(overlay.name.clone());
            }
        }
    }
    let mut out = Vec::with_capacity(pools.len());
    for (p, (_, catalog)) in pools.iter().enumerate() {
        let mut types: Vec<InstanceType> = catalog.instance_types().to_vec();
        for (t, it) in types.iter_mut().enumerate() {
            let mut priced = false;
            for (o, offering) in it.offerings.iter_mut().enumerate() {
                if let Some((change, _)) = store.prices.get(&(p, t, o)) {
                    offering.price = change.apply(offering.price);
                    priced = true;
                }
            }
            if priced {
                // The type's on-demand price is its cheapest on-demand
                // offering's, as the launch filters and orderings read it.
                if let Some(cheapest) = it
                    .offerings
                    .iter()
                    .filter(|o| o.capacity_type == super::offering::CapacityType::OnDemand)
                    .map(|o| o.price)
                    .min()
                {
                    it.on_demand_price = cheapest;
                }
            }
            if let Some(set) = store.capacity.get(&(p, t)) {
                for (kind, (amount, _)) in set {
                    // Extended resources have no overhead: what the node
                    // has is what pods may request.
                    it.capacity.set(*kind, *amount);
                    it.allocatable.set(*kind, *amount);
                }
            }
        }
        let zones = catalog.zones().to_vec();
        out.push(Overlaid {
            catalog: Catalog::from_parts(catalog.region(), zones, types),
            applied: std::mem::take(&mut applied[p]),
        });
    }
    (out, conflicts)
}

#[cfg(test)]
#[path = "overlay_tests.rs"]
mod tests;
