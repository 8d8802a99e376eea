//! Where pods are during one scheduling pass: the [`Cluster`] as given plus
//! the binds decided so far in the pass, kept as an overlay (per-node added
//! requests and pods) rather than a cloned cluster. It also owns the
//! call-wide caches that follow binds incrementally: topology indexes,
//! per-node counts of pods matching each spread / affinity matcher, and the
//! required anti-affinity terms of placed pods (which constrain every
//! incoming pod, InterPodAffinity's "existing pods" check).

use std::collections::BTreeMap;

use super::topology::{
    MatchPart, MatcherId, MatchingPods, PodMatcher, TopologyIndex, node_slots, placed_pods,
};
use crate::cluster::{Cluster, Node, NodeId, PodId};
use crate::kube::pod::{HostPort, PodSpec};
use crate::kube::resources::Resources;

/// Handle of a [`TopologyIndex`] held by a [`Placement`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TopologyId(usize);

/// Required anti-affinity terms of placed pods, grouped by term (pods of
/// one workload share a group, so an incoming pod is matched once per
/// workload rather than once per placed pod).
#[derive(Debug, Clone)]
pub struct PlacedAntiAffinity {
    /// Which incoming pods the term repels.
    pub matcher: PodMatcher,
    /// The term's topology key.
    pub topology: TopologyId,
    /// The nodes the term's owners run on (one entry per owner).
    pub nodes: Vec<NodeId>,
}

/// The cluster plus the binds of the current pass.
#[derive(Debug, Clone)]
pub struct Placement<'c> {
    cluster: &'c Cluster,
    /// Node id slots of the cluster (every id ever given out).
    slots: usize,
    /// Per node slot, the index into `added` of what this pass bound
    /// there (`u32::MAX`: nothing); grown on the first bind to a slot, since
    /// a long run has given out far more node ids than it has live nodes.
    added_at: Vec<u32>,
    /// Per node this pass bound to: the node, the requests and the pods.
    added: Vec<(NodeId, Resources, Vec<PodId>)>,
    matching: MatchingPods,
    topology_ids: BTreeMap<String, TopologyId>,
    topologies: Vec<TopologyIndex>,
    anti_affinity: Vec<PlacedAntiAffinity>,
    anti_affinity_ids: BTreeMap<(PodMatcher, TopologyId), usize>,
}

impl<'c> Placement<'c> {
    /// A pass over `cluster` with nothing bound yet. Walks every placed pod
    /// once to collect required anti-affinity terms.
    pub fn new(cluster: &'c Cluster) -> Placement<'c> {
        let slots = node_slots(cluster);
        let mut placement = Placement {
            cluster,
            slots,
            added_at: Vec::new(),
            added: Vec::new(),
            matching: MatchingPods::new(slots),
            topology_ids: BTreeMap::new(),
            topologies: Vec::new(),
            anti_affinity: Vec::new(),
            anti_affinity_ids: BTreeMap::new(),
        };
        // Only required anti-affinity terms are noted.
        if cluster.may_have_anti_affinity_pods() {
            for (node, spec) in placed_pods(cluster) {
                placement.note_anti_affinity(node, spec);
            }
        }
        placement
    }

    /// The cluster underneath.
    pub fn cluster(&self) -> &'c Cluster {
        self.cluster
    }

    /// Records a bind of this pass. The pod must be a live pending pod of
    /// the cluster and the node a live node (otherwise nothing happens).
    pub fn bind(&mut self, pod: PodId, node: NodeId) {
        let slot = node.0 as usize;
        let (Some(p), true) = (self.cluster.pod(pod), slot < self.slots) else {
            return;
        };
        if self.added_at.len() <= slot {
            self.added_at.resize(slot + 1, u32::MAX);
        }
        if self.added_at[slot] == u32::MAX {
            self.added_at[slot] = self.added.len() as u32;
            self.added.push((node, Resources::ZERO, Vec::new()));
        }
        let spec = p.spec.as_ref();
        let (_, requested, pods) = &mut self.added[self.added_at[slot] as usize];
        *requested += spec.requests;
        pods.push(pod);
        self.matching.record(node, spec);
        self.note_anti_affinity(node, spec);
    }

    fn note_anti_affinity(&mut self, node: NodeId, spec: &PodSpec) {
        for term in &spec.pod_anti_affinity.required {
            let Some(part) = MatchPart::for_affinity_term(term, spec) else {
                continue;
            };
            let topology = self.topology(&term.topology_key);
            let key = (PodMatcher::single(part), topology);
            let group = match self.anti_affinity_ids.get(&key) {
                Some(&group) => group,
                None => {
                    self.anti_affinity.push(PlacedAntiAffinity {
                        matcher: key.0.clone(),
                        topology,
                        nodes: Vec::new(),
                    });
                    self.anti_affinity_ids
                        .insert(key, self.anti_affinity.len() - 1);
                    self.anti_affinity.len() - 1
                }
            };
            self.anti_affinity[group].nodes.push(node);
        }
    }

    /// What this pass bound to `node`.
    fn added_on(&self, node: NodeId) -> Option<&(NodeId, Resources, Vec<PodId>)> {
        let at = *self.added_at.get(node.0 as usize)?;
        self.added.get(at as usize)
    }

    /// The pods this pass bound to `node`, in order.
    fn bound_here(&self, node: NodeId) -> &[PodId] {
        self.added_on(node)
            .map_or(&[], |(_, _, pods)| pods.as_slice())
    }

    /// The nodes this pass bound something to.
    pub fn nodes_with_binds(&self) -> impl Iterator<Item = NodeId> + '_ {
        self.added.iter().map(|(node, _, _)| *node)
    }

    /// Whether this pass bound anything to `node`.
    pub fn has_binds_on(&self, node: NodeId) -> bool {
        self.added_on(node).is_some()
    }

    /// Requests of everything bound to `node` (cluster plus this pass).
    pub fn requested(&self, node: NodeId, base: &Node) -> Resources {
        base.requested
            + self
                .added_on(node)
                .map_or(Resources::ZERO, |(_, requested, _)| *requested)
    }

    /// Specs of the non-finished pods on `node`, cluster first, then this
    /// pass's binds in order.
    pub fn pods_on<'s>(
        &'s self,
        node: NodeId,
        base: &'s Node,
    ) -> impl Iterator<Item = &'s PodSpec> + 's {
        base.pods
            .iter()
            .chain(self.bound_here(node))
            .filter_map(|&id| self.cluster.pod(id))
            .filter(|p| !p.phase.is_terminal())
            .map(|p| p.spec.as_ref())
    }

    /// Host ports in use on `node`.
    pub fn host_ports_on<'s>(
        &'s self,
        node: NodeId,
        base: &'s Node,
    ) -> impl Iterator<Item = &'s HostPort> + 's {
        self.pods_on(node, base)
            .flat_map(|spec| spec.host_ports.iter())
    }

    /// The index of topology key `key`, built over every live node on first use.
    pub fn topology(&mut self, key: &str) -> TopologyId {
        if let Some(&id) = self.topology_ids.get(key) {
            return id;
        }
        let id = TopologyId(self.topologies.len());
        self.topologies
            .push(TopologyIndex::from_cluster(self.cluster, key));
        self.topology_ids.insert(key.to_string(), id);
        id
    }

    /// A topology index by handle.
    pub fn topology_index(&self, id: TopologyId) -> &TopologyIndex {
        &self.topologies[id.0]
    }

    /// Registers a matcher; its per-node counts include this pass's binds.
    pub fn matcher(&mut self, matcher: PodMatcher) -> MatcherId {
        let cluster = self.cluster;
        let added = &self.added;
        self.matching.register(matcher, || {
            let in_pass = added.iter().flat_map(move |(node, _, pods)| {
                pods.iter()
                    .filter_map(move |&id| cluster.pod(id).map(|p| (*node, p.spec.as_ref())))
            });
            placed_pods(cluster).chain(in_pass)
        })
    }

    /// Pods matching a registered matcher on `node`.
    pub fn matching_on(&self, id: MatcherId, node: NodeId) -> u32 {
        self.matching.on_node(id, node)
    }

    /// Required anti-affinity terms of every placed pod, grouped by term.
    pub fn placed_anti_affinity(&self) -> &[PlacedAntiAffinity] {
        &self.anti_affinity
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kube::labels::LABEL_HOSTNAME;
    use crate::scheduler::testing::{PodBuilder, node, selector};
    use crate::scheduler::topology::NamespaceFilter;

    fn web_matcher() -> PodMatcher {
        PodMatcher::single(MatchPart {
            namespaces: NamespaceFilter::only("default"),
            selector: selector(&[("app", "web")]),
        })
    }

    /// Binds of the pass show in requests, pod lists and matcher counts,
    /// whether the matcher was registered before or after them; the
    /// cluster itself is untouched.
    #[test]
    fn binds_of_the_pass_are_seen_everywhere() {
        let mut cluster = Cluster::new();
        let a = cluster.add_node(node("a").build());
        let web = |name: &str| {
            PodBuilder::new(name)
                .label("app", "web")
                .requests(100, 0)
                .anti_affinity(LABEL_HOSTNAME, &[("app", "web")])
                .build()
        };
        let p = cluster.add_pod(web("p"));
        let q = cluster.add_pod(web("q"));
        let mut placement = Placement::new(&cluster);
        let early = placement.matcher(web_matcher());
        placement.bind(p, a);
        let late = placement.matcher(PodMatcher {
            parts: vec![web_matcher().parts[0].clone(); 2],
        });
        placement.bind(q, a);
        let base = cluster.node(a).unwrap();
        assert_eq!(placement.requested(a, base).cpu_millis(), 200);
        assert_eq!(placement.pods_on(a, base).count(), 2);
        assert_eq!(placement.matching_on(early, a), 2);
        assert_eq!(placement.matching_on(late, a), 2);
        assert_eq!(base.requested.cpu_millis(), 0, "cluster untouched");
        // Both pods share one anti-affinity group.
        let groups = placement.placed_anti_affinity();
        assert_eq!(groups.len(), 1);
        assert_eq!(groups[0].nodes, vec![a, a]);
    }
}
