//! Node requirements and their algebra, with Karpenter's semantics
//! (core: pkg/scheduling/requirement.go, requirements.go; validation from
//! pkg/apis/v1/nodeclaim_validation.go `ValidateRequirement`).
//!
//! A [`Requirement`] constrains one label key; [`Requirements`] is a
//! conjunction with at most one requirement per (normalised) key, kept sorted
//! by key so that every iteration, error and printout is deterministic and
//! two sets can be compared by a merge walk without allocating.

mod requirement;

use std::fmt;
use std::hash::{Hash, Hasher};
use std::str::FromStr;
use std::sync::Arc;

pub use requirement::{MAX_MIN_VALUES, Requirement};

use crate::kube::labels::{
    LABEL_HOSTNAME, LabelKeySet, Labels, RestrictedLabelRules, beta_alias, check_restricted_label,
    is_well_known_label, normalize_label_key, validate_label_key, validate_label_value,
    well_known_values,
};

/// A label selector operator, as NodePools and node affinity write them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Operator {
    /// `In`
    In,
    /// `NotIn`
    NotIn,
    /// `Exists`
    Exists,
    /// `DoesNotExist`
    DoesNotExist,
    /// `Gt`
    Gt,
    /// `Lt`
    Lt,
    /// `Gte` (NodePool only)
    Gte,
    /// `Lte` (NodePool only)
    Lte,
}

impl Operator {
    /// The operator as Kubernetes spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Operator::In => "In",
            Operator::NotIn => "NotIn",
            Operator::Exists => "Exists",
            Operator::DoesNotExist => "DoesNotExist",
            Operator::Gt => "Gt",
            Operator::Lt => "Lt",
            Operator::Gte => "Gte",
            Operator::Lte => "Lte",
        }
    }

    /// Whether only NodePool requirements may use this operator (`Gte`,
    /// `Lte`); pod node affinity and node selectors stop at `Gt` / `Lt`.
    pub fn is_node_pool_only(self) -> bool {
        matches!(self, Operator::Gte | Operator::Lte)
    }
}

impl fmt::Display for Operator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Operator {
    type Err = RequirementError;

    /// Parses the exact Kubernetes spelling (case-sensitive, like the API).
    fn from_str(s: &str) -> Result<Operator, RequirementError> {
        Ok(match s {
            "In" => Operator::In,
            "NotIn" => Operator::NotIn,
            "Exists" => Operator::Exists,
            "DoesNotExist" => Operator::DoesNotExist,
            "Gt" => Operator::Gt,
            "Lt" => Operator::Lt,
            "Gte" => Operator::Gte,
            "Lte" => Operator::Lte,
            other => return Err(RequirementError::UnknownOperator(other.to_string())),
        })
    }
}

/// Why a requirement is invalid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequirementError {
    /// Free-form reason naming the key.
    #[error("requirement {key:?}: {reason}")]
    Invalid {
        /// The label key.
        key: String,
        /// What is wrong.
        reason: String,
    },
    /// An operator outside In, NotIn, Exists, DoesNotExist, Gt, Lt, Gte, Lte.
    #[error(
        "unsupported operator {0:?}, expected one of In, NotIn, Exists, DoesNotExist, Gt, Lt, Gte, Lte"
    )]
    UnknownOperator(String),
}

/// A requirement as written in a manifest (NodePool
/// `NodeSelectorRequirementWithMinValues`, or a pod node-affinity term).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RequirementSpec {
    /// Label key as written.
    pub key: String,
    /// Operator.
    pub operator: Operator,
    /// Values as written.
    pub values: Vec<String>,
    /// NodePool `minValues`.
    pub min_values: Option<u32>,
}

impl RequirementSpec {
    /// Builds the requirement (shape checks only, see [`Requirement::new`]).
    pub fn to_requirement(&self) -> Result<Requirement, RequirementError> {
        Requirement::with_min_values(&self.key, self.operator, &self.values, self.min_values)
    }

    /// Karpenter's full check of a NodePool or pod requirement (upstream
    /// `ValidateRequirement`): restricted keys, key and value syntax, shape
    /// rules, and for `In` on a key with known values (capacity type,
    /// tenancy) at least one — and at least `minValues` — known values.
    /// Every problem found is reported, joined by `; `.
    pub fn validate(&self, rules: RestrictedLabelRules) -> Result<(), RequirementError> {
        let key = normalize_label_key(&self.key);
        let mut problems: Vec<String> = Vec::new();
        if let Err(e) = check_restricted_label(key, rules) {
            problems.push(e.to_string());
        }
        if self.operator == Operator::In
            && let Some(known) = well_known_values(key)
        {
            let valid = self
                .values
                .iter()
                .filter(|v| known.contains(&v.as_str()))
                .count();
            if valid == 0 {
                problems.push(format!(
                    "no valid values found in [{}] for {key}, expected one of: [{}]",
                    self.values.join(" "),
                    known.join(" ")
                ));
            } else if let Some(min) = self.min_values
                && valid < min as usize
            {
                problems.push(format!(
                    "not enough valid values found in [{}] for {key}, expected at least {min} \
                     valid values from: [{}], got: {valid}",
                    self.values.join(" "),
                    known.join(" ")
                ));
            }
        }
        if let Err(e) = validate_label_key(key) {
            problems.push(e.to_string());
        }
        for value in &self.values {
            if let Err(e) = validate_label_value(value) {
                problems.push(e.to_string());
            }
        }
        if let Err(e) = self.to_requirement() {
            problems.push(match e {
                RequirementError::Invalid { reason, .. } => reason,
                other => other.to_string(),
            });
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(RequirementError::Invalid {
                key: key.to_string(),
                reason: problems.join("; "),
            })
        }
    }
}

/// Why two requirement sets cannot both hold.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CompatibilityError {
    /// The incoming side constrains a key the other side does not define and
    /// which is not allowed to stay undefined.
    #[error("label {key:?} does not have known values{}", typo_hint(.hint))]
    UndefinedLabel {
        /// The undefined key.
        key: String,
        /// A similar known key, if one was found.
        hint: Option<String>,
    },
    /// Keys whose allowed values do not overlap.
    #[error("{}", join_conflicts(.0))]
    Conflicts(Vec<KeyConflict>),
}

fn typo_hint(hint: &Option<String>) -> String {
    hint.as_ref()
        .map(|known| format!(" (typo of {known:?}?)"))
        .unwrap_or_default()
}

fn join_conflicts(conflicts: &[KeyConflict]) -> String {
    conflicts
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// One key on which two requirement sets do not intersect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyConflict {
    /// The key.
    pub key: String,
    /// The requirement being checked.
    pub incoming: Requirement,
    /// The requirement it was checked against.
    pub existing: Requirement,
}

/// Upstream wording: `key K, <incoming> not in <existing>`.
impl fmt::Display for KeyConflict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "key {}, {} not in {}",
            self.key, self.incoming, self.existing
        )
    }
}

/// A conjunction of requirements, at most one per normalised key. Copies
/// share one list until one of them changes, as solves copy requirement
/// sets far more often than they change them.
#[derive(Clone, Default)]
pub struct Requirements {
    /// Sorted by key, keys unique (`None`: nothing required).
    sorted: Option<Arc<Vec<Requirement>>>,
}

impl PartialEq for Requirements {
    fn eq(&self, other: &Requirements) -> bool {
        self.slice() == other.slice()
    }
}

impl Eq for Requirements {}

impl Hash for Requirements {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.slice().hash(state);
    }
}

impl fmt::Debug for Requirements {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Requirements")
            .field("sorted", &self.slice())
            .finish()
    }
}

impl Requirements {
    /// No requirements.
    pub fn new() -> Requirements {
        Requirements { sorted: None }
    }

    #[inline]
    fn slice(&self) -> &[Requirement] {
        self.sorted.as_deref().map_or(&[], Vec::as_slice)
    }

    /// The list to change, copied first if another set shares it.
    fn list_mut(&mut self) -> &mut Vec<Requirement> {
        Arc::make_mut(self.sorted.get_or_insert_with(Default::default))
    }

    /// One `key In [value]` per label (keys normalised; a beta key and its
    /// GA key intersect).
    pub fn from_labels(labels: &Labels) -> Requirements {
        let mut requirements = Requirements::new();
        for (key, value) in labels.iter() {
            requirements.add(Requirement::in_values(key, [value]));
        }
        requirements
    }

    /// Builds requirements from manifest specs (shape checks only).
    pub fn from_specs<'a, I>(specs: I) -> Result<Requirements, RequirementError>
    where
        I: IntoIterator<Item = &'a RequirementSpec>,
    {
        let mut requirements = Requirements::new();
        for spec in specs {
            requirements.add(spec.to_requirement()?);
        }
        Ok(requirements)
    }

    #[inline]
    fn position(&self, key: &str) -> Result<usize, usize> {
        self.slice().binary_search_by(|probe| probe.key().cmp(key))
    }

    /// Where `key` is, if present. A short list is scanned: string
    /// equality compares lengths first, and label keys mostly differ in
    /// length, where each probe of a binary search compares bytes.
    #[inline]
    fn find(&self, key: &str) -> Option<usize> {
        const SCANNED_UP_TO: usize = 16;
        let list = self.slice();
        if list.len() <= SCANNED_UP_TO {
            list.iter().position(|r| r.key() == key)
        } else {
            self.position(key).ok()
        }
    }

    /// Adds a requirement, intersecting it with any existing one on its key.
    #[inline]
    pub fn add(&mut self, requirement: Requirement) {
        match self.position(requirement.key()) {
            Ok(i) => {
                let list = self.list_mut();
                list[i] = requirement.intersection(&list[i]);
            }
            Err(i) => self.list_mut().insert(i, requirement),
        }
    }

    /// Adds every requirement of `other` (intersecting per key).
    pub fn add_all(&mut self, other: &Requirements) {
        for requirement in other.slice() {
            self.add(requirement.clone());
        }
    }

    /// The requirement on `key` (normalised first), if any.
    #[inline]
    pub fn get(&self, key: &str) -> Option<&Requirement> {
        let key = normalize_label_key(key);
        self.find(key).map(|i| &self.slice()[i])
    }

    /// The requirement on `key`, already normalised, looked for first at
    /// `hint` (where the set asked before held it: sets built alike hold
    /// their keys at the same places), which is moved to where it is found.
    #[inline]
    pub fn get_hinted(&self, key: &str, hint: &std::cell::Cell<usize>) -> Option<&Requirement> {
        let list = self.slice();
        if let Some(at_hint) = list.get(hint.get())
            && at_hint.key() == key
        {
            return Some(at_hint);
        }
        let at = self.find(key)?;
        hint.set(at);
        Some(&list[at])
    }

    /// Mutable access, e.g. to relax `minValues`.
    pub fn get_mut(&mut self, key: &str) -> Option<&mut Requirement> {
        let key = normalize_label_key(key);
        let i = self.find(key)?;
        Some(&mut self.list_mut()[i])
    }

    /// The requirement on `key`, or `Exists` when undefined (upstream `Get`).
    pub fn get_or_exists(&self, key: &str) -> Requirement {
        self.get(key)
            .cloned()
            .unwrap_or_else(|| Requirement::exists(key))
    }

    /// Whether `key` (normalised) is constrained.
    #[inline]
    pub fn has(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// Removes and returns the requirement on `key`.
    pub fn remove(&mut self, key: &str) -> Option<Requirement> {
        let key = normalize_label_key(key);
        let i = self.position(key).ok()?;
        Some(self.list_mut().remove(i))
    }

    /// Requirements in key order.
    pub fn iter(&self) -> std::slice::Iter<'_, Requirement> {
        self.slice().iter()
    }

    /// Keys in order.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.slice().iter().map(Requirement::key)
    }

    /// Number of keys.
    pub fn len(&self) -> usize {
        self.slice().len()
    }

    /// Whether nothing is required.
    pub fn is_empty(&self) -> bool {
        self.slice().is_empty()
    }

    /// Whether any requirement carries `minValues`.
    #[inline]
    pub fn has_min_values(&self) -> bool {
        self.slice().iter().any(|r| r.min_values().is_some())
    }

    /// Whether `incoming` can loosely be met together with `self` (upstream
    /// `Compatible`): every key `incoming` constrains must be defined here,
    /// unless it is in `allow_undefined` or `incoming` only forbids values
    /// there (NotIn / DoesNotExist); then [`Requirements::intersects`].
    /// Reports the first undefined key (in key order), or every conflict.
    pub fn compatible(
        &self,
        incoming: &Requirements,
        allow_undefined: &LabelKeySet,
    ) -> Result<(), CompatibilityError> {
        if let Some(key) = self.first_undefined_key(incoming, allow_undefined) {
            return Err(CompatibilityError::UndefinedLabel {
                key: key.to_string(),
                hint: self.label_hint(key, allow_undefined),
            });
        }
        self.intersects(incoming)
    }

    /// [`Requirements::compatible`] without building an error.
    #[inline]
    pub fn is_compatible(&self, incoming: &Requirements, allow_undefined: &LabelKeySet) -> bool {
        self.first_undefined_key(incoming, allow_undefined)
            .is_none()
            && self.is_intersecting(incoming)
    }

    fn first_undefined_key<'a>(
        &self,
        incoming: &'a Requirements,
        allow_undefined: &LabelKeySet,
    ) -> Option<&'a str> {
        // Both lists are sorted: walk them together.
        let mut mine = self.slice().iter().peekable();
        for requirement in incoming.slice() {
            let key = requirement.key();
            while mine.next_if(|r| r.key() < key).is_some() {}
            let defined = mine.peek().is_some_and(|r| r.key() == key);
            if !defined && !requirement.is_negative() && !allow_undefined.contains(key) {
                return Some(key);
            }
        }
        None
    }

    /// Upstream `labelHint`: a known key that contains `key`, or ends with the
    /// part of `key` after its `/`; allowed-undefined keys are tried first.
    fn label_hint(&self, key: &str, allow_undefined: &LabelKeySet) -> Option<String> {
        let suffix = key.split_once('/').map_or(key, |(_, name)| name);
        let similar = |known: &str| known.contains(key) || known.ends_with(suffix);
        allow_undefined
            .iter()
            .chain(self.keys())
            .find(|known| similar(known))
            .map(str::to_string)
    }

    /// Whether the two sets overlap on every key both define (upstream
    /// `Intersects`); keys defined on one side only are ignored, and two
    /// negative requirements (NotIn / DoesNotExist) never conflict.
    /// Reports every conflicting key, in key order.
    pub fn intersects(&self, incoming: &Requirements) -> Result<(), CompatibilityError> {
        let mut conflicts = Vec::new();
        self.for_each_common_key(incoming, |existing, incoming| {
            if !key_pair_intersects(existing, incoming) {
                conflicts.push(KeyConflict {
                    key: existing.key().to_string(),
                    incoming: incoming.clone(),
                    existing: existing.clone(),
                });
            }
            true
        });
        if conflicts.is_empty() {
            Ok(())
        } else {
            Err(CompatibilityError::Conflicts(conflicts))
        }
    }

    /// [`Requirements::intersects`] as a yes/no, allocation-free and
    /// stopping at the first conflict.
    #[inline]
    pub fn is_intersecting(&self, incoming: &Requirements) -> bool {
        let mut ok = true;
        self.for_each_common_key(incoming, |existing, incoming| {
            ok = key_pair_intersects(existing, incoming);
            ok
        });
        ok
    }

    /// Calls `visit(existing, incoming)` for each key defined on both sides,
    /// in key order, until it returns `false`.
    #[inline]
    fn for_each_common_key<'a>(
        &'a self,
        incoming: &'a Requirements,
        mut visit: impl FnMut(&'a Requirement, &'a Requirement) -> bool,
    ) {
        let (mut i, mut j) = (0, 0);
        while i < self.slice().len() && j < incoming.slice().len() {
            let (existing, other) = (&self.slice()[i], &incoming.slice()[j]);
            match existing.key().cmp(other.key()) {
                std::cmp::Ordering::Less => i += 1,
                std::cmp::Ordering::Greater => j += 1,
                std::cmp::Ordering::Equal => {
                    if !visit(existing, other) {
                        return;
                    }
                    i += 1;
                    j += 1;
                }
            }
        }
    }

    /// Whether a label set (e.g. an instance type's or node's labels) agrees
    /// with these requirements on every key both define — the same answer as
    /// `Requirements::from_labels(labels).is_intersecting(self)` without
    /// building anything. Beta keys in `labels` count for their GA key.
    pub fn intersects_labels(&self, labels: &Labels) -> bool {
        self.slice().iter().all(|requirement| {
            let key = requirement.key();
            let current = labels.get(key);
            let beta = beta_alias(key).and_then(|beta| labels.get(beta));
            match (current, beta) {
                // Two different values intersect to an empty `In`, which only
                // a negative requirement tolerates.
                (Some(a), Some(b)) if a != b => requirement.is_negative(),
                (Some(value), _) | (None, Some(value)) => requirement.has(value),
                (None, None) => true,
            }
        })
    }

    /// Whether a node with `labels` satisfies these (pod) requirements, as
    /// upstream `NewLabelRequirements(labels).Compatible(self, ...)`: a key
    /// required here must be present on the node unless allowed undefined or
    /// only negatively constrained. Fast check first; the error is built
    /// from the full algebra only on failure.
    pub fn compatible_with_labels(
        &self,
        labels: &Labels,
        allow_undefined: &LabelKeySet,
    ) -> Result<(), CompatibilityError> {
        let all_defined = self.slice().iter().all(|requirement| {
            requirement.is_negative()
                || allow_undefined.contains(requirement.key())
                || labels.get_normalized(requirement.key()).is_some()
        });
        if all_defined && self.intersects_labels(labels) {
            return Ok(());
        }
        Requirements::from_labels(labels).compatible(self, allow_undefined)
    }

    /// Concrete labels a NodeClaim gets from its requirements for custom
    /// (not well-known, not hostname) keys: one allowed value each, where one
    /// exists (upstream `resolveCustomLabelsFromRequirements`, v1.10+;
    /// deterministic choice, see [`Requirement::any`]).
    pub fn custom_labels(&self) -> Labels {
        self.slice()
            .iter()
            .filter(|r| !is_well_known_label(r.key()) && r.key() != LABEL_HOSTNAME)
            .filter_map(|r| r.any().map(|value| (r.key().to_string(), value)))
            .collect()
    }

    /// The requirements as NodePool-style specs, in key order (a key with
    /// both bounds gives a `Gte` and a `Lte` spec).
    pub fn to_specs(&self) -> Vec<RequirementSpec> {
        self.slice()
            .iter()
            .flat_map(Requirement::to_specs)
            .collect()
    }
}

/// [`Requirements::is_intersecting`] of many requirement sets against one
/// (`incoming`), for sets that mostly hold the same keys in the same
/// places (a catalog's instance types): each incoming key is looked for
/// first where the previous set held it, so a set costs one key
/// comparison per incoming key instead of a walk over both key lists.
pub struct IntersectionProbe<'a> {
    incoming: &'a [Requirement],
    /// Per incoming key, where the last set asked held it.
    found_at: Vec<usize>,
}

impl<'a> IntersectionProbe<'a> {
    /// A probe for sets that must intersect `incoming`.
    pub fn new(incoming: &'a Requirements) -> IntersectionProbe<'a> {
        IntersectionProbe {
            incoming: incoming.slice(),
            found_at: vec![0; incoming.slice().len()],
        }
    }

    /// `existing.is_intersecting(incoming)`.
    pub fn intersects(&mut self, existing: &Requirements) -> bool {
        let own = existing.slice();
        for (incoming, found_at) in self.incoming.iter().zip(&mut self.found_at) {
            let key = incoming.key();
            let existing = match own.get(*found_at) {
                Some(at_hint) if at_hint.key() == key => at_hint,
                _ => match own.binary_search_by(|r| r.key().cmp(key)) {
                    Ok(at) => {
                        *found_at = at;
                        &own[at]
                    }
                    Err(_) => continue,
                },
            };
            if !key_pair_intersects(existing, incoming) {
                return false;
            }
        }
        true
    }
}

#[inline]
fn key_pair_intersects(existing: &Requirement, incoming: &Requirement) -> bool {
    existing.has_intersection(incoming) || (existing.is_negative() && incoming.is_negative())
}

/// Upstream `String()`: requirements joined by `, ` in key order, leaving
/// out the restricted hostname key.
impl fmt::Display for Requirements {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for requirement in self.slice().iter().filter(|r| r.key() != LABEL_HOSTNAME) {
            if !first {
                f.write_str(", ")?;
            }
            first = false;
            write!(f, "{requirement}")?;
        }
        Ok(())
    }
}

impl FromIterator<Requirement> for Requirements {
    fn from_iter<I: IntoIterator<Item = Requirement>>(iter: I) -> Requirements {
        let mut requirements = Requirements::new();
        for requirement in iter {
            requirements.add(requirement);
        }
        requirements
    }
}

impl<'a> IntoIterator for &'a Requirements {
    type Item = &'a Requirement;
    type IntoIter = std::slice::Iter<'a, Requirement>;

    fn into_iter(self) -> Self::IntoIter {
        self.slice().iter()
    }
}

#[cfg(test)]
mod tests;
