//! One requirement on one label key and its set algebra (core:
//! pkg/scheduling/requirement.go): a value set that is either included or
//! excluded (complement), optional inclusive integer bounds, and `minValues`.

use std::cmp::Ordering;
use std::fmt;
use std::sync::Arc;

use super::{Operator, RequirementError, RequirementSpec};
use crate::kube::labels::normalize_label_key;

/// Largest `minValues` the NodePool CRD accepts.
pub const MAX_MIN_VALUES: u32 = 50;

/// One requirement on one label key.
///
/// Canonical form, as upstream: `In v` = included `v`; `NotIn v` = excluded
/// `v`; `Exists` = excluded ∅; `DoesNotExist` = included ∅; `Gt n` = `Exists`
/// with lower bound `n+1` (`Gt i64::MAX` = `DoesNotExist`); `Lt n` = `Exists`
/// with upper bound `n-1`; `Gte`/`Lte` set the bounds directly. Bounds only
/// survive on complement sets; an included set is already concrete.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Requirement {
    /// Key and values are shared: requirement sets are copied far more
    /// often than requirements are made.
    key: Arc<str>,
    complement: bool,
    /// Sorted, without duplicates (binary search, allocation-free merges).
    values: Arc<[String]>,
    gte: Option<i64>,
    lte: Option<i64>,
    min_values: Option<u32>,
}

impl Requirement {
    /// Builds a requirement from an operator and values, validating the
    /// shape rules of the NodePool CRD: `In` needs at least one value;
    /// `Gt`/`Lt`/`Gte`/`Lte` need exactly one non-negative integer. Values
    /// given to `Exists`/`DoesNotExist` are ignored, as upstream does.
    pub fn new(
        key: &str,
        operator: Operator,
        values: &[String],
    ) -> Result<Requirement, RequirementError> {
        Requirement::with_min_values(key, operator, values, None)
    }

    /// Like [`Requirement::new`] with a NodePool `minValues` (1..=50; for
    /// `In` it may not exceed the number of values; other operators accept
    /// it unchecked, as the CRD does).
    pub fn with_min_values(
        key: &str,
        operator: Operator,
        values: &[String],
        min_values: Option<u32>,
    ) -> Result<Requirement, RequirementError> {
        let key = normalize_label_key(key);
        let invalid = |reason: String| RequirementError::Invalid {
            key: key.to_string(),
            reason,
        };
        if let Some(min) = min_values
            && !(1..=MAX_MIN_VALUES).contains(&min)
        {
            return Err(invalid(format!(
                "minValues {min} must be between 1 and {MAX_MIN_VALUES}"
            )));
        }
        match operator {
            Operator::In => {
                if values.is_empty() {
                    return Err(invalid("operator In must have a value defined".to_string()));
                }
                if let Some(min) = min_values
                    && values.len() < min as usize
                {
                    return Err(invalid(format!(
                        "operator In with minValues {min} must have at least that many values, \
                         has {}",
                        values.len()
                    )));
                }
                Ok(Requirement::in_values(key, values.iter().cloned()).min_values_set(min_values))
            }
            Operator::NotIn => {
                Ok(Requirement::not_in(key, values.iter().cloned()).min_values_set(min_values))
            }
            Operator::Exists => Ok(Requirement::exists(key).min_values_set(min_values)),
            Operator::DoesNotExist => {
                Ok(Requirement::does_not_exist(key).min_values_set(min_values))
            }
            Operator::Gt | Operator::Lt | Operator::Gte | Operator::Lte => {
                let bound = match values {
                    [single] => single.parse::<i64>().ok().filter(|n| *n >= 0),
                    _ => None,
                }
                .ok_or_else(|| {
                    invalid(format!(
                        "operator {operator} must have a single positive integer value"
                    ))
                })?;
                let mut requirement = Requirement::exists(key).min_values_set(min_values);
                match operator {
                    // Nothing is greater than the largest integer: canonical DoesNotExist,
                    // which upstream builds without minValues.
                    Operator::Gt if bound == i64::MAX => {
                        return Ok(Requirement::does_not_exist(key));
                    }
                    Operator::Gt => requirement.gte = Some(bound + 1),
                    Operator::Gte => requirement.gte = Some(bound),
                    Operator::Lt => requirement.lte = Some(bound - 1),
                    _ => requirement.lte = Some(bound),
                }
                Ok(requirement)
            }
        }
    }

    /// `key In values` (unchecked: an empty list gives `DoesNotExist`).
    pub fn in_values<I, S>(key: &str, values: I) -> Requirement
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Requirement::from_parts(key, false, sorted_set(values))
    }

    /// `key NotIn values` (an empty list gives `Exists`).
    pub fn not_in<I, S>(key: &str, values: I) -> Requirement
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Requirement::from_parts(key, true, sorted_set(values))
    }

    /// `key Exists`.
    pub fn exists(key: &str) -> Requirement {
        Requirement::from_parts(key, true, Vec::new())
    }

    /// `key DoesNotExist`.
    pub fn does_not_exist(key: &str) -> Requirement {
        Requirement::from_parts(key, false, Vec::new())
    }

    #[inline]
    fn from_parts(key: &str, complement: bool, values: Vec<String>) -> Requirement {
        Requirement {
            key: normalize_label_key(key).into(),
            complement,
            values: values.into(),
            gte: None,
            lte: None,
            min_values: None,
        }
    }

    fn min_values_set(mut self, min_values: Option<u32>) -> Requirement {
        self.min_values = min_values;
        self
    }

    #[cfg(test)]
    pub(crate) fn from_raw(
        key: &str,
        complement: bool,
        values: &[&str],
        gte: Option<i64>,
        lte: Option<i64>,
        min_values: Option<u32>,
    ) -> Requirement {
        Requirement {
            key: key.into(),
            complement,
            values: sorted_set(values.iter().copied()).into(),
            gte,
            lte,
            min_values,
        }
    }

    /// The normalised label key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// Whether the value set is excluded rather than included.
    pub fn is_complement(&self) -> bool {
        self.complement
    }

    /// The included (or, for a complement, excluded) values, sorted.
    pub fn values(&self) -> &[String] {
        &self.values
    }

    /// Inclusive lower integer bound.
    pub fn gte(&self) -> Option<i64> {
        self.gte
    }

    /// Inclusive upper integer bound.
    pub fn lte(&self) -> Option<i64> {
        self.lte
    }

    /// Minimum number of distinct values required (NodePool `minValues`).
    pub fn min_values(&self) -> Option<u32> {
        self.min_values
    }

    /// Replaces `minValues` (the BestEffort policy lowers it).
    pub fn set_min_values(&mut self, min_values: Option<u32>) {
        self.min_values = min_values;
    }

    /// The operator this requirement reads as. Bounds read as `Exists` (or
    /// `NotIn` when values are also excluded), as upstream `Operator()`.
    pub fn operator(&self) -> Operator {
        match (self.complement, self.values.is_empty()) {
            (true, true) => Operator::Exists,
            (true, false) => Operator::NotIn,
            (false, false) => Operator::In,
            (false, true) => Operator::DoesNotExist,
        }
    }

    /// Whether the operator is `NotIn` or `DoesNotExist` (the "negative"
    /// requirements that never conflict with each other).
    pub fn is_negative(&self) -> bool {
        matches!(self.operator(), Operator::NotIn | Operator::DoesNotExist)
    }

    /// Number of allowed values; a complement counts as `i64::MAX` minus the
    /// excluded values (upstream `Len()`).
    pub fn len(&self) -> usize {
        if self.complement {
            i64::MAX as usize - self.values.len()
        } else {
            self.values.len()
        }
    }

    /// Whether no value is allowed (`DoesNotExist`).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether `value` is allowed.
    #[inline]
    pub fn has(&self, value: &str) -> bool {
        self.contains_value(value) != self.complement && within_bounds(value, self.gte, self.lte)
    }

    #[inline]
    fn contains_value(&self, value: &str) -> bool {
        self.values
            .binary_search_by(|probe| probe.as_str().cmp(value))
            .is_ok()
    }

    /// One allowed value, deterministically: the smallest included value; for
    /// a complement, the integer nearest 0 inside the bounds that is not
    /// excluded (upstream picks one at random). `None` for `DoesNotExist`.
    pub fn any(&self) -> Option<String> {
        if !self.complement {
            return self.values.first().cloned();
        }
        let lower = self.gte.unwrap_or(i64::MIN);
        let upper = self.lte.unwrap_or(i64::MAX);
        let start = 0i64.clamp(lower, upper.max(lower));
        let allowed = |n: i64| !self.contains_value(&n.to_string());
        // Only finitely many values are excluded, so both scans stop early.
        let upward = (start..=upper).find(|n| allowed(*n));
        upward
            .or_else(|| (lower..start).rev().find(|n| allowed(*n)))
            .map(|n| n.to_string())
    }

    /// The intersection of two requirements on the same key (upstream
    /// `Intersection`): complements union their exclusions, mixed sets take
    /// the difference, plain sets intersect; bounds tighten and drop values
    /// outside them (non-integers included); `minValues` is the larger one.
    pub fn intersection(&self, other: &Requirement) -> Requirement {
        let complement = self.complement && other.complement;
        let gte = max_bound(self.gte, other.gte);
        let lte = min_bound(self.lte, other.lte);
        let min_values = self.min_values.max(other.min_values);
        if let (Some(low), Some(high)) = (gte, lte)
            && low > high
        {
            return Requirement::does_not_exist(&self.key).min_values_set(min_values);
        }
        let mut values = match (self.complement, other.complement) {
            (true, true) => merge_union(&self.values, &other.values),
            (true, false) => merge_difference(&other.values, &self.values),
            (false, true) => merge_difference(&self.values, &other.values),
            (false, false) => merge_intersection(&self.values, &other.values),
        };
        values.retain(|v| within_bounds(v, gte, lte));
        let (gte, lte) = if complement { (gte, lte) } else { (None, None) };
        Requirement {
            key: self.key.clone(),
            complement,
            values: values.into(),
            gte,
            lte,
            min_values,
        }
    }

    /// Whether the intersection would allow at least one value, without
    /// building it (upstream `HasIntersection`).
    #[inline]
    pub fn has_intersection(&self, other: &Requirement) -> bool {
        let gte = max_bound(self.gte, other.gte);
        let lte = min_bound(self.lte, other.lte);
        if let (Some(low), Some(high)) = (gte, lte)
            && low > high
        {
            return false;
        }
        match (self.complement, other.complement) {
            (true, true) => true,
            (true, false) => other
                .values
                .iter()
                .any(|v| !self.contains_value(v) && within_bounds(v, gte, lte)),
            (false, true) => self
                .values
                .iter()
                .any(|v| !other.contains_value(v) && within_bounds(v, gte, lte)),
            (false, false) => {
                let (small, large) = if self.values.len() <= other.values.len() {
                    (self, other)
                } else {
                    (other, self)
                };
                small
                    .values
                    .iter()
                    .any(|v| large.contains_value(v) && within_bounds(v, gte, lte))
            }
        }
    }

    /// Whether the intersection with `other` is a list of values (not a
    /// complement) of which `listed` accepts none, without building it:
    /// `!i.is_complement() && !i.values().iter().any(listed)` for
    /// `i = self.intersection(other)`.
    #[inline]
    pub fn intersection_lists_none(
        &self,
        other: &Requirement,
        listed: impl Fn(&str) -> bool,
    ) -> bool {
        let gte = max_bound(self.gte, other.gte);
        let lte = min_bound(self.lte, other.lte);
        if let (Some(low), Some(high)) = (gte, lte)
            && low > high
        {
            // `DoesNotExist`: a list of no values.
            return true;
        }
        let (list, other) = match (self.complement, other.complement) {
            (true, true) => return false,
            (false, _) => (self, other),
            (true, false) => (other, self),
        };
        !list.values.iter().any(|v| {
            other.contains_value(v) != other.complement && within_bounds(v, gte, lte) && listed(v)
        })
    }

    /// The NodePool-style requirement(s) this reads as: one, or two
    /// (`Gte` and `Lte`) when both bounds are set (upstream
    /// `NodeSelectorRequirement` / `BoundedNodeSelectorRequirements`).
    pub fn to_specs(&self) -> Vec<RequirementSpec> {
        let spec = |operator: Operator, values: Vec<String>| RequirementSpec {
            key: self.key.to_string(),
            operator,
            values,
            min_values: self.min_values,
        };
        match (self.gte, self.lte) {
            (Some(low), Some(high)) => vec![
                spec(Operator::Gte, vec![low.to_string()]),
                spec(Operator::Lte, vec![high.to_string()]),
            ],
            (Some(low), None) => vec![spec(Operator::Gte, vec![low.to_string()])],
            (None, Some(high)) => vec![spec(Operator::Lte, vec![high.to_string()])],
            (None, None) => {
                let operator = self.operator();
                let values = match operator {
                    Operator::In | Operator::NotIn => self.values.to_vec(),
                    _ => Vec::new(),
                };
                vec![spec(operator, values)]
            }
        }
    }
}

/// Upstream `String()`: `key Op [v1 v2 …]` (at most five values, then
/// `and N others`), then ` >=n`, ` <=n`, ` minValues n` when set.
impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let operator = self.operator();
        write!(f, "{} {}", self.key, operator)?;
        if matches!(operator, Operator::In | Operator::NotIn) {
            const SHOWN: usize = 5;
            f.write_str(" [")?;
            for (i, value) in self.values.iter().take(SHOWN).enumerate() {
                if i > 0 {
                    f.write_str(" ")?;
                }
                f.write_str(value)?;
            }
            if self.values.len() > SHOWN {
                write!(f, " and {} others", self.values.len() - SHOWN)?;
            }
            f.write_str("]")?;
        }
        if let Some(low) = self.gte {
            write!(f, " >={low}")?;
        }
        if let Some(high) = self.lte {
            write!(f, " <={high}")?;
        }
        if let Some(min) = self.min_values {
            write!(f, " minValues {min}")?;
        }
        Ok(())
    }
}

/// Whether `value` lies inside the bounds; with any bound set, values that
/// are not integers are outside.
#[inline]
fn within_bounds(value: &str, gte: Option<i64>, lte: Option<i64>) -> bool {
    if gte.is_none() && lte.is_none() {
        return true;
    }
    let Ok(n) = value.parse::<i64>() else {
        return false;
    };
    gte.is_none_or(|low| n >= low) && lte.is_none_or(|high| n <= high)
}

fn max_bound(a: Option<i64>, b: Option<i64>) -> Option<i64> {
    a.max(b)
}

fn min_bound(a: Option<i64>, b: Option<i64>) -> Option<i64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, None) => x,
        (None, y) => y,
    }
}

fn sorted_set<I, S>(values: I) -> Vec<String>
where
    I: IntoIterator<Item = S>,
    S: Into<String>,
{
    let mut values: Vec<String> = values.into_iter().map(Into::into).collect();
    values.sort_unstable();
    values.dedup();
    values
}

fn merge_union(a: &[String], b: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            Ordering::Less => {
                out.push(a[i].clone());
                i += 1;
            }
            Ordering::Greater => {
                out.push(b[j].clone());
                j += 1;
            }
            Ordering::Equal => {
                out.push(a[i].clone());
                i += 1;
                j += 1;
            }
        }
    }
    out.extend(a[i..].iter().cloned());
    out.extend(b[j..].iter().cloned());
    out
}

fn merge_intersection(a: &[String], b: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(a.len().min(b.len()));
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            Ordering::Less => i += 1,
            Ordering::Greater => j += 1,
            Ordering::Equal => {
                out.push(a[i].clone());
                i += 1;
                j += 1;
            }
        }
    }
    out
}

/// `a` minus `b`.
fn merge_difference(a: &[String], b: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(a.len());
    let mut j = 0;
    for value in a {
        while j < b.len() && b[j] < *value {
            j += 1;
        }
        if j >= b.len() || b[j] != *value {
            out.push(value.clone());
        }
    }
    out
}
