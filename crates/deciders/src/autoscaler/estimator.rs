//! The binpacking estimator (`estimator/binpacking_estimator.go`,
//! `decreasing_pod_orderer.go`): how many template nodes a group needs for
//! a set of pod equivalence groups, first-fit decreasing.
//!
//! Per equivalence group (ordered by `cpu/allocCPU + mem/allocMem` of the
//! exemplar, descending): first place as many pods as possible on the new
//! nodes added so far (first fit); for the rest, try the last added node;
//! a pod with a hostname spread constraint that fails there on the spread
//! filter may go to any other node of the snapshot; otherwise, if the last
//! node is still empty, the pod cannot fit a fresh node either — move on to
//! the next group; else add a template node if the limiter allows (no
//! permission stops adding for all later groups too) and place the pod; if
//! even a fresh node refuses it, stop this group. The answer is the number
//! of nodes that received a pod and the pods placed (upstream counts any
//! node that received a pod in the pass, which the hostname fallback can
//! make an existing one). The snapshot is reverted afterwards.

use std::collections::BTreeSet;

use super::groups::NodeTemplate;
use super::snapshot::Snapshot;
use crate::cluster::{NodeId, PodId};
use crate::kube::labels::LABEL_HOSTNAME;

/// The estimator's answer.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Estimate {
    /// Nodes that received at least one pod.
    pub node_count: u32,
    /// Pods placed, in placement order.
    pub pods: Vec<PodId>,
}

/// Orders equivalence groups by the exemplar's share of the template's
/// allocatable CPU plus memory, largest first (stable).
pub fn order_decreasing(snapshot: &Snapshot, template: &NodeTemplate, groups: &mut [Vec<PodId>]) {
    let alloc = template.node.allocatable;
    let score = |group: &Vec<PodId>| -> f64 {
        let Some(p) = group.first().and_then(|&id| snapshot.cluster().pod(id)) else {
            return 0.0;
        };
        let share = |req: i64, cap: i64| {
            if cap > 0 {
                req as f64 / cap as f64
            } else {
                0.0
            }
        };
        share(p.spec.requests.cpu_millis(), alloc.cpu_millis())
            + share(p.spec.requests.memory_bytes(), alloc.memory_bytes())
    };
    groups.sort_by(|a, b| score(b).total_cmp(&score(a)));
}

fn uses_hostname_spread(snapshot: &Snapshot, pod: PodId) -> bool {
    snapshot.cluster().pod(pod).is_some_and(|p| {
        p.spec
            .topology_spread
            .iter()
            .any(|c| c.topology_key == LABEL_HOSTNAME)
    })
}

struct Pass {
    new_nodes: Vec<NodeId>,
    with_pods: BTreeSet<NodeId>,
    last: Option<NodeId>,
    pods: Vec<PodId>,
    limit: u32,
}

impl Pass {
    fn track(&mut self, pod: PodId, node: NodeId) {
        self.with_pods.insert(node);
        self.pods.push(pod);
    }
}

/// Estimates `groups` (already ordered) on `template`, adding at most
/// `limit` nodes.
pub fn estimate(
    snapshot: &mut Snapshot,
    template: &NodeTemplate,
    groups: &[Vec<PodId>],
    limit: u32,
) -> Estimate {
    let mark = snapshot.fork();
    let mut pass = Pass {
        new_nodes: Vec::new(),
        with_pods: BTreeSet::new(),
        last: None,
        pods: Vec::new(),
        limit,
    };
    let mut may_add = true;
    for group in groups {
        let mut placed = 0;
        for &pod in group {
            match snapshot.place_first_fit(pod, pass.new_nodes.clone()) {
                Some(node) => {
                    pass.track(pod, node);
                    placed += 1;
                }
                None => break,
            }
        }
        if may_add {
            may_add = on_new_nodes(snapshot, template, &group[placed..], &mut pass);
        }
    }
    snapshot.revert(mark);
    Estimate {
        node_count: pass.with_pods.len() as u32,
        pods: pass.pods,
    }
}

/// Returns whether adding nodes may go on for later groups.
fn on_new_nodes(
    snapshot: &mut Snapshot,
    template: &NodeTemplate,
    pods: &[PodId],
    pass: &mut Pass,
) -> bool {
    for &pod in pods {
        let mut found = false;
        if let Some(last) = pass.last {
            if snapshot.place_first_fit(pod, [last]).is_some() {
                pass.track(pod, last);
                found = true;
            } else if uses_hostname_spread(snapshot, pod) && snapshot.blocked_by_spread(pod, last) {
                let others: Vec<NodeId> = snapshot
                    .schedulable_nodes()
                    .into_iter()
                    .filter(|&n| n != last)
                    .collect();
                if let Some(node) = snapshot.place_first_fit(pod, others) {
                    pass.track(pod, node);
                    found = true;
                }
            }
        }
        if found {
            continue;
        }
        if let Some(last) = pass.last
            && !pass.with_pods.contains(&last)
        {
            return true;
        }
        if pass.new_nodes.len() as u32 >= pass.limit {
            return false;
        }
        let mut node = template.node.clone();
        node.name = format!("e-{}", pass.new_nodes.len());
        node.labels.insert(LABEL_HOSTNAME, node.name.clone());
        let id = snapshot.add_node(node, &template.daemon_pods);
        pass.new_nodes.push(id);
        pass.last = Some(id);
        if snapshot.place_first_fit(pod, [id]).is_some() {
            pass.track(pod, id);
        } else {
            break;
        }
    }
    true
}
