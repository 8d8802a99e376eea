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
//! Also kept, by the node's place among the registered nodes: its scoring
//! sums (the requests of the pods bound to it, with scoring's defaults for
//! pods that request nothing) and its free room, which stand while the
//! node's revision does; a call over the same nodes as the last redoes
//! them only for the nodes that changed.
//!
//! And the last FailedScheduling messages built, with the failure tally
//! each was built from: a template that fails as it did (most retries,
//! call after call) gets its message without building it again.

use crate::fast_hash::FastMap;
use std::collections::VecDeque;
use std::sync::Arc;

use super::Room;
use crate::cluster::{Cluster, Node, NodeId};
use crate::kube::pod::PodSpec;
use crate::kube::taints::Taint;
use crate::scheduler::filter::Unfit;

/// Per pod template (pods of one workload share a spec), what its last
/// failed scan found.
#[derive(Debug, Default)]
pub struct FailureMemo {
    /// By the spec's address; the entry holds the spec, so the address is
    /// not given to another spec while the entry lives.
    templates: FastMap<usize, TemplateFailures>,
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
    /// When they are not, the last call's nodes with their revisions then.
    pub(super) previous: Vec<(NodeId, u64)>,
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
/// taint (with the taint's place among the node's and its class, see
/// [`TaintClasses`]).
#[derive(Debug, Default)]
pub(super) struct KeptScan {
    pub(super) nodes: Vec<KeptNode>,
    pub(super) tally: Vec<(Unfit<'static>, usize)>,
    pub(super) call: u64,
    pub(super) unkept: Vec<usize>,
    pub(super) tainted: Vec<(usize, usize, u32)>,
    /// The classes of the taints nodes failed on.
    pub(super) taint_classes: TaintClasses,
}

impl KeptScan {
    /// Lists the positions of the nodes without a kept reason and of those
    /// that failed on a taint (with the taint's place and class), made in
    /// `call`.
    pub(super) fn index(&mut self, call: u64) {
        self.call = call;
        self.unkept.clear();
        self.tainted.clear();
        for (position, node) in self.nodes.iter().enumerate() {
            match node.reason {
                None => self.unkept.push(position),
                Some(KeptReason::Taint { at, class }) => self.tainted.push((position, at, class)),
                Some(KeptReason::Own(_)) => {}
            }
        }
    }
}

/// Classes of taints: equal taints have one class. A node's taint lives
/// apart from every other node's, so comparing the taints of two nodes
/// reads two places in memory; their classes, kept with the nodes'
/// reasons, are compared instead.
#[derive(Debug, Default)]
pub(super) struct TaintClasses(Vec<Taint>);

impl TaintClasses {
    /// The class of `taint`.
    pub(super) fn of(&mut self, taint: &Taint) -> u32 {
        let class = match self.0.iter().position(|t| t == taint) {
            Some(class) => class,
            None => {
                self.0.push(taint.clone());
                self.0.len() - 1
            }
        };
        class as u32
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
    /// TaintToleration, for the node's taint at place `at` (the node
    /// names it; counted scan by scan), of class `class` (see
    /// [`TaintClasses`]).
    Taint { at: usize, class: u32 },
}

impl KeptReason {
    /// The reason to keep for a node that failed for `unfit` (see
    /// [`Unfit::node_local`]; a taint is kept by its place among `node`'s
    /// and its class among `classes`).
    pub(super) fn of(
        unfit: Unfit<'_>,
        node: &Node,
        classes: &mut TaintClasses,
    ) -> Option<KeptReason> {
        match unfit {
            Unfit::UntoleratedTaint(taint) => node
                .taints
                .iter()
                .position(|t| std::ptr::eq(t, taint))
                .map(|at| KeptReason::Taint {
                    at,
                    class: classes.of(taint),
                }),
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
        let mut previous = Vec::new();
        if same_nodes {
            for (position, (id, revision)) in self.last_nodes.iter_mut().enumerate() {
                let now = cluster.node_revision(*id);
                if now != *revision {
                    changed.push(position);
                    *revision = now;
                }
            }
        } else {
            previous = std::mem::take(&mut self.last_nodes);
            self.last_nodes
                .extend(nodes.iter().map(|&(id, _)| (id, cluster.node_revision(id))));
        }
        CallChanges {
            call: self.call,
            same_nodes,
            changed,
            previous,
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

/// Per registered node of the last call (by position, in id order), as
/// the cluster had it then: the scoring sums of the pods bound to it (when
/// a scan needed them) and its free room.
#[derive(Debug, Default)]
pub struct NodeSums {
    score: Vec<Option<[i64; 2]>>,
    free: Vec<Room>,
}

impl NodeSums {
    /// A slot per node of `nodes` (registered, in id order): the kept
    /// scoring sums of the nodes unchanged since the last call (none for
    /// the others), and every node's free room.
    pub(super) fn seed(
        &mut self,
        cluster: &Cluster,
        nodes: &[(NodeId, &Node)],
        changes: &CallChanges,
    ) -> (Vec<Option<[i64; 2]>>, Vec<Room>) {
        let mut score = std::mem::take(&mut self.score);
        let mut free = std::mem::take(&mut self.free);
        if changes.same_nodes && score.len() == nodes.len() && free.len() == nodes.len() {
            redo(
                nodes,
                &mut score,
                &mut free,
                changes.changed.iter().copied(),
            );
            return (score, free);
        }
        // Other nodes than the last call's: match the kept slots by id.
        let mut kept = changes.previous.iter().zip(score).peekable();
        let score = nodes
            .iter()
            .map(|&(id, _)| {
                while kept.next_if(|((kept_id, _), _)| *kept_id < id).is_some() {}
                kept.next_if(|((kept_id, _), _)| *kept_id == id)
                    .filter(|((_, revision), _)| *revision == cluster.node_revision(id))
                    .and_then(|(_, sums)| sums)
            })
            .collect();
        free.clear();
        free.extend(nodes.iter().map(|(_, node)| Room::free_on(node)));
        (score, free)
    }

    /// Keeps `score` and `free` (from [`NodeSums::seed`], changed by the
    /// call's binds) as the cluster has them: the slots of the nodes at
    /// `bound` (positions of the nodes the call bound pods to) are redone.
    pub(super) fn keep(
        &mut self,
        nodes: &[(NodeId, &Node)],
        mut score: Vec<Option<[i64; 2]>>,
        mut free: Vec<Room>,
        bound: impl Iterator<Item = usize>,
    ) {
        redo(nodes, &mut score, &mut free, bound);
        self.score = score;
        self.free = free;
    }
}

/// Redoes the slots of the nodes at `positions` as the cluster has them:
/// no scoring sums (summed again when a scan needs them) and their free
/// room read again.
fn redo(
    nodes: &[(NodeId, &Node)],
    score: &mut [Option<[i64; 2]>],
    free: &mut [Room],
    positions: impl Iterator<Item = usize>,
) {
    for position in positions {
        score[position] = None;
        free[position] = Room::free_on(nodes[position].1);
    }
}

/// How many messages [`MessageCache`] keeps.
const MESSAGES_KEPT: usize = 32;

/// The last FailedScheduling messages built (most recent last), each with
/// the node count and failure tally it was built from.
#[derive(Debug, Default)]
pub struct MessageCache {
    messages: VecDeque<KeptMessage>,
}

#[derive(Debug)]
struct KeptMessage {
    nodes: usize,
    tally: Vec<(TallyEntry, usize)>,
    message: Arc<str>,
}

/// A failure reason as a message reads it, without a borrow of the node:
/// an untolerated taint by its key and value (what the message quotes).
#[derive(Debug, PartialEq)]
enum TallyEntry {
    Reason(Unfit<'static>),
    Taint(String, String),
}

impl TallyEntry {
    fn of(unfit: Unfit<'_>) -> TallyEntry {
        match unfit.without_borrow() {
            Ok(reason) => TallyEntry::Reason(reason),
            Err(taint) => TallyEntry::Taint(taint.key.clone(), taint.value.clone()),
        }
    }

    fn is(&self, unfit: Unfit<'_>) -> bool {
        match (self, unfit.without_borrow()) {
            (TallyEntry::Reason(kept), Ok(reason)) => *kept == reason,
            (TallyEntry::Taint(key, value), Err(taint)) => {
                *key == taint.key && *value == taint.value
            }
            _ => false,
        }
    }
}

impl MessageCache {
    /// The message for `node_count` nodes failing as `failures` tally,
    /// kept or made by `build`.
    pub(super) fn get(
        &mut self,
        node_count: usize,
        failures: &[(Unfit<'_>, usize)],
        build: impl FnOnce() -> String,
    ) -> Arc<str> {
        let same = |kept: &&KeptMessage| {
            kept.nodes == node_count
                && kept.tally.len() == failures.len()
                && kept
                    .tally
                    .iter()
                    .zip(failures)
                    .all(|((entry, n), (unfit, m))| n == m && entry.is(*unfit))
        };
        if let Some(kept) = self.messages.iter().rev().find(same) {
            return kept.message.clone();
        }
        let message: Arc<str> = build().into();
        if self.messages.len() == MESSAGES_KEPT {
            self.messages.pop_front();
        }
        let tally = failures
            .iter()
            .map(|(unfit, n)| (TallyEntry::of(*unfit), *n))
            .collect();
        self.messages.push_back(KeptMessage {
            nodes: node_count,
            tally,
            message: message.clone(),
        });
        message
    }
}
