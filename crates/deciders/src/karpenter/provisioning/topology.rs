//! Karpenter's topology model for one solve (core: scheduling/topology.go,
//! topologygroup.go, topologynodefilter.go, topologydomaingroup.go):
//! spread constraints, pod affinity and pod anti-affinity as groups of
//! domain counts that narrow a node's requirements to allowed domains.
//!
//! Unlike kube-scheduler, domains also come from what NodePools could
//! launch (NodePool requirement values and instance-type values), so an
//! empty zone counts as a domain before any node exists there. Where
//! upstream picks among equal candidates by map order, this model picks the
//! smallest domain name.
//!
//! Submodule `view`: one pod's view of the groups while it is tried on
//! every node, with cheap certain rejections.

use std::collections::BTreeMap;
use std::hash::{BuildHasher, BuildHasherDefault};

use super::node_requirements::NodeRequirements;
use super::pod::{PodWork, strict_requirements};
use crate::fast_hash::{FastHasher, FastMap};
use crate::kube::labels::{LABEL_HOSTNAME, LabelKeySet, Labels};
use crate::kube::pod::{InclusionPolicy, PodAffinityTerm, PodSpec};
use crate::kube::requirements::{Requirement, Requirements};
use crate::kube::selector::LabelSelector;
use crate::kube::taints::{Taint, Toleration, tolerates_all};
use crate::scheduler::{Cluster, Node, NodeId, PodId};

/// What a topology group enforces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(super) enum TopologyKind {
    /// A topology spread constraint.
    Spread,
    /// Pod affinity.
    Affinity,
    /// Pod anti-affinity.
    AntiAffinity,
}

impl TopologyKind {
    fn describe(self) -> &'static str {
        match self {
            TopologyKind::Spread => "topology spread",
            TopologyKind::Affinity => "pod affinity",
            TopologyKind::AntiAffinity => "pod anti-affinity",
        }
    }
}

/// Namespaces a group counts pods in.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Namespaces {
    /// These namespaces (sorted).
    List(Vec<String>),
    /// A namespace selector: namespace labels are not modelled, so every
    /// namespace is taken to match.
    All,
}

impl Namespaces {
    fn contains(&self, namespace: &str) -> bool {
        match self {
            Namespaces::List(list) => list.iter().any(|n| n == namespace),
            Namespaces::All => true,
        }
    }
}

/// Which nodes a spread constraint counts (core: topologynodefilter.go).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
struct NodeFilter {
    /// Alternatives (nodeSelector ∩ each required term); empty = any node.
    requirements: Vec<Requirements>,
    honor_affinity: bool,
    honor_taints: bool,
    tolerations: Vec<Toleration>,
}

impl NodeFilter {
    fn for_spread(spec: &PodSpec, taints: InclusionPolicy, affinity: InclusionPolicy) -> Self {
        let selector: Requirements = spec
            .node_selector
            .iter()
            .map(|(k, v)| Requirement::in_values(k, [v.as_str()]))
            .collect();
        let requirements = if spec.node_affinity.required.is_empty() {
            vec![selector]
        } else {
            spec.node_affinity
                .required
                .iter()
                .filter_map(|term| crate::kube::pod::term_requirements(term).ok())
                .map(|term| {
                    let mut r = selector.clone();
                    r.add_all(&term);
                    r
                })
                .collect()
        };
        NodeFilter {
            requirements,
            honor_affinity: affinity == InclusionPolicy::Honor,
            honor_taints: taints == InclusionPolicy::Honor,
            tolerations: spec.tolerations.clone(),
        }
    }

    /// Whether [`NodeFilter::matches`] needs the node's requirements: not
    /// when affinity is ignored, and not when some alternative is empty
    /// (every node is compatible with no requirements).
    fn reads_node(&self) -> bool {
        self.honor_affinity
            && !self.requirements.is_empty()
            && !self.requirements.iter().any(Requirements::is_empty)
    }

    fn matches(&self, taints: &[Taint], node: &Requirements, allow: &LabelKeySet) -> bool {
        let affinity = !self.honor_affinity
            || self.requirements.is_empty()
            || self
                .requirements
                .iter()
                .any(|r| node.is_compatible(r, allow));
        let tolerated = !self.honor_taints || tolerates_all(taints, &self.tolerations).is_ok();
        affinity && tolerated
    }
}

/// Identity of a group: pods whose constraints build equal keys share it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct GroupKey {
    key: String,
    kind: TopologyKind,
    namespaces: Namespaces,
    max_skew: i32,
    min_domains: Option<i32>,
    filter: NodeFilter,
    /// `None` selects nothing (a nil selector, as upstream).
    selector: Option<LabelSelector>,
}

/// Domain counts of one group.
#[derive(Debug, Clone)]
struct Group {
    spec: GroupKey,
    domains: BTreeMap<String, i32>,
    /// How many of `domains` count no pod (registered, nothing recorded).
    empty_domains: usize,
    /// Hostname groups: pods recorded on each NodeClaim of this solve (by
    /// claim index). A lower bound of the claim hostname's count in
    /// `domains` (other records may reach the same name), so a rejection
    /// it implies is certain.
    claim_counts: Vec<i32>,
    /// How many NodeClaims `claim_counts` counts a pod on.
    claims_counted: usize,
}

impl Group {
    fn selects(&self, spec: &PodSpec) -> bool {
        self.spec.namespaces.contains(&spec.namespace)
            && self
                .spec
                .selector
                .as_ref()
                .is_some_and(|s| s.matches(&spec.labels))
    }

    fn record(&mut self, domain: &str) {
        match self.domains.get_mut(domain) {
            Some(count) => {
                if *count == 0 {
                    self.empty_domains -= 1;
                }
                *count += 1;
            }
            None => {
                self.domains.insert(domain.to_string(), 1);
            }
        }
    }

    /// Counts a pod this group selects, placed on a node with `taints`
    /// and `node` requirements (see [`Topology::record`]), if the group's
    /// node filter counts that node.
    fn record_placed(
        &mut self,
        taints: &[Taint],
        node: &Requirements,
        allow: &LabelKeySet,
        claim: Option<(usize, &str)>,
    ) {
        if !self.spec.filter.matches(taints, node, allow) {
            return;
        }
        let Some(domains) = node.get(&self.spec.key) else {
            return;
        };
        if domains.is_complement() {
            return;
        }
        let values = domains.values().to_vec();
        if self.spec.kind == TopologyKind::AntiAffinity {
            for value in &values {
                self.record(value);
                self.record_on_claim(value, claim);
            }
        } else if let [only] = values.as_slice() {
            self.record(only);
            self.record_on_claim(only, claim);
        }
    }

    fn record_claim(&mut self, claim: usize) {
        if self.claim_counts.len() <= claim {
            self.claim_counts.resize(claim + 1, 0);
        }
        self.claims_counted += usize::from(self.claim_counts[claim] == 0);
        self.claim_counts[claim] += 1;
    }

    /// Also counts `domain` against the claim when it is the claim's host.
    fn record_on_claim(&mut self, domain: &str, claim: Option<(usize, &str)>) {
        if let Some((index, host)) = claim
            && self.spec.key == LABEL_HOSTNAME
            && domain == host
        {
            self.record_claim(index);
        }
    }

    fn claim_count(&self, claim: usize) -> i32 {
        self.claim_counts.get(claim).copied().unwrap_or(0)
    }

    fn register(&mut self, domain: &str) {
        if !self.domains.contains_key(domain) {
            self.domains.insert(domain.to_string(), 0);
            self.empty_domains += 1;
        }
    }

    fn count(&self, domain: &str) -> i32 {
        self.domains.get(domain).copied().unwrap_or(0)
    }

    /// The allowed domains for a pod on a node (`DoesNotExist` = none).
    fn next(
        &self,
        pod: &PodSpec,
        pod_domains: &Requirement,
        node_domains: &Requirement,
    ) -> Requirement {
        match self.spec.kind {
            TopologyKind::Spread => self.next_spread(pod, pod_domains, node_domains),
            TopologyKind::Affinity => self.next_affinity(pod, pod_domains, node_domains),
            TopologyKind::AntiAffinity => self.next_anti_affinity(pod_domains, node_domains),
        }
    }

    fn single_host<'r>(&self, node_domains: &'r Requirement) -> Option<&'r str> {
        (self.spec.key == LABEL_HOSTNAME
            && !node_domains.is_complement()
            && node_domains.values().len() == 1)
            .then(|| node_domains.values()[0].as_str())
    }

    fn none(&self) -> Requirement {
        Requirement::does_not_exist(&self.spec.key)
    }

    fn one(&self, domain: &str) -> Requirement {
        Requirement::in_values(&self.spec.key, [domain])
    }

    fn next_spread<'d>(
        &'d self,
        pod: &PodSpec,
        pod_domains: &Requirement,
        node_domains: &'d Requirement,
    ) -> Requirement {
        let own = i32::from(self.selects(pod));
        if let Some(host) = self.single_host(node_domains) {
            return if self.count(host) + own <= self.spec.max_skew {
                self.one(host)
            } else {
                self.none()
            };
        }
        let min = self.min_count(pod_domains);
        // The valid domain with the lowest count; ties go to the first in
        // name order.
        let mut best: Option<(&str, i32)> = None;
        let mut consider = |domain: &'d str, count: i32| {
            let count = count + own;
            if count - min <= self.spec.max_skew && best.is_none_or(|(_, c)| count < c) {
                best = Some((domain, count));
            }
        };
        if !node_domains.is_complement() {
            for domain in node_domains.values() {
                if let Some((domain, &count)) = self.domains.get_key_value(domain.as_str()) {
                    consider(domain, count);
                }
            }
        } else {
            for (domain, &count) in &self.domains {
                if node_domains.has(domain) {
                    consider(domain, count);
                }
            }
        }
        match best {
            Some((domain, _)) => self.one(domain),
            None => self.none(),
        }
    }

    /// Smallest count over the domains the pod allows; 0 for hostname, or
    /// when fewer than `minDomains` domains are eligible.
    fn min_count(&self, pod_domains: &Requirement) -> i32 {
        if self.spec.key == LABEL_HOSTNAME {
            return 0;
        }
        let mut min = i32::MAX;
        let mut eligible = 0;
        for (domain, &count) in &self.domains {
            if pod_domains.has(domain) {
                eligible += 1;
                min = min.min(count);
            }
        }
        if self.spec.min_domains.is_some_and(|m| eligible < m) {
            min = 0;
        }
        min
    }

    /// Whether affinity may start the group on a node without a selected
    /// pod: the pod selects itself and no allowed domain holds one yet.
    fn may_bootstrap(&self, pod: &PodSpec, pod_domains: &Requirement) -> bool {
        self.selects(pod)
            && (self.domains.len() == self.empty_domains
                || !self
                    .domains
                    .iter()
                    .any(|(d, &c)| c > 0 && pod_domains.has(d)))
    }

    fn next_affinity(
        &self,
        pod: &PodSpec,
        pod_domains: &Requirement,
        node_domains: &Requirement,
    ) -> Requirement {
        let mut options: Vec<String> = Vec::new();
        let bootstrap = || self.may_bootstrap(pod, pod_domains);
        if let Some(host) = self.single_host(node_domains) {
            if pod_domains.has(host) && (self.count(host) > 0 || bootstrap()) {
                options.push(host.to_string());
            }
            return Requirement::in_values(&self.spec.key, options);
        }
        if !node_domains.is_complement() {
            for domain in node_domains.values() {
                if pod_domains.has(domain) && self.domains.get(domain).is_some_and(|&c| c > 0) {
                    options.push(domain.clone());
                }
            }
        } else {
            for (domain, &count) in &self.domains {
                if count > 0 && pod_domains.has(domain) && node_domains.has(domain) {
                    options.push(domain.clone());
                }
            }
        }
        if options.is_empty() && bootstrap() {
            // A self-selecting pod may start the group anywhere it is
            // allowed, preferring a domain the node already has.
            let both = pod_domains.intersection(node_domains);
            if let Some(domain) = self.domains.keys().find(|d| both.has(d)) {
                options.push(domain.clone());
            }
            if let Some(domain) = self.domains.keys().find(|d| pod_domains.has(d)) {
                options.push(domain.clone());
            }
        }
        Requirement::in_values(&self.spec.key, options)
    }

    fn next_anti_affinity(
        &self,
        pod_domains: &Requirement,
        node_domains: &Requirement,
    ) -> Requirement {
        if let Some(host) = self.single_host(node_domains) {
            let options: Vec<&str> = if self.count(host) == 0 {
                vec![host]
            } else {
                vec![]
            };
            return Requirement::in_values(&self.spec.key, options);
        }
        let options: Vec<&String> = self
            .domains
            .iter()
            .filter(|&(d, &count)| count == 0 && node_domains.has(d) && pod_domains.has(d))
            .map(|(d, _)| d)
            .collect();
        Requirement::in_values(&self.spec.key, options.into_iter().cloned())
    }
}

mod domains;
mod view;

pub(super) use domains::{DomainSource, DomainSources};
pub(super) use view::PodTopology;

/// The topology state of one solve.
pub(super) struct Topology<'a> {
    cluster: &'a Cluster,
    /// Topology domains from what the NodePools could launch.
    domains: &'a DomainSources,
    node_requirements: &'a NodeRequirements,
    /// Pods of the batch, sorted: not counted from the cluster.
    excluded: Vec<PodId>,
    groups: Vec<Group>,
    index: FastMap<GroupKey, usize>,
    inverse: Vec<Group>,
    inverse_index: FastMap<GroupKey, usize>,
    owned: FastMap<PodId, Vec<usize>>,
    inverse_owned: FastMap<PodId, Vec<usize>>,
    /// How many groups (of both kinds) count hostname domains.
    hostname_groups: usize,
    /// Which groups select a pod, by the hash of its namespace and labels
    /// (all a selection reads): a solve records many pods alike.
    selected: FastMap<u64, Vec<SelectedBy>>,
}

/// From how many groups [`Topology::record`] looks up the groups that
/// select a pod instead of matching each group's selector.
const SELECTED_LOOKED_UP_FROM: usize = 4;

/// The groups that select the pods of one namespace and label set.
struct SelectedBy {
    namespace: String,
    labels: BTreeMap<String, String>,
    /// Their indices among the first `of` groups (groups are only added).
    groups: Vec<usize>,
    of: usize,
}

/// The indices of the `groups` that select `spec`, from `selected`
/// (`Topology::selected`), brought up to date with groups made since.
fn groups_selecting<'s>(
    selected: &'s mut FastMap<u64, Vec<SelectedBy>>,
    groups: &[Group],
    spec: &PodSpec,
) -> &'s [usize] {
    let key = BuildHasherDefault::<FastHasher>::default().hash_one((&spec.namespace, &spec.labels));
    let alike = selected.entry(key).or_default();
    let at = match alike
        .iter()
        .position(|s| s.namespace == spec.namespace && s.labels == spec.labels)
    {
        Some(at) => at,
        None => {
            alike.push(SelectedBy {
                namespace: spec.namespace.clone(),
                labels: spec.labels.clone(),
                groups: Vec::new(),
                of: 0,
            });
            alike.len() - 1
        }
    };
    let entry = &mut alike[at];
    for (index, group) in groups.iter().enumerate().skip(entry.of) {
        if group.selects(spec) {
            entry.groups.push(index);
        }
    }
    entry.of = groups.len();
    &entry.groups
}

/// The running pods whose required anti-affinity every solve over
/// `cluster` must respect: bound to a node, not terminal, with a required
/// anti-affinity term; in pod order.
pub(super) fn anti_affinity_pods(cluster: &Cluster) -> Vec<PodId> {
    if !cluster.may_have_anti_affinity_pods() {
        return Vec::new();
    }
    cluster
        .pods()
        .filter(|(_, pod)| {
            pod.node.and_then(|n| cluster.node(n)).is_some()
                && !pod.phase.is_terminal()
                && !pod.spec.pod_anti_affinity.required.is_empty()
        })
        .map(|(id, _)| id)
        .collect()
}

/// Why a topology rule admits no domain.
pub(super) struct TopologyError(pub String);

impl<'a> Topology<'a> {
    /// Builds the state: inverse anti-affinity of running pods (those of
    /// [`anti_affinity_pods`], which is what it finds in `cluster`), then
    /// the groups of every batch pod.
    pub fn new(
        cluster: &'a Cluster,
        domains: &'a DomainSources,
        node_requirements: &'a NodeRequirements,
        batch: &[PodWork<'_>],
        anti_affinity_pods: &[PodId],
    ) -> Self {
        let mut topology = Topology {
            cluster,
            domains,
            node_requirements,
            // Read only when a group is made, and only pods with terms (or
            // running pods with anti-affinity) make one.
            excluded: if anti_affinity_pods.is_empty()
                && batch.iter().all(|p| !p.spec.has_topology_terms())
            {
                Vec::new()
            } else {
                let mut ids: Vec<PodId> = batch.iter().map(|p| p.id).collect();
                ids.sort_unstable();
                ids
            },
            groups: Vec::new(),
            index: FastMap::default(),
            inverse: Vec::new(),
            inverse_index: FastMap::default(),
            owned: FastMap::default(),
            inverse_owned: FastMap::default(),
            hostname_groups: 0,
            selected: FastMap::default(),
        };
        for &id in anti_affinity_pods {
            let Some(pod) = cluster.pod(id) else { continue };
            let Some(node) = pod.node.and_then(|n| cluster.node(n)) else {
                continue;
            };
            if topology.excluded.binary_search(&id).is_ok() {
                continue;
            }
            topology.update_inverse(id, &pod.spec, Some(&node.labels));
        }
        for pod in batch {
            topology.update(pod.id, &pod.spec);
        }
        topology
    }

    /// A new group, which the caller keeps (counted in `hostname_groups`
    /// here, the one place groups are made).
    fn new_group(&mut self, spec: GroupKey, pod: &PodSpec) -> Group {
        self.hostname_groups += usize::from(spec.key == LABEL_HOSTNAME);
        let honor_taints = spec.filter.honor_taints;
        let mut group = Group {
            domains: BTreeMap::new(),
            empty_domains: 0,
            claim_counts: Vec::new(),
            claims_counted: 0,
            spec,
        };
        for (domain, taint_sets) in self.domains.group(&group.spec.key).iter() {
            let reachable = !honor_taints
                || taint_sets
                    .iter()
                    .any(|taints| tolerates_all(taints, &pod.tolerations).is_ok());
            if reachable {
                group.register(domain);
            }
        }
        group
    }

    /// Counts running pods and registers registered nodes' domains.
    fn count_existing(&self, group: &mut Group) {
        let no_allow = LabelKeySet::new();
        let filter = &group.spec.filter;
        // Whether the filter counts a node, asked once per node; the
        // node's labels become requirements only when the filter reads them.
        let mut counted: FastMap<NodeId, bool> = FastMap::default();
        let mut counts_node = |id: NodeId, node: &Node| {
            *counted.entry(id).or_insert_with(|| {
                if filter.reads_node() {
                    let labels = self.node_requirements.of_node(id, &node.labels);
                    filter.matches(&node.taints, &labels, &no_allow)
                } else {
                    filter.matches(&node.taints, &Requirements::new(), &no_allow)
                }
            })
        };
        let mut registered = Vec::new();
        for (id, node) in self.cluster.nodes() {
            if !node.registered {
                continue;
            }
            if let Some(domain) = node.labels.get(&group.spec.key)
                && counts_node(id, node)
            {
                registered.push(domain);
            }
        }
        // The pods bound to live nodes, read through their nodes' lists
        // (the cluster keeps every bound pod on its node's) rather than
        // every pod the cluster has held.
        let mut recorded = Vec::new();
        for (node_id, node) in self.cluster.nodes() {
            for &id in &node.pods {
                let Some(pod) = self.cluster.pod(id) else {
                    continue;
                };
                if pod.node != Some(node_id)
                    || pod.phase.is_terminal()
                    || self.excluded.binary_search(&id).is_ok()
                    || !group.selects(&pod.spec)
                {
                    continue;
                }
                let domain = match node.labels.get(&group.spec.key) {
                    Some(d) => d,
                    None if group.spec.key == LABEL_HOSTNAME => node.name.as_str(),
                    None => break,
                };
                if !counts_node(node_id, node) {
                    break;
                }
                recorded.push(domain);
            }
        }
        for domain in registered {
            group.register(domain);
        }
        for domain in recorded {
            group.record(domain);
        }
    }

    fn update_inverse(&mut self, id: PodId, spec: &PodSpec, node_labels: Option<&Labels>) {
        for term in &spec.pod_anti_affinity.required {
            let key = affinity_key(TopologyKind::AntiAffinity, term, spec);
            let index = match self.inverse_index.get(&key) {
                Some(&i) => i,
                None => {
                    let group = self.new_group(key.clone(), spec);
                    self.inverse.push(group);
                    self.inverse_index.insert(key, self.inverse.len() - 1);
                    self.inverse.len() - 1
                }
            };
            if let Some(domain) = node_labels.and_then(|l| l.get(&self.inverse[index].spec.key)) {
                let domain = domain.to_string();
                self.inverse[index].record(&domain);
            }
            let owned = self.inverse_owned.entry(id).or_default();
            if !owned.contains(&index) {
                owned.push(index);
            }
        }
    }

    /// (Re)builds the groups a batch pod owns from its current spec.
    pub fn update(&mut self, id: PodId, spec: &PodSpec) {
        // Only these terms make groups.
        if !spec.has_topology_terms() {
            if !self.owned.is_empty() {
                self.owned.remove(&id);
            }
            return;
        }
        if !spec.pod_anti_affinity.is_empty() {
            self.update_inverse(id, spec, None);
        }
        let mut keys = Vec::new();
        for tsc in &spec.topology_spread {
            let mut selector = tsc.selector.clone();
            if let Some(selector) = selector.as_mut() {
                for key in &tsc.match_label_keys {
                    if let Some(value) = spec.labels.get(key) {
                        selector.require(key, value);
                    }
                }
            }
            keys.push(GroupKey {
                key: tsc.topology_key.clone(),
                kind: TopologyKind::Spread,
                namespaces: Namespaces::List(vec![spec.namespace.clone()]),
                max_skew: tsc.max_skew,
                min_domains: tsc.min_domains,
                filter: NodeFilter::for_spread(
                    spec,
                    tsc.node_taints_policy,
                    tsc.node_affinity_policy,
                ),
                selector,
            });
        }
        let affinity = spec
            .pod_affinity
            .required
            .iter()
            .chain(spec.pod_affinity.preferred.iter().map(|w| &w.term));
        for term in affinity {
            keys.push(affinity_key(TopologyKind::Affinity, term, spec));
        }
        let anti = spec
            .pod_anti_affinity
            .required
            .iter()
            .chain(spec.pod_anti_affinity.preferred.iter().map(|w| &w.term));
        for term in anti {
            keys.push(affinity_key(TopologyKind::AntiAffinity, term, spec));
        }
        let mut owned = Vec::with_capacity(keys.len());
        for key in keys {
            let index = match self.index.get(&key) {
                Some(&i) => i,
                None => {
                    let mut group = self.new_group(key.clone(), spec);
                    self.count_existing(&mut group);
                    self.groups.push(group);
                    self.index.insert(key, self.groups.len() - 1);
                    self.groups.len() - 1
                }
            };
            if !owned.contains(&index) {
                owned.push(index);
            }
        }
        if owned.is_empty() {
            if !self.owned.is_empty() {
                self.owned.remove(&id);
            }
        } else {
            self.owned.insert(id, owned);
        }
    }

    /// Registers a new hostname domain in every hostname group.
    /// Whether any group counts hostname domains (only then does
    /// [`Topology::register_host`] change anything).
    pub fn tracks_hostnames(&self) -> bool {
        self.groups
            .iter()
            .chain(self.inverse.iter())
            .any(|group| group.spec.key == LABEL_HOSTNAME)
    }

    pub fn register_host(&mut self, hostname: &str) {
        for group in self.groups.iter_mut().chain(self.inverse.iter_mut()) {
            if group.spec.key == LABEL_HOSTNAME {
                group.register(hostname);
            }
        }
    }

    /// [`Topology::register_host`] for a NodeClaim's hostname each time a
    /// pod joins it (upstream `NodeClaim.Add`), done only when a hostname
    /// group was made since: `registered` is the number of hostname groups
    /// at the claim's last registration. Groups are only ever added and
    /// domains never removed, so the earlier groups still hold it.
    pub fn register_claim_host(&mut self, hostname: &str, registered: &mut usize) {
        if *registered != self.hostname_groups {
            self.register_host(hostname);
            *registered = self.hostname_groups;
        }
    }

    /// Counts a placed pod in every group that selects it; `claim` is the
    /// index and hostname of the NodeClaim of this solve it joined, if any.
    pub fn record(
        &mut self,
        pod: &PodWork<'_>,
        taints: &[Taint],
        node: &Requirements,
        allow: &LabelKeySet,
        claim: Option<(usize, &str)>,
    ) {
        // A few selectors cost less to match than the lookup of a memo.
        if self.groups.len() < SELECTED_LOOKED_UP_FROM {
            for group in &mut self.groups {
                if group.selects(&pod.spec) {
                    group.record_placed(taints, node, allow, claim);
                }
            }
        } else {
            for &index in groups_selecting(&mut self.selected, &self.groups, &pod.spec) {
                self.groups[index].record_placed(taints, node, allow, claim);
            }
        }
        if let Some(owned) = self.inverse_owned.get(&pod.id) {
            for &index in owned {
                let group = &mut self.inverse[index];
                if let Some(domains) = node.get(&group.spec.key)
                    && !domains.is_complement()
                {
                    for value in domains.values().to_vec() {
                        group.record(&value);
                        group.record_on_claim(&value, claim);
                    }
                }
            }
        }
    }
}

fn affinity_key(kind: TopologyKind, term: &PodAffinityTerm, spec: &PodSpec) -> GroupKey {
    let namespaces = if term.namespace_selector.is_some() {
        Namespaces::All
    } else if term.namespaces.is_empty() {
        Namespaces::List(vec![spec.namespace.clone()])
    } else {
        let mut list = term.namespaces.clone();
        list.sort();
        list.dedup();
        Namespaces::List(list)
    };
    GroupKey {
        key: term.topology_key.clone(),
        kind,
        namespaces,
        max_skew: i32::MAX,
        min_domains: None,
        filter: NodeFilter::default(),
        selector: term.selector.clone(),
    }
}

/// Strict requirements of a spec, or none if its terms are invalid.
pub(super) fn strict_or_empty(spec: &PodSpec) -> Requirements {
    strict_requirements(spec).unwrap_or_default()
}
