//! Node labels as requirements, made once per node while its labels (and
//! hostname) stay the same: every solve of a run reads them for the same
//! nodes again and again. Kept by the solve setup (`prepared`), read by
//! existing-node views and topology.

use crate::fast_hash::FastMap;
use std::sync::{Arc, Mutex, PoisonError};

use crate::cluster::NodeId;
use crate::kube::labels::{LABEL_HOSTNAME, Labels};
use crate::kube::requirements::{Requirement, Requirements};

/// The requirements of node labels, by node.
#[derive(Default)]
pub(super) struct NodeRequirements {
    /// By node, with the labels they were made from (a node whose labels
    /// differ is made again).
    from_labels: Mutex<FastMap<NodeId, (Labels, Arc<Requirements>)>>,
    /// Existing nodes' label requirements with and without their hostname
    /// requirement, by node, with the labels and hostname they were made
    /// from.
    existing: Mutex<FastMap<NodeId, ExistingNodeRequirements>>,
}

/// A node's labels and hostname, and the requirements made from them.
struct ExistingNodeRequirements {
    labels: Labels,
    hostname: String,
    from_labels: Arc<Requirements>,
    with_hostname: Arc<Requirements>,
}

impl NodeRequirements {
    /// `Requirements::from_labels(labels)` of node `id`, made once while
    /// its labels stay the same.
    pub(super) fn of_node(&self, id: NodeId, labels: &Labels) -> Arc<Requirements> {
        let mut cache = self
            .from_labels
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some((seen, requirements)) = cache.get(&id)
            && seen == labels
        {
            return requirements.clone();
        }
        let requirements = Arc::new(Requirements::from_labels(labels));
        cache.insert(id, (labels.clone(), requirements.clone()));
        requirements
    }

    /// `Requirements::from_labels(labels)` of node `id`, and the same plus
    /// `hostname In [hostname]`, made once while its labels and hostname
    /// stay the same.
    pub(super) fn of_existing_node(
        &self,
        id: NodeId,
        labels: &Labels,
        hostname: &str,
    ) -> (Arc<Requirements>, Arc<Requirements>) {
        let mut cache = self.existing.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(seen) = cache.get(&id)
            && seen.hostname == hostname
            && seen.labels == *labels
        {
            return (seen.from_labels.clone(), seen.with_hostname.clone());
        }
        let from_labels = Arc::new(Requirements::from_labels(labels));
        let mut with_hostname = Requirements::clone(&from_labels);
        with_hostname.add(Requirement::in_values(LABEL_HOSTNAME, [hostname]));
        let with_hostname = Arc::new(with_hostname);
        cache.insert(
            id,
            ExistingNodeRequirements {
                labels: labels.clone(),
                hostname: hostname.to_string(),
                from_labels: from_labels.clone(),
                with_hostname: with_hostname.clone(),
            },
        );
        (from_labels, with_hostname)
    }

    /// Takes over what `other` made (it keeps nothing): requirements
    /// depend on labels and hostname alone, so a new solve setup starts
    /// with the last one's.
    pub(super) fn take_from(&self, other: &NodeRequirements) {
        let from_labels = take(&other.from_labels);
        let existing = take(&other.existing);
        *self
            .from_labels
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = from_labels;
        *self.existing.lock().unwrap_or_else(PoisonError::into_inner) = existing;
    }
}

/// The map behind `lock`, leaving it empty.
fn take<T: Default>(lock: &Mutex<T>) -> T {
    std::mem::take(&mut *lock.lock().unwrap_or_else(PoisonError::into_inner))
}
