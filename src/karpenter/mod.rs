//! Karpenter: the `karpenter.sh/v1` NodePool and `karpenter.k8s.aws/v1`
//! EC2NodeClass APIs, and (later) provisioning and disruption.

pub mod disruption;
pub mod ec2nodeclass;
pub mod instance_types;
pub mod manifests;
pub mod nodepool;
pub mod provisioning;

#[cfg(test)]
mod tests;
