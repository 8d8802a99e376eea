//! "Does this pod fit this node": the kube-scheduler Filter plugins karpsim
//! models, as reusable predicates, each failing with a short reason
//! ([`Unfit`]) that prints as kube-scheduler's own message fragment.
//!
//! | predicate | kube-scheduler plugin |
//! |---|---|
//! | [`node_state`] | NodeUnschedulable (+ nodes not yet registered are not candidates) |
//! | [`untolerated_taint`] | TaintToleration (NoSchedule / NoExecute block; PreferNoSchedule only scores) |
//! | [`node_affinity_matches`] | NodeAffinity (`nodeSelector` AND required terms OR'ed) |
//! | [`host_ports_conflict`] | NodePorts |
//! | [`resource_shortfall`] | NodeResourcesFit |
//! | [`spread::SpreadFilter`] | PodTopologySpread (DoNotSchedule) |
//! | [`interpod::AffinityFilter`] | InterPodAffinity (required terms) |
//!
//! The simple predicates look at one node and allocate nothing. The two
//! inter-pod filters are prepared once per incoming pod (kube-scheduler's
//! PreFilter: counting matching pods per topology domain, O(nodes)) and then
//! answer per node in O(terms). [`PodFilter`] runs them all in
//! kube-scheduler's plugin order and stops at the first failing plugin, as
//! the framework does.

pub mod interpod;
pub mod spread;
#[cfg(test)]
mod tests;

use std::fmt;

use super::placement::Placement;
use crate::cluster::{Cluster, Node, NodeId};
use crate::kube::labels::Labels;
use crate::kube::pod::{HostPort, NodeSelectorExpression, PodSpec};
use crate::kube::requirements::Operator;
use crate::kube::resources::{ResourceKind, ResourceNames, Resources, SLOTS};
use crate::kube::taints::{Taint, TaintEffect, Toleration};

/// Taint key kube-scheduler checks tolerations against on cordoned nodes.
pub const UNSCHEDULABLE_TAINT_KEY: &str = "node.kubernetes.io/unschedulable";

/// Resource kinds a node lacks for a pod, as a bit set over resource slots.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct Shortfall(u32);

impl Shortfall {
    /// Whether nothing is short.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Whether `kind` is short.
    pub fn contains(self, kind: ResourceKind) -> bool {
        self.0 & (1 << kind.slot()) != 0
    }

    fn insert(&mut self, slot: usize) {
        self.0 |= 1 << slot;
    }

    /// The short kinds, in slot order (cpu, memory, ephemeral-storage, pods, …).
    pub fn kinds(self) -> impl Iterator<Item = ResourceKind> {
        (0..SLOTS)
            .filter(move |slot| self.0 & (1 << slot) != 0)
            .map(kind_of_slot)
    }
}

fn kind_of_slot(slot: usize) -> ResourceKind {
    match ResourceKind::WELL_KNOWN.get(slot) {
        Some(&kind) => kind,
        None => ResourceKind::Extra((slot - ResourceKind::WELL_KNOWN.len()) as u8),
    }
}

/// Why a node was filtered out for a pod.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unfit<'n> {
    /// The NodeClaim has no Node yet (never a kube-scheduler candidate).
    NotRegistered,
    /// NodeUnschedulable: the node is cordoned (karpsim: marked for deletion).
    Unschedulable,
    /// TaintToleration: the first NoSchedule/NoExecute taint not tolerated.
    UntoleratedTaint(&'n Taint),
    /// NodeAffinity: `nodeSelector` or required node affinity not met.
    NodeAffinity,
    /// NodePorts: a requested host port is taken.
    HostPorts,
    /// NodeResourcesFit: these resources are short.
    Resources(Shortfall),
    /// PodTopologySpread: the node lacks a constraint's topology label.
    SpreadMissingLabel,
    /// PodTopologySpread: placing the pod here exceeds `maxSkew`.
    Spread,
    /// InterPodAffinity: required pod affinity not met.
    PodAffinity,
    /// InterPodAffinity: the pod's required anti-affinity is violated.
    PodAntiAffinity,
    /// InterPodAffinity: a placed pod's anti-affinity repels this pod.
    ExistingPodsAntiAffinity,
}

impl<'n> Unfit<'n> {
    /// The same reason when one of the plugins that read only the node and
    /// the pods bound to it gave it (those before topology spread and
    /// inter-pod affinity), without its borrow of the node: `None` for an
    /// untolerated taint (which names one) and for the plugins that read
    /// other nodes too.
    pub fn node_local(self) -> Option<Unfit<'static>> {
        match self.without_borrow() {
            Ok(
                local @ (Unfit::NotRegistered
                | Unfit::Unschedulable
                | Unfit::NodeAffinity
                | Unfit::HostPorts
                | Unfit::Resources(_)),
            ) => Some(local),
            _ => None,
        }
    }

    /// The same reason without its borrow of the node, or the untolerated
    /// taint it names.
    pub fn without_borrow(self) -> Result<Unfit<'static>, &'n Taint> {
        Ok(match self {
            Unfit::UntoleratedTaint(taint) => return Err(taint),
            Unfit::NotRegistered => Unfit::NotRegistered,
            Unfit::Unschedulable => Unfit::Unschedulable,
            Unfit::NodeAffinity => Unfit::NodeAffinity,
            Unfit::HostPorts => Unfit::HostPorts,
            Unfit::Resources(short) => Unfit::Resources(short),
            Unfit::SpreadMissingLabel => Unfit::SpreadMissingLabel,
            Unfit::Spread => Unfit::Spread,
            Unfit::PodAffinity => Unfit::PodAffinity,
            Unfit::PodAntiAffinity => Unfit::PodAntiAffinity,
            Unfit::ExistingPodsAntiAffinity => Unfit::ExistingPodsAntiAffinity,
        })
    }

    /// The message fragments kube-scheduler reports for this reason (one per
    /// short resource for NodeResourcesFit), using `names` for extended
    /// resources.
    pub fn messages(&self, names: &ResourceNames) -> Vec<String> {
        match self {
            Unfit::Resources(short) => short
                .kinds()
                .map(|kind| match kind {
                    ResourceKind::Pods => "Too many pods".to_string(),
                    kind => format!("Insufficient {}", names.name(kind)),
                })
                .collect(),
            other => vec![other.to_string()],
        }
    }
}

/// kube-scheduler's wording (its plugins' `ErrReason…` strings).
impl fmt::Display for Unfit<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unfit::NotRegistered => f.write_str("node(s) were not registered"),
            Unfit::Unschedulable => f.write_str("node(s) were unschedulable"),
            Unfit::UntoleratedTaint(t) => {
                write!(
                    f,
                    "node(s) had untolerated taint {{{}: {}}}",
                    t.key, t.value
                )
            }
            Unfit::NodeAffinity => f.write_str("node(s) didn't match Pod's node affinity/selector"),
            Unfit::HostPorts => {
                f.write_str("node(s) didn't have free ports for the requested pod ports")
            }
            Unfit::Resources(short) => {
                let names = ResourceNames::default();
                let parts = Unfit::Resources(*short).messages(&names);
                f.write_str(&parts.join(", "))
            }
            Unfit::SpreadMissingLabel => f.write_str(
                "node(s) didn't match pod topology spread constraints (missing required label)",
            ),
            Unfit::Spread => f.write_str("node(s) didn't match pod topology spread constraints"),
            Unfit::PodAffinity => f.write_str("node(s) didn't match pod affinity rules"),
            Unfit::PodAntiAffinity => f.write_str("node(s) didn't match pod anti-affinity rules"),
            Unfit::ExistingPodsAntiAffinity => {
                f.write_str("node(s) didn't satisfy existing pods anti-affinity rules")
            }
        }
    }
}

/// Node state: unregistered NodeClaims take no pods; a node marked for
/// deletion is cordoned (NodeUnschedulable), unless the pod tolerates
/// `node.kubernetes.io/unschedulable:NoSchedule`.
pub fn node_state(node: &Node, tolerations: &[Toleration]) -> Result<(), Unfit<'static>> {
    if !node.registered {
        return Err(Unfit::NotRegistered);
    }
    if node.marked_for_deletion {
        let cordon = Taint::new(UNSCHEDULABLE_TAINT_KEY, "", TaintEffect::NoSchedule);
        if !tolerations.iter().any(|t| t.tolerates(&cordon)) {
            return Err(Unfit::Unschedulable);
        }
    }
    Ok(())
}

/// TaintToleration filter: the first NoSchedule or NoExecute taint (in node
/// order) that no toleration tolerates. PreferNoSchedule never blocks.
pub fn untolerated_taint<'n>(taints: &'n [Taint], tolerations: &[Toleration]) -> Option<&'n Taint> {
    taints.iter().find(|taint| {
        taint.effect != TaintEffect::PreferNoSchedule
            && !tolerations.iter().any(|t| t.tolerates(taint))
    })
}

/// Whether one node-selector expression holds on `labels` (raw keys, as
/// kube-scheduler reads them): `NotIn` and `DoesNotExist` hold when the
/// label is absent; `Gt`/`Lt` need both sides to parse as integers.
pub fn expression_matches(expression: &NodeSelectorExpression, labels: &Labels) -> bool {
    let value = labels.get(&expression.key);
    let values = &expression.values;
    let as_int = |v: &str| v.parse::<i64>().ok();
    let compare = |accept: fn(i64, i64) -> bool| match (
        value.and_then(as_int),
        values.first().and_then(|v| as_int(v)),
    ) {
        (Some(have), Some(bound)) => accept(have, bound),
        _ => false,
    };
    match expression.operator {
        Operator::In => value.is_some_and(|v| values.iter().any(|x| x == v)),
        Operator::NotIn => value.is_none_or(|v| !values.iter().any(|x| x == v)),
        Operator::Exists => value.is_some(),
        Operator::DoesNotExist => value.is_none(),
        Operator::Gt => compare(|have, bound| have > bound),
        Operator::Lt => compare(|have, bound| have < bound),
        // Not valid in pods; read as their NodePool meaning.
        Operator::Gte => compare(|have, bound| have >= bound),
        Operator::Lte => compare(|have, bound| have <= bound),
    }
}

/// Whether a node-selector term (expressions AND'ed) holds. A term with no
/// expressions matches nothing, as in Kubernetes (karpsim keeps no
/// `matchFields`, so a term that only had those matches nothing).
pub fn term_matches(term: &[NodeSelectorExpression], labels: &Labels) -> bool {
    !term.is_empty() && term.iter().all(|e| expression_matches(e, labels))
}

/// NodeAffinity filter: every `nodeSelector` entry, and one of the required
/// node-affinity terms (when there are any).
pub fn node_affinity_matches(spec: &PodSpec, labels: &Labels) -> bool {
    spec.node_selector
        .iter()
        .all(|(k, v)| labels.get(k) == Some(v.as_str()))
        && (spec.node_affinity.required.is_empty()
            || spec
                .node_affinity
                .required
                .iter()
                .any(|term| term_matches(term, labels)))
}

/// NodeResourcesFit filter: the resources whose request exceeds
/// `allocatable − requested`. `Resources::fits` answers the common case;
/// only a failing node is examined per kind (a negative free amount of a
/// resource the pod does not request does not block, as upstream).
pub fn resource_shortfall(
    requests: &Resources,
    allocatable: &Resources,
    requested: &Resources,
) -> Shortfall {
    let free = *allocatable - *requested;
    let mut short = Shortfall::default();
    if requests.fits(&free) {
        return short;
    }
    for (kind, want) in requests.iter() {
        if want > 0 && want > free.get(kind) {
            short.insert(kind.slot());
        }
    }
    short
}

fn protocol_of(port: &HostPort) -> &str {
    if port.protocol.is_empty() {
        "TCP"
    } else {
        &port.protocol
    }
}

fn is_any_address(ip: &str) -> bool {
    ip.is_empty() || ip == "0.0.0.0" || ip == "::"
}

/// Whether two host ports collide: same port and protocol, and the host
/// IPs overlap (equal, or either is all addresses). Port 0 means none.
pub fn host_ports_collide(a: &HostPort, b: &HostPort) -> bool {
    a.port > 0
        && a.port == b.port
        && protocol_of(a) == protocol_of(b)
        && (is_any_address(&a.host_ip) || is_any_address(&b.host_ip) || a.host_ip == b.host_ip)
}

/// NodePorts filter: whether any wanted host port collides with one in use.
pub fn host_ports_conflict<'a>(
    wanted: &[HostPort],
    in_use: impl IntoIterator<Item = &'a HostPort>,
) -> bool {
    if wanted.is_empty() {
        return false;
    }
    in_use
        .into_iter()
        .any(|used| wanted.iter().any(|w| host_ports_collide(w, used)))
}

/// The node-local filters (everything but PodTopologySpread and
/// InterPodAffinity) against a node as the cluster has it, in
/// kube-scheduler's plugin order. For callers that place pods on existing
/// nodes one at a time (e.g. the Karpenter provisioner's existing-node pass).
pub fn fits_node<'n>(cluster: &Cluster, spec: &PodSpec, node: &'n Node) -> Result<(), Unfit<'n>> {
    let ports = || {
        node.pods
            .iter()
            .filter_map(|&id| cluster.pod(id))
            .filter(|p| !p.phase.is_terminal())
            .flat_map(|p| p.spec.host_ports.iter())
    };
    local_filters(spec, node, &node.requested, ports)
}

/// The node-local filters with the caller's view of what is already on the
/// node (`requested` and the host ports in use, asked for only when the
/// pod wants host ports), for callers that keep their own overlay.
pub fn local_filters<'n, 'p, I>(
    spec: &PodSpec,
    node: &'n Node,
    requested: &Resources,
    ports_in_use: impl FnOnce() -> I,
) -> Result<(), Unfit<'n>>
where
    I: Iterator<Item = &'p HostPort>,
{
    node_state(node, &spec.tolerations)?;
    if let Some(taint) = untolerated_taint(&node.taints, &spec.tolerations) {
        return Err(Unfit::UntoleratedTaint(taint));
    }
    if !node_affinity_matches(spec, &node.labels) {
        return Err(Unfit::NodeAffinity);
    }
    if !spec.host_ports.is_empty() && host_ports_conflict(&spec.host_ports, ports_in_use()) {
        return Err(Unfit::HostPorts);
    }
    let short = resource_shortfall(&spec.requests, &node.allocatable, requested);
    if !short.is_empty() {
        return Err(Unfit::Resources(short));
    }
    Ok(())
}

/// Every filter for one incoming pod, prepared against a [`Placement`]
/// (the PreFilter step: O(nodes) per spread constraint or affinity term).
#[derive(Debug, Clone)]
pub struct PodFilter<'s> {
    spec: &'s PodSpec,
    spread: spread::SpreadFilter,
    affinity: interpod::AffinityFilter,
}

impl<'s> PodFilter<'s> {
    /// Prepares the filters for `spec`.
    pub fn new(spec: &'s PodSpec, placement: &mut Placement<'_>) -> PodFilter<'s> {
        PodFilter {
            spec,
            spread: spread::SpreadFilter::new(spec, placement),
            affinity: interpod::AffinityFilter::new(spec, placement),
        }
    }

    /// The pod's spec.
    pub fn spec(&self) -> &'s PodSpec {
        self.spec
    }

    /// Runs every filter on one node in kube-scheduler's plugin order
    /// (NodeUnschedulable, TaintToleration, NodeAffinity, NodePorts,
    /// NodeResourcesFit, PodTopologySpread, InterPodAffinity); the first
    /// failing plugin's reason is returned.
    pub fn check<'n>(
        &self,
        placement: &Placement<'_>,
        id: NodeId,
        node: &'n Node,
    ) -> Result<(), Unfit<'n>> {
        let requested = placement.requested(id, node);
        local_filters(self.spec, node, &requested, || {
            placement.host_ports_on(id, node)
        })?;
        self.spread.check(placement, id)?;
        self.affinity.check(placement, id)?;
        Ok(())
    }
}
