//! What kube-scheduler's failed scans found, kept across calls. A node
//! that fails a pod in one of the plugins that read only the node and the
//! pods bound to it (NodeUnschedulable, TaintToleration, NodeAffinity,
//! NodePorts, NodeResourcesFit, which run before topology spread and
//! inter-pod affinity) fails it on its own account: while the node's
//! revision stands, a pod of the same template fails there for the same
//! reason. So a template's next scan filters only the nodes that changed
//! (or came, or took a pod earlier in the same call), and its message
//! starts from the kept tally of the others.
//!
//! Also kept: each node's scoring sums (the requests of the pods bound to
//! it, with scoring's defaults for pods that request nothing), which stand
//! while the node's revision does.

use std::collections::HashMap;
use std::sync::Arc;

use crate::cluster::{Cluster, Node, NodeId};
use crate::kube::pod::PodSpec;
use crate::scheduler::filter::Unfit;

/// Per pod template (pods of one workload share a spec), what its last
/// failed scan found.
#[derive(Debug, Default)]
pub struct FailureMemo {
    /// By the spec's address; the entry holds the spec, so the address is
    /// not given to another spec while the entry lives.
    templates: HashMap<usize, TemplateFailures>,
}

#[derive(Debug)]
struct TemplateFailures {
    _spec: Arc<PodSpec>,
    scan: KeptScan,
    used: bool,
}

/// A template's failed scan: every node it looked at, in node id order,
/// with the node's revision then and the reason it failed there when that
/// reason was the node's own (`None`: filter it again next time), and the
/// count of each kept reason but taints.
#[derive(Debug, Default)]
pub(super) struct KeptScan {
    pub(super) nodes: Vec<KeptNode>,
    pub(super) tally: Vec<(Unfit<'static>, usize)>,
}

/// One node of a [`KeptScan`].
#[derive(Debug, Clone, Copy)]
pub(super) struct KeptNode {
    pub(super) id: NodeId,
    pub(super) revision: u64,
    pub(super) reason: Option<KeptReason>,
}

/// Why a node failed a template, read from the node alone.
#[derive(Debug, Clone, Copy)]
pub(super) enum KeptReason {
    /// A reason without a borrow of the node (in the scan's tally).
    Own(Unfit<'static>),
    /// TaintToleration, for the node's taint at this position (the node
    /// names it; counted scan by scan).
    Taint(usize),
}

impl KeptReason {
    /// The reason to keep for a node that failed for `unfit` (see
    /// [`Unfit::node_local`]; a taint is kept by its place among `node`'s).
    pub(super) fn of(unfit: Unfit<'_>, node: &Node) -> Option<KeptReason> {
        match unfit {
            Unfit::UntoleratedTaint(taint) => node
                .taints
                .iter()
                .position(|t| std::ptr::eq(t, taint))
                .map(KeptReason::Taint),
            other => other.node_local().map(KeptReason::Own),
        }
    }
}

impl FailureMemo {
    /// The last failed scan kept for `spec`'s template, if any (handed
    /// back with [`FailureMemo::keep`]).
    pub(super) fn take(&mut self, spec: &Arc<PodSpec>) -> Option<KeptScan> {
        let key = Arc::as_ptr(spec) as usize;
        self.templates
            .get_mut(&key)
            .map(|t| std::mem::take(&mut t.scan))
    }

    /// Keeps `scan` for `spec`, marked as used in this call.
    pub(super) fn keep(&mut self, spec: &Arc<PodSpec>, scan: KeptScan) {
        let key = Arc::as_ptr(spec) as usize;
        self.templates.insert(
            key,
            TemplateFailures {
                _spec: spec.clone(),
                scan,
                used: true,
            },
        );
    }

    /// Forgets the templates no scan of this call used (their pods were
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
