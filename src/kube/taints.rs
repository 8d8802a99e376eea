//! Taints and tolerations (Equal/Exists, every effect).
//!
//! SKELETON: data types are agreed; matching logic is filled in by the
//! requirements work.

/// A taint effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TaintEffect {
    /// `NoSchedule`
    NoSchedule,
    /// `PreferNoSchedule`
    PreferNoSchedule,
    /// `NoExecute`
    NoExecute,
}

/// A node taint.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Taint {
    /// Taint key.
    pub key: String,
    /// Taint value (may be empty).
    pub value: String,
    /// Effect.
    pub effect: TaintEffect,
}

/// A toleration operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TolerationOperator {
    /// `Equal` (the default)
    Equal,
    /// `Exists`
    Exists,
}

/// A pod toleration.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Toleration {
    /// Key; empty with `Exists` matches every key.
    pub key: String,
    /// Operator.
    pub operator: TolerationOperator,
    /// Value for `Equal`.
    pub value: String,
    /// Effect; `None` matches every effect.
    pub effect: Option<TaintEffect>,
    /// For NoExecute: how long the pod stays after the taint appears.
    pub toleration_seconds: Option<i64>,
}
