//! Counting pods per topology domain, shared by pod topology spread and
//! inter-pod (anti-)affinity in the kube-scheduler model and by the Karpenter
//! provisioner (which adds domains of its own, e.g. zones a NodePool may
//! launch into, but counts the same way).
//!
//! Three pieces:
//! - [`PodMatcher`]: "which pods does this term count" — namespaces plus a
//!   label selector (with `matchLabelKeys` / `mismatchLabelKeys` already
//!   folded in), possibly several AND'ed (required pod affinity counts a pod
//!   only if it matches every term, as InterPodAffinity does).
//! - [`TopologyIndex`]: the domains of one topology key (zone, hostname, any
//!   label) and which domain each node is in, interned to small integers so
//!   per-node checks are an array lookup.
//! - [`MatchingPods`]: per-node counts of pods matching a set of matchers,
//!   built once from a [`Cluster`] and then updated one bind at a time
//!   ([`MatchingPods::record`]) — never rebuilt while one scheduling pass
//!   binds pods.

use std::collections::BTreeMap;

use crate::cluster::{Cluster, NodeId, PodId};
use crate::kube::labels::Labels;
use crate::kube::pod::{PodAffinityTerm, PodSpec, TopologySpreadConstraint};
use crate::kube::selector::{LabelSelector, SelectorExpression, SelectorOperator};

/// The label every Namespace carries with its own name
/// (`kubernetes.io/metadata.name`); the only namespace label karpsim knows,
/// so namespace selectors are evaluated against it alone.
pub const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// Which namespaces a term searches.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NamespaceFilter {
    /// Listed namespaces (sorted).
    pub names: Vec<String>,
    /// A namespace selector, evaluated against the namespace's
    /// `kubernetes.io/metadata.name` label only (Namespace objects are not
    /// modelled). `Some(empty)` selects every namespace.
    pub selector: Option<LabelSelector>,
}

impl NamespaceFilter {
    /// Just one namespace.
    pub fn only(namespace: &str) -> NamespaceFilter {
        NamespaceFilter {
            names: vec![namespace.to_string()],
            selector: None,
        }
    }

    /// Whether `namespace` is searched.
    pub fn matches(&self, namespace: &str) -> bool {
        self.names.iter().any(|n| n == namespace)
            || self
                .selector
                .as_ref()
                .is_some_and(|s| selector_matches_namespace(s, namespace))
    }
}

/// Evaluates `selector` against the labels `{kubernetes.io/metadata.name:
/// namespace}` without building a map.
fn selector_matches_namespace(selector: &LabelSelector, namespace: &str) -> bool {
    let value_of = |key: &str| (key == NAMESPACE_NAME_LABEL).then_some(namespace);
    selector
        .match_labels
        .iter()
        .all(|(k, v)| value_of(k) == Some(v.as_str()))
        && selector.match_expressions.iter().all(|e| {
            let value = value_of(&e.key);
            match e.operator {
                SelectorOperator::In => value.is_some_and(|v| e.values.iter().any(|x| x == v)),
                SelectorOperator::NotIn => value.is_none_or(|v| !e.values.iter().any(|x| x == v)),
                SelectorOperator::Exists => value.is_some(),
                SelectorOperator::DoesNotExist => value.is_none(),
            }
        })
}

/// One conjunct of a [`PodMatcher`]: a namespace filter and a selector.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MatchPart {
    /// Namespaces searched.
    pub namespaces: NamespaceFilter,
    /// Pod label selector (already narrowed by match/mismatch label keys).
    pub selector: LabelSelector,
}

impl MatchPart {
    /// The pods a pod (anti-)affinity term of `owner` counts
    /// (InterPodAffinity): listed namespaces and those selected by the
    /// namespace selector, or the owner's namespace when neither is given;
    /// the selector gains `key In [v]` per `matchLabelKeys` key and
    /// `key NotIn [v]` per `mismatchLabelKeys` key the owner has. `None` when
    /// the term has no selector.
    pub fn for_affinity_term(term: &PodAffinityTerm, owner: &PodSpec) -> Option<MatchPart> {
        let mut selector = term.selector.clone()?;
        for key in &term.match_label_keys {
            if let Some(value) = owner.labels.get(key) {
                selector.require(key, value);
            }
        }
        for key in &term.mismatch_label_keys {
            if let Some(value) = owner.labels.get(key) {
                selector.match_expressions.push(SelectorExpression {
                    key: key.clone(),
                    operator: SelectorOperator::NotIn,
                    values: vec![value.clone()],
                });
            }
        }
        let namespaces = if term.namespaces.is_empty() && term.namespace_selector.is_none() {
            NamespaceFilter::only(&owner.namespace)
        } else {
            let mut names = term.namespaces.clone();
            names.sort();
            names.dedup();
            NamespaceFilter {
                names,
                selector: term.namespace_selector.clone(),
            }
        };
        Some(MatchPart {
            namespaces,
            selector,
        })
    }

    fn matches(&self, pod: &PodSpec) -> bool {
        self.namespaces.matches(&pod.namespace) && self.selector.matches(&pod.labels)
    }
}

/// Which pods a topology spread constraint or a pod (anti-)affinity term
/// counts. Ordered, so call-wide caches can key on it deterministically.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PodMatcher {
    /// All must match.
    pub parts: Vec<MatchPart>,
}

impl PodMatcher {
    /// The pods a spread constraint of `owner` counts: pods in the owner's
    /// namespace matching the selector plus `key In [owner's value]` for each
    /// `matchLabelKeys` key the owner has (PodTopologySpread). `None` when the
    /// constraint has no selector (it matches no pod).
    pub fn for_spread(
        constraint: &TopologySpreadConstraint,
        owner: &PodSpec,
    ) -> Option<PodMatcher> {
        let mut selector = constraint.selector.clone()?;
        for key in &constraint.match_label_keys {
            if let Some(value) = owner.labels.get(key) {
                selector.require(key, value);
            }
        }
        Some(PodMatcher {
            parts: vec![MatchPart {
                namespaces: NamespaceFilter::only(&owner.namespace),
                selector,
            }],
        })
    }

    /// A matcher with one part.
    pub fn single(part: MatchPart) -> PodMatcher {
        PodMatcher { parts: vec![part] }
    }

    /// Whether `pod` is counted. A matcher without parts matches nothing.
    pub fn matches(&self, pod: &PodSpec) -> bool {
        !self.parts.is_empty() && self.parts.iter().all(|p| p.matches(pod))
    }
}

/// Marker for "node has no value for this key".
const NO_DOMAIN: u32 = u32::MAX;

/// The domains of one topology key and the domain of every node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopologyIndex {
    key: String,
    /// Domain values in first-seen order (index = domain id).
    names: Vec<String>,
    by_name: BTreeMap<String, u32>,
    /// Per node slot (`NodeId.0`): domain id or [`NO_DOMAIN`].
    node_domain: Vec<u32>,
}

impl TopologyIndex {
    /// An index with no domains.
    pub fn new(key: &str) -> TopologyIndex {
        TopologyIndex {
            key: key.to_string(),
            names: Vec::new(),
            by_name: BTreeMap::new(),
            node_domain: Vec::new(),
        }
    }

    /// Indexes every live node of `cluster` (in id order) by its value for
    /// `key` (raw label, as kube-scheduler reads it).
    pub fn from_cluster(cluster: &Cluster, key: &str) -> TopologyIndex {
        let mut index = TopologyIndex::new(key);
        for (id, node) in cluster.nodes() {
            index.add_node(id, &node.labels);
        }
        index
    }

    /// The topology key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// Records a node's domain (its value for the key, if any).
    pub fn add_node(&mut self, node: NodeId, labels: &Labels) {
        let slot = node.0 as usize;
        if self.node_domain.len() <= slot {
            self.node_domain.resize(slot + 1, NO_DOMAIN);
        }
        self.node_domain[slot] = match labels.get(&self.key) {
            Some(value) => self.intern(value),
            None => NO_DOMAIN,
        };
    }

    /// The id of domain `name`, adding it if new (a domain may exist before
    /// any node is in it, e.g. a zone a NodePool can launch into).
    pub fn intern(&mut self, name: &str) -> u32 {
        if let Some(&id) = self.by_name.get(name) {
            return id;
        }
        let id = self.names.len() as u32;
        self.names.push(name.to_string());
        self.by_name.insert(name.to_string(), id);
        id
    }

    /// The id of domain `name`, if known.
    pub fn domain_id(&self, name: &str) -> Option<u32> {
        self.by_name.get(name).copied()
    }

    /// The domain of a node (`None`: no label, or node not indexed).
    pub fn domain_of(&self, node: NodeId) -> Option<u32> {
        self.node_domain
            .get(node.0 as usize)
            .copied()
            .filter(|&d| d != NO_DOMAIN)
    }

    /// The value of a domain id.
    pub fn name(&self, domain: u32) -> &str {
        self.names.get(domain as usize).map_or("", String::as_str)
    }

    /// Number of domains.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// Whether there are no domains.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// Domain ids sorted by their value (for deterministic listings).
    pub fn sorted_ids(&self) -> impl Iterator<Item = u32> + '_ {
        self.by_name.values().copied()
    }
}

/// Per-node counts of the pods each registered [`PodMatcher`] matches.
///
/// Building a matcher's counts walks every placed pod once; afterwards each
/// bind costs one `matches` call per matcher ([`MatchingPods::record`]).
#[derive(Debug, Clone, Default)]
pub struct MatchingPods {
    slots: usize,
    ids: BTreeMap<PodMatcher, usize>,
    /// Per matcher, per node slot.
    counts: Vec<Vec<u32>>,
}

/// Handle of a matcher registered in [`MatchingPods`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MatcherId(usize);

impl MatchingPods {
    /// Counts for a cluster whose node ids are below `node_slots`.
    pub fn new(node_slots: usize) -> MatchingPods {
        MatchingPods {
            slots: node_slots,
            ..MatchingPods::default()
        }
    }

    /// Registers `matcher` (reusing an equal one), counting the placed pods
    /// `placed` yields as `(node, pod spec)`; `placed` is only walked for a
    /// new matcher.
    pub fn register<'p, I>(&mut self, matcher: PodMatcher, placed: impl FnOnce() -> I) -> MatcherId
    where
        I: Iterator<Item = (NodeId, &'p PodSpec)>,
    {
        if let Some(&id) = self.ids.get(&matcher) {
            return MatcherId(id);
        }
        let mut counts = vec![0u32; self.slots];
        for (node, pod) in placed() {
            if matcher.matches(pod)
                && let Some(c) = counts.get_mut(node.0 as usize)
            {
                *c += 1;
            }
        }
        let id = self.counts.len();
        self.counts.push(counts);
        self.ids.insert(matcher, id);
        MatcherId(id)
    }

    /// Counts a newly placed pod for every matcher it matches.
    pub fn record(&mut self, node: NodeId, pod: &PodSpec) {
        for (matcher, &id) in &self.ids {
            if matcher.matches(pod)
                && let Some(c) = self.counts[id].get_mut(node.0 as usize)
            {
                *c += 1;
            }
        }
    }

    /// Matching pods on `node`.
    pub fn on_node(&self, id: MatcherId, node: NodeId) -> u32 {
        self.counts
            .get(id.0)
            .and_then(|c| c.get(node.0 as usize))
            .copied()
            .unwrap_or(0)
    }
}

/// Every non-terminal pod bound in `cluster`, as `(node, spec)`, in node
/// then bind order: what kube-scheduler's snapshot holds.
pub fn placed_pods(cluster: &Cluster) -> impl Iterator<Item = (NodeId, &PodSpec)> + '_ {
    cluster.nodes().flat_map(move |(node_id, node)| {
        node.pods
            .iter()
            .filter_map(move |&pod_id| placed_pod(cluster, pod_id).map(|spec| (node_id, spec)))
    })
}

/// The spec of a bound pod that still counts (not finished).
fn placed_pod(cluster: &Cluster, pod: PodId) -> Option<&PodSpec> {
    cluster
        .pod(pod)
        .filter(|p| !p.phase.is_terminal())
        .map(|p| p.spec.as_ref())
}

/// Number of node slots (one past the largest live node id).
pub fn node_slots(cluster: &Cluster) -> usize {
    cluster
        .nodes()
        .last()
        .map_or(0, |(id, _)| id.0 as usize + 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kube::labels::{LABEL_HOSTNAME, LABEL_TOPOLOGY_ZONE};
    use crate::scheduler::testing::{PodBuilder, node, selector};

    /// PodTopologySpread `matchLabelKeys`: the owner's value of each key is
    /// AND'ed into the selector; keys the owner lacks are ignored.
    #[test]
    fn spread_matcher_folds_match_label_keys() {
        let owner = PodBuilder::new("a")
            .label("app", "web")
            .label("pod-template-hash", "v1")
            .spread(LABEL_TOPOLOGY_ZONE, 1, &[("app", "web")])
            .build();
        let mut constraint = owner.spec.topology_spread[0].clone();
        constraint.match_label_keys = vec!["pod-template-hash".into(), "missing".into()];
        let matcher = PodMatcher::for_spread(&constraint, &owner.spec).unwrap();
        let same = PodBuilder::new("b")
            .label("app", "web")
            .label("pod-template-hash", "v1")
            .build();
        let old = PodBuilder::new("c")
            .label("app", "web")
            .label("pod-template-hash", "v0")
            .build();
        let other_ns = PodBuilder::new("d")
            .namespace("other")
            .label("app", "web")
            .label("pod-template-hash", "v1")
            .build();
        assert!(matcher.matches(&same.spec));
        assert!(!matcher.matches(&old.spec));
        assert!(!matcher.matches(&other_ns.spec), "own namespace only");
        constraint.selector = None;
        assert!(PodMatcher::for_spread(&constraint, &owner.spec).is_none());
    }

    /// InterPodAffinity namespaces: empty list and no selector means the
    /// owner's namespace; an empty namespace selector means all; a selector
    /// on `kubernetes.io/metadata.name` selects by name.
    #[test]
    fn affinity_term_namespaces() {
        let owner = PodBuilder::new("a").namespace("team-a").build();
        let mut term = PodAffinityTerm {
            selector: Some(selector(&[("app", "db")])),
            topology_key: LABEL_HOSTNAME.into(),
            namespaces: vec![],
            namespace_selector: None,
            match_label_keys: vec![],
            mismatch_label_keys: vec![],
        };
        let db = |ns: &str| {
            PodBuilder::new("db")
                .namespace(ns)
                .label("app", "db")
                .build()
        };
        let part = MatchPart::for_affinity_term(&term, &owner.spec).unwrap();
        let matcher = PodMatcher::single(part);
        assert!(matcher.matches(&db("team-a").spec));
        assert!(!matcher.matches(&db("team-b").spec));

        term.namespace_selector = Some(LabelSelector::default());
        let all = PodMatcher::single(MatchPart::for_affinity_term(&term, &owner.spec).unwrap());
        assert!(all.matches(&db("team-b").spec));

        term.namespace_selector = Some(selector(&[(NAMESPACE_NAME_LABEL, "team-c")]));
        term.namespaces = vec!["team-b".into()];
        let named = PodMatcher::single(MatchPart::for_affinity_term(&term, &owner.spec).unwrap());
        assert!(named.matches(&db("team-b").spec));
        assert!(named.matches(&db("team-c").spec));
        assert!(!named.matches(&db("team-a").spec));
        assert!(!PodMatcher { parts: vec![] }.matches(&db("team-a").spec));
    }

    /// Counts follow binds incrementally and equal a fresh recount.
    #[test]
    fn matching_pods_update_incrementally() {
        let mut cluster = Cluster::new();
        let a = cluster.add_node(node("a").zone("z1").build());
        let b = cluster.add_node(node("b").zone("z2").build());
        let web = || PodBuilder::new("web").label("app", "web").build();
        let p = cluster.add_pod(web());
        cluster.bind(p, a);
        let matcher = PodMatcher::single(MatchPart {
            namespaces: NamespaceFilter::only("default"),
            selector: selector(&[("app", "web")]),
        });
        let mut counts = MatchingPods::new(node_slots(&cluster));
        let id = counts.register(matcher.clone(), || placed_pods(&cluster));
        assert_eq!((counts.on_node(id, a), counts.on_node(id, b)), (1, 0));
        counts.record(b, &web().spec);
        counts.record(b, &PodBuilder::new("x").build().spec);
        assert_eq!((counts.on_node(id, a), counts.on_node(id, b)), (1, 1));
        assert_eq!(counts.register(matcher, || placed_pods(&cluster)), id);

        let zones = TopologyIndex::from_cluster(&cluster, LABEL_TOPOLOGY_ZONE);
        assert_eq!(zones.len(), 2);
        assert_eq!(zones.domain_of(b).map(|d| zones.name(d)), Some("z2"));
        let hosts = TopologyIndex::from_cluster(&cluster, "missing");
        assert_eq!(hosts.domain_of(a), None);
    }
}
