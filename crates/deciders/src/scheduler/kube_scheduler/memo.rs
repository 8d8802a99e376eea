//! What kube-scheduler's failed scans found, kept across calls. A node
//! that fails a pod in one of the plugins that read only the node and the
//! pods bound to it (NodeUnschedulable, TaintToleration, NodeAffinity,
//! NodePorts, NodeResourcesFit, which run before topology spread and
//! inter-pod affinity) fails it on its own account: while the node's
//! revision stands, a pod of the same template fails there for the same
//! reason. So a template's next scan filters only the nodes that changed
//! (or came, or took a pod earlier in the same call), and its message
//! starts from the kept tally of the others. Each call notes which nodes
//! changed since the last one, so that a scan kept from the last call
//! needs no walk over every node to find them.
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
    /// Calls begun.
    call: u64,
    /// The registered nodes of the last call begun, with their revisions.
    last_nodes: Vec<(NodeId, u64)>,
}

/// How the registered nodes of this call differ from the last call's.
#[derive(Debug, Default)]
pub(super) struct CallChanges {
    /// This call's number.
    pub(super) call: u64,
    /// Whether the nodes are the last call's, in the same order.
    pub(super) same_nodes: bool,
    /// When they are, the positions of those whose revision changed since.
    pub(super) changed: Vec<usize>,
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
///
/// Also, for a scan made in the last call or this one, so that the next
/// can look only at what changed: the call it was made in, and the
/// positions of the nodes to filter again and of those that failed on a
/// taint.
#[derive(Debug, Default)]
pub(super) struct KeptScan {
    pub(super) nodes: Vec<KeptNode>,
    pub(super) tally: Vec<(Unfit<'static>, usize)>,
    pub(super) call: u64,
    pub(super) unkept: Vec<usize>,
    pub(super) tainted: Vec<(usize, usize)>,
}

impl KeptScan {
    /// Lists the positions of the nodes without a kept reason and of those
    /// that failed on a taint (with the taint's place), made in `call`.
    pub(super) fn index(&mut self, call: u64) {
        self.call = call;
        self.unkept.clear();
        self.tainted.clear();
        for (position, node) in self.nodes.iter().enumerate() {
            match node.reason {
                None => self.unkept.push(position),
                Some(KeptReason::Taint(at)) => self.tainted.push((position, at)),
                Some(KeptReason::Own(_)) => {}
            }
        }
    }
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

    /// Begins a call over `nodes` (registered, in id order): how they
    /// differ from the last call's.
    pub(super) fn begin_call(
        &mut self,
        cluster: &Cluster,
        nodes: &[(NodeId, &Node)],
    ) -> CallChanges {
        self.call += 1;
        let same_nodes = self.last_nodes.len() == nodes.len()
            && self
                .last_nodes
                .iter()
                .zip(nodes)
                .all(|((was, _), (id, _))| was == id);
        let mut changed = Vec::new();
        if same_nodes {
            for (position, (id, revision)) in self.last_nodes.iter_mut().enumerate() {
                let now = cluster.node_revision(*id);
                if now != *revision {
                    changed.push(position);
                    *revision = now;
                }
            }
        } else {
            self.last_nodes.clear();
            self.last_nodes
                .extend(nodes.iter().map(|&(id, _)| (id, cluster.node_revision(id))));
        }
        CallChanges {
            call: self.call,
            same_nodes,
            changed,
        }
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
