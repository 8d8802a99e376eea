//! What kube-scheduler's failed scans found on nodes without room, kept
//! across calls. A node without a pod's cpu, memory or pod slots free fails
//! it on its own account: the first failing plugin is NodeUnschedulable,
//! TaintToleration, NodeAffinity, NodePorts or NodeResourcesFit, which read
//! only the node and the pods bound to it (topology spread and inter-pod
//! affinity come after NodeResourcesFit). So while the node's revision
//! stands, a pod of the same template fails there for the same reason, and
//! a template's next failed scan filters only the nodes that changed.

use std::collections::HashMap;
use std::sync::Arc;

use crate::kube::pod::PodSpec;
use crate::scheduler::cluster::NodeId;
use crate::scheduler::filter::Unfit;

/// Per pod template (pods of one workload share a spec), the reasons its
/// last failed scan found on nodes without room.
#[derive(Debug, Default)]
pub struct FailureMemo {
    /// By the spec's address; the entry holds the spec, so the address is
    /// not given to another spec while the entry lives.
    templates: HashMap<usize, TemplateFailures>,
}

#[derive(Debug)]
struct TemplateFailures {
    _spec: Arc<PodSpec>,
    /// Node, its revision, and why it failed, in node id order.
    reasons: Vec<(NodeId, u64, Unfit<'static>)>,
    used: bool,
}

impl FailureMemo {
    /// The reasons kept for `spec`'s template (marked as used in this call).
    pub(super) fn take(&mut self, spec: &Arc<PodSpec>) -> Remembered {
        let key = Arc::as_ptr(spec) as usize;
        let reasons = self
            .templates
            .get_mut(&key)
            .map(|t| std::mem::take(&mut t.reasons))
            .unwrap_or_default();
        Remembered { reasons, next: 0 }
    }

    /// Keeps `reasons` (made from a [`Remembered`] walk) for `spec`.
    pub(super) fn keep(
        &mut self,
        spec: &Arc<PodSpec>,
        reasons: Vec<(NodeId, u64, Unfit<'static>)>,
    ) {
        let key = Arc::as_ptr(spec) as usize;
        self.templates.insert(
            key,
            TemplateFailures {
                _spec: spec.clone(),
                reasons,
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
    reasons: Vec<(NodeId, u64, Unfit<'static>)>,
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
