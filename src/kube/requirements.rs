//! Node requirements and their algebra, with Karpenter's semantics
//! (core: pkg/scheduling/requirement.go, requirements.go).
//!
//! SKELETON: the signatures below are the agreed API; bodies are filled in
//! by the requirements work.

use std::collections::BTreeMap;

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
}

/// One requirement on one label key.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Requirement {
    /// Normalised label key.
    pub key: String,
    /// `true` for NotIn / Exists (the value set is excluded).
    pub complement: bool,
    /// Included (or excluded, when `complement`) values.
    pub values: std::collections::BTreeSet<String>,
    /// Inclusive lower integer bound.
    pub gte: Option<i64>,
    /// Inclusive upper integer bound.
    pub lte: Option<i64>,
    /// Minimum number of distinct values required (NodePool `minValues`).
    pub min_values: Option<u32>,
}

impl Requirement {
    /// Builds a requirement from an operator and values, validating them.
    pub fn new(
        _key: &str,
        _operator: Operator,
        _values: &[String],
    ) -> Result<Requirement, RequirementError> {
        todo!("requirements work")
    }
}

/// A conjunction of requirements, at most one per key.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Requirements {
    /// By normalised key.
    pub by_key: BTreeMap<String, Requirement>,
}
