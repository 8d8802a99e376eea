//! The `autoscaling.x-k8s.io/v1` ProvisioningRequest as the Cluster
//! Autoscaler reads it (kubernetes/autoscaler
//! `cluster-autoscaler/apis/provisioningrequest/autoscaling.x-k8s.io/v1/types.go`):
//! pod sets, each a PodTemplate (already resolved) and a count, and the
//! provisioning class. Pods that will use the capacity name the request in
//! an annotation.

use std::sync::Arc;

use super::pod::PodSpec;

/// The annotation a pod consuming a ProvisioningRequest carries (its value
/// is the request's name, in the pod's namespace).
pub const CONSUME_ANNOTATION: &str = "autoscaling.x-k8s.io/consume-provisioning-request";
/// The deprecated spelling CA still reads (`provisioningrequest/pods`).
pub const DEPRECATED_CONSUME_ANNOTATION: &str =
    "cluster-autoscaler.kubernetes.io/consume-provisioning-request";
/// The annotation naming the class, set on the pods CA makes from a request.
pub const CLASS_ANNOTATION: &str = "autoscaling.x-k8s.io/provisioning-class-name";

/// `spec.provisioningClassName`: the classes CA implements.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ProvisioningClass {
    /// `check-capacity.autoscaling.x-k8s.io`: no scale-up; checks that the
    /// cluster can hold every pod and books that capacity.
    CheckCapacity,
    /// `best-effort-atomic-scale-up.autoscaling.x-k8s.io`: one scale-up for
    /// all the pods, or none.
    BestEffortAtomicScaleUp,
}

impl ProvisioningClass {
    /// The class name as written.
    pub fn name(self) -> &'static str {
        match self {
            ProvisioningClass::CheckCapacity => "check-capacity.autoscaling.x-k8s.io",
            ProvisioningClass::BestEffortAtomicScaleUp => {
                "best-effort-atomic-scale-up.autoscaling.x-k8s.io"
            }
        }
    }

    /// Parses a class name; `None` for a class CA does not implement.
    pub fn parse(name: &str) -> Option<ProvisioningClass> {
        [
            ProvisioningClass::CheckCapacity,
            ProvisioningClass::BestEffortAtomicScaleUp,
        ]
        .into_iter()
        .find(|c| c.name() == name)
    }
}

/// One `spec.podSets` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodSet {
    /// `podTemplateRef.name`.
    pub template_name: String,
    /// The referenced PodTemplate's pod spec.
    pub template: Arc<PodSpec>,
    /// `count` (≥ 1).
    pub count: u32,
}

/// One ProvisioningRequest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProvisioningRequest {
    /// `metadata.name`.
    pub name: String,
    /// `metadata.namespace`.
    pub namespace: String,
    /// `spec.provisioningClassName`.
    pub class: ProvisioningClass,
    /// `spec.podSets`, in order.
    pub pod_sets: Vec<PodSet>,
    /// `spec.parameters.noRetry: "true"` (check-capacity): capacity not
    /// found fails the request instead of retrying it.
    pub no_retry: bool,
}

impl ProvisioningRequest {
    /// Pods the request is for, over all its pod sets.
    pub fn pod_count(&self) -> u32 {
        self.pod_sets.iter().map(|s| s.count).sum()
    }
}

/// The ProvisioningRequest a pod consumes (its annotation, the current
/// spelling first), if any.
pub fn consumed_request(spec: &PodSpec) -> Option<&str> {
    spec.annotations
        .get(CONSUME_ANNOTATION)
        .or_else(|| spec.annotations.get(DEPRECATED_CONSUME_ANNOTATION))
        .map(String::as_str)
}
