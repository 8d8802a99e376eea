//! Kubernetes vocabulary: quantities, resource vectors, labels and the
//! requirements algebra, taints and tolerations, pod scheduling constraints,
//! and reading real manifests into these compact forms.

pub mod labels;
pub mod names;
pub mod pod;
pub mod provisioning_request;
pub mod quantity;
pub mod requirements;
pub mod resources;
pub mod selector;
pub mod taints;
pub mod workload;

pub use labels::Labels;
pub use quantity::{Quantity, QuantityError};
pub use requirements::{Operator, Requirement, RequirementError, Requirements};
pub use resources::{ResourceKind, ResourceNames, Resources};
pub use taints::{Taint, TaintEffect, Toleration, TolerationOperator};
