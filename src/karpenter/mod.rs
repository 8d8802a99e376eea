//! Karpenter: the `karpenter.sh/v1` NodePool and `karpenter.k8s.aws/v1`
//! EC2NodeClass APIs, and (later) provisioning and disruption.

pub mod disruption;
pub mod ec2nodeclass;
pub mod instance_types;
pub mod manifests;
pub mod nodepool;
pub mod provisioning;

use std::collections::BTreeMap;

/// Updates `pool`'s entry of a per-NodePool map, starting it at the
/// default; the name is copied only for a pool's first entry (these maps
/// are summed over every node of a pass).
pub(crate) fn update_pool_entry<V: Default>(
    by_pool: &mut BTreeMap<String, V>,
    pool: &str,
    update: impl FnOnce(&mut V),
) {
    match by_pool.get_mut(pool) {
        Some(entry) => update(entry),
        None => {
            let mut entry = V::default();
            update(&mut entry);
            by_pool.insert(pool.to_string(), entry);
        }
    }
}

#[cfg(test)]
mod tests;
