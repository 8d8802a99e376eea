//! Where topology domains come from besides existing nodes: the values each
//! topology key can take on what NodePools could launch (NodePool
//! requirement values and instance-type values), with the taint sets that
//! reach each value (core: topology.go `buildDomainGroups`,
//! topologydomaingroup.go). They depend only on NodePools and catalogs, so
//! they are computed once per key and shared by every solve over the same
//! NodePools.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError};

use crate::kube::requirements::{Requirement, Requirements};
use crate::kube::taints::Taint;

/// A NodePool as a source of domains: its requirements and template labels,
/// its taints, and the requirements of its instance types.
pub(in crate::karpenter::provisioning) struct DomainSource {
    /// NodePool requirements ∩ template labels.
    pub requirements: Requirements,
    /// NodePool taints.
    pub taints: Vec<Taint>,
    /// Requirements of every instance type of the pool.
    pub type_requirements: Arc<Vec<Requirements>>,
}

/// Domains of one key with the taint sets that reach them.
pub(super) type DomainGroup = BTreeMap<String, Vec<Vec<Taint>>>;

/// Every NodePool's domains, by topology key, filled in on first use.
pub(in crate::karpenter::provisioning) struct DomainSources {
    /// In the solve's NodePool order (weight, then name).
    sources: Vec<DomainSource>,
    by_key: Mutex<HashMap<String, Arc<DomainGroup>>>,
}

impl DomainSources {
    /// The sources, in the order the solve tries NodePools.
    pub fn new(sources: Vec<DomainSource>) -> DomainSources {
        DomainSources {
            sources,
            by_key: Mutex::new(HashMap::new()),
        }
    }

    /// The domains of `key`.
    pub(super) fn group(&self, key: &str) -> Arc<DomainGroup> {
        let mut by_key = self.by_key.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(group) = by_key.get(key) {
            return group.clone();
        }
        let group = Arc::new(self.build(key));
        by_key.insert(key.to_string(), group.clone());
        group
    }

    fn build(&self, key: &str) -> DomainGroup {
        let mut group = DomainGroup::new();
        for source in &self.sources {
            let own = source.requirements.get(key);
            for type_reqs in source.type_requirements.iter() {
                let values: Cow<Requirement> = match (own, type_reqs.get(key)) {
                    (Some(a), Some(b)) => Cow::Owned(a.intersection(b)),
                    (Some(a), None) | (None, Some(a)) => Cow::Borrowed(a),
                    (None, None) => continue,
                };
                for value in values.values() {
                    insert_domain(&mut group, value, &source.taints);
                }
            }
            if let Some(own) = own
                && !own.is_complement()
            {
                for value in own.values() {
                    insert_domain(&mut group, value, &source.taints);
                }
            }
        }
        group
    }
}

fn insert_domain(group: &mut DomainGroup, domain: &str, taints: &[Taint]) {
    match group.get_mut(domain) {
        Some(sets) if !taints.is_empty() => {
            if sets.first().is_some_and(|first| !first.is_empty()) {
                sets.push(taints.to_vec());
            }
        }
        _ => {
            group.insert(domain.to_string(), vec![taints.to_vec()]);
        }
    }
}
