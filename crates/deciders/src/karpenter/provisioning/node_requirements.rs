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
        let seen = cache.get(&id);
        if let Some((seen, requirements)) = seen
            && seen == labels
        {
            return requirements.clone();
        }
        let requirements = Arc::new(requirements_of(
            labels,
            seen.map(|(labels, requirements)| (labels, &**requirements)),
        ));
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
        let seen = cache
            .get(&id)
            .map(|seen| (&seen.labels, &*seen.from_labels));
        let from_labels = Arc::new(requirements_of(labels, seen));
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

/// `Requirements::from_labels(labels)`, made from the requirements of the
/// labels `seen` before when `labels` only adds to them (a node gains its
/// registered and initialized labels): adding a label's requirement is
/// the same in any order, as `from_labels` adds them one by one.
fn requirements_of(labels: &Labels, seen: Option<(&Labels, &Requirements)>) -> Requirements {
    let grown = seen.and_then(|(seen_labels, seen_requirements)| {
        Some((labels_added(seen_labels, labels)?, seen_requirements))
    });
    let Some((added, seen_requirements)) = grown else {
        return Requirements::from_labels(labels);
    };
    let mut requirements = seen_requirements.clone();
    for (key, value) in added {
        requirements.add(Requirement::in_values(key, [value]));
    }
    requirements
}

/// The labels of `now` that `before` lacks, when `now` keeps every label
/// of `before` with its value; `None` when one went or changed.
fn labels_added<'l>(before: &Labels, now: &'l Labels) -> Option<Vec<(&'l str, &'l str)>> {
    let mut added = Vec::new();
    let mut before = before.iter().peekable();
    for (key, value) in now.iter() {
        match before.peek() {
            Some(&(was_key, was_value)) if was_key == key => {
                if was_value != value {
                    return None;
                }
                before.next();
            }
            Some(&(was_key, _)) if was_key < key => return None,
            _ => added.push((key, value)),
        }
    }
    before.next().is_none().then_some(added)
}

#[cfg(test)]
mod tests {
    use super::requirements_of;
    use crate::kube::labels::{LABEL_BETA_ZONE, LABEL_TOPOLOGY_ZONE, Labels};
    use crate::kube::requirements::Requirements;

    /// Requirements made from earlier labels equal `from_labels` of the
    /// new ones for every change: labels added (also a beta key beside
    /// its GA key, agreeing or not), removed, changed, or none.
    #[test]
    fn requirements_from_earlier_labels_equal_a_fresh_make() {
        let labels = |pairs: &[(&str, &str)]| -> Labels { pairs.iter().copied().collect() };
        let base = labels(&[("a", "1"), ("m", "2"), (LABEL_TOPOLOGY_ZONE, "z1")]);
        let changes = [
            labels(&[
                ("a", "1"),
                ("m", "2"),
                (LABEL_TOPOLOGY_ZONE, "z1"),
                ("b", "3"),
            ]),
            labels(&[
                ("0", "x"),
                ("a", "1"),
                ("m", "2"),
                (LABEL_TOPOLOGY_ZONE, "z1"),
                ("z", "y"),
            ]),
            labels(&[
                ("a", "1"),
                ("m", "2"),
                (LABEL_TOPOLOGY_ZONE, "z1"),
                (LABEL_BETA_ZONE, "z1"),
            ]),
            labels(&[
                ("a", "1"),
                ("m", "2"),
                (LABEL_TOPOLOGY_ZONE, "z1"),
                (LABEL_BETA_ZONE, "z2"),
            ]),
            labels(&[("a", "1"), (LABEL_TOPOLOGY_ZONE, "z1")]),
            labels(&[("a", "1"), ("m", "9"), (LABEL_TOPOLOGY_ZONE, "z1")]),
            labels(&[("a", "1"), ("n", "2"), (LABEL_TOPOLOGY_ZONE, "z1")]),
            base.clone(),
        ];
        let seen = Requirements::from_labels(&base);
        for now in &changes {
            assert_eq!(
                requirements_of(now, Some((&base, &seen))),
                Requirements::from_labels(now),
                "{now:?}"
            );
        }
        // The beta zone that disagrees leaves the zone key with no value.
        let disagreeing = requirements_of(&changes[3], Some((&base, &seen)));
        assert_ne!(disagreeing, seen);
    }
}
