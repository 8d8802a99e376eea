//! What kube-scheduler's failed scans found on nodes without room, kept
//! across calls. A node without a pod's cpu, memory or pod slots free fails
//! it on its own account: the first failing plugin is NodeUnschedulable,
//! TaintToleration, NodeAffinity, NodePorts or NodeResourcesFit, which read
//! only the node and the pods bound to it (topology spread and inter-pod
//! affinity come after NodeResourcesFit). So while the node's revision
//! stands, a pod of the same template fails there for the same reason, and
//! a template's next failed scan filters only the nodes that changed.
//!
//! Also kept: each node's scoring sums (the requests of the pods bound to
//! it, with scoring's defaults for pods that request nothing), which stand
//! while the node's revision does.

use std::collections::HashMap;
use std::sync::Arc;

use crate::cluster::{Cluster, Node, NodeId};
use crate::kube::pod::PodSpec;
use crate::scheduler::filter::Unfit;

/// Per pod template (pods of one workload share a spec), the reasons its
/// last failed scan found on nodes without room.
#[derive(Debug, Default)]
pub struct FailureMemo {
    /// By the spec's address; the entry holds the spec, so the address is
    /// not given to another spec while the entry lives.
    templates: HashMap<usize, TemplateFailures>,
}

/// Node, its revision, and why it failed, in node id order.
pub(super) type Reasons = Vec<(NodeId, u64, Unfit<'static>)>;

#[derive(Debug)]
struct TemplateFailures {
    _spec: Arc<PodSpec>,
    reasons: Reasons,
    /// The list before, emptied: the next scan writes into it (a scan's
    /// list has an entry per node without room, written anew every time).
    spare: Reasons,
    used: bool,
}

impl FailureMemo {
    /// The reasons kept for `spec`'s template, and an empty list to write
    /// the new ones into.
    pub(super) fn take(&mut self, spec: &Arc<PodSpec>) -> (Remembered, Reasons) {
        let key = Arc::as_ptr(spec) as usize;
        let (reasons, spare) = self
            .templates
            .get_mut(&key)
            .map(|t| (std::mem::take(&mut t.reasons), std::mem::take(&mut t.spare)))
            .unwrap_or_default();
        (Remembered { reasons, next: 0 }, spare)
    }

    /// Keeps `reasons` (made from a walk of `walked`) for `spec`, marked as
    /// used in this call, and `walked`'s list for the next scan to write.
    pub(super) fn keep(&mut self, spec: &Arc<PodSpec>, reasons: Reasons, walked: Remembered) {
        let key = Arc::as_ptr(spec) as usize;
        let mut spare = walked.reasons;
        spare.clear();
        self.templates.insert(
            key,
            TemplateFailures {
                _spec: spec.clone(),
                reasons,
                spare,
                used: true,
            },
        );
    }

    /// Forgets the templates no scan of this call failed (their pods were
    /// bound or are gone), and starts the next call's marks.
    pub(super) fn end_call(&mut self) {
        self.templates.retain(|_, t| std::mem::take(&mut t.used));
    }

    /// How many templates are kept.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.templates.len()
    }
}

/// A template's kept reasons, looked up in node id order.
pub(super) struct Remembered {
    reasons: Reasons,
    next: usize,
}

impl Remembered {
    /// The reason kept for `node` at `revision`, if any. Calls must come in
    /// ascending node id order.
    pub(super) fn reason(&mut self, node: NodeId, revision: u64) -> Option<Unfit<'static>> {
        while let Some(&(id, kept_revision, unfit)) = self.reasons.get(self.next) {
            if id > node {
                return None;
            }
            self.next += 1;
            if id == node {
                return (kept_revision == revision).then_some(unfit);
            }
        }
        None
    }
}

/// Per node, the scoring sums of the pods bound to it (cpu, memory) at a
/// revision, in node id order.
#[derive(Debug, Default)]
pub struct ScoreSums {
    sums: Vec<(NodeId, u64, [i64; 2])>,
}

impl ScoreSums {
    /// A slot per node of `nodes` (in id order): the kept sums of the nodes
    /// unchanged since, none for the others.
    pub(super) fn seed(
        &self,
        cluster: &Cluster,
        nodes: &[(NodeId, &Node)],
    ) -> Vec<Option<[i64; 2]>> {
        let mut kept = self.sums.iter().peekable();
        nodes
            .iter()
            .map(|&(id, _)| {
                while kept.next_if(|(kept_id, _, _)| *kept_id < id).is_some() {}
                kept.next_if(|(kept_id, _, _)| *kept_id == id)
                    .filter(|(_, revision, _)| *revision == cluster.node_revision(id))
                    .map(|&(_, _, sums)| sums)
            })
            .collect()
    }

    /// Keeps the sums of `slots` (by position in `nodes`, in id order) as
    /// the cluster has them, `bound_this_call` giving what this call's
    /// binds added to a node's slot.
    pub(super) fn keep(
        &mut self,
        cluster: &Cluster,
        nodes: &[(NodeId, &Node)],
        slots: &[Option<[i64; 2]>],
        bound_this_call: impl Fn(NodeId) -> [i64; 2],
    ) {
        self.sums.clear();
        for (&(id, _), slot) in nodes.iter().zip(slots) {
            if let Some([cpu, mem]) = *slot {
                let [bound_cpu, bound_mem] = bound_this_call(id);
                self.sums.push((
                    id,
                    cluster.node_revision(id),
                    [cpu - bound_cpu, mem - bound_mem],
                ));
            }
        }
    }
}
