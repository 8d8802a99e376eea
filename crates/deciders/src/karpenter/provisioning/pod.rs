//! A pending pod as the solve works with it: its (possibly relaxed) spec,
//! requests, and the node requirements Karpenter derives from it
//! (core: pkg/scheduling/requirements.go `NewPodRequirements`,
//! `NewStrictPodRequirements`), plus the one-step preference relaxation of
//! core: scheduling/preferences.go.

use std::ops::Deref;

use crate::kube::pod::{HostPort, PodSpec, WhenUnsatisfiable, term_requirements};
use crate::kube::requirements::{Requirement, Requirements};
use crate::kube::resources::Resources;
use crate::kube::taints::{TaintEffect, Toleration, TolerationOperator};
use crate::scheduler::PodId;

/// A pod being placed.
#[derive(Debug, Clone)]
pub(super) struct PodWork<'s> {
    /// The pod.
    pub id: PodId,
    /// Its spec, borrowed from the cluster (not shared through a reference
    /// count: solves on several threads place the same pending pods, and a
    /// shared count costs each of them a contended write); relaxation edits
    /// a private copy.
    pub spec: SpecRef<'s>,
    /// Effective requests (`pods: 1` included).
    pub requests: Resources,
    /// nodeSelector ∩ first required node-affinity term ∩ heaviest
    /// preferred node-affinity term.
    pub requirements: Requirements,
    /// The same without the preferred term (what topology domains obey).
    pub strict: Requirements,
}

/// A pod spec as a solve holds it: the cluster's, or a relaxed copy (boxed,
/// so a pod being placed stays small).
#[derive(Debug, Clone)]
pub(super) enum SpecRef<'s> {
    Borrowed(&'s PodSpec),
    Owned(Box<PodSpec>),
}

impl SpecRef<'_> {
    /// The spec to edit, copied first if borrowed.
    fn make_mut(&mut self) -> &mut PodSpec {
        match self {
            SpecRef::Owned(spec) => spec,
            SpecRef::Borrowed(spec) => {
                let copy = Box::new((*spec).clone());
                *self = SpecRef::Owned(copy);
                self.make_mut()
            }
        }
    }
}

impl Deref for SpecRef<'_> {
    type Target = PodSpec;

    fn deref(&self) -> &PodSpec {
        match self {
            SpecRef::Borrowed(spec) => spec,
            SpecRef::Owned(spec) => spec,
        }
    }
}

impl<'s> PodWork<'s> {
    /// Derives the requirements of `spec`; an invalid node-affinity term is
    /// an error naming it.
    ///
    /// Under `PreferencePolicy::Ignore` the pod is placed without its
    /// preferred node affinity, preferred pod (anti-)affinity and
    /// `ScheduleAnyway` spread constraints (core: scheduler.go builds its
    /// requirements strict, topology.go skips those groups); relaxation
    /// then has only required terms and PreferNoSchedule left to relax.
    pub fn new(
        id: PodId,
        spec: &'s PodSpec,
        ignore_preferences: bool,
    ) -> Result<PodWork<'s>, String> {
        let mut spec = SpecRef::Borrowed(spec);
        if ignore_preferences && has_preferences(&spec) {
            let edit = spec.make_mut();
            edit.node_affinity.preferred.clear();
            edit.pod_affinity.preferred.clear();
            edit.pod_anti_affinity.preferred.clear();
            edit.topology_spread
                .retain(|c| c.when_unsatisfiable != WhenUnsatisfiable::ScheduleAnyway);
        }
        let (requirements, strict) = pod_requirements(&spec)?;
        Ok(PodWork {
            id,
            requests: spec.requests,
            spec,
            requirements,
            strict,
        })
    }

    /// The pod's host ports.
    pub fn host_ports(&self) -> &[HostPort] {
        &self.spec.host_ports
    }

    /// Applies the next relaxation (reference §1.6); `false` when nothing
    /// is left to relax.
    pub fn relax(&mut self, tolerate_prefer_no_schedule: bool) -> bool {
        let spec = self.spec.make_mut();
        let relaxed = remove_required_node_term(spec)
            || remove_heaviest(&mut spec.pod_affinity.preferred, |t| t.weight)
            || remove_heaviest(&mut spec.pod_anti_affinity.preferred, |t| t.weight)
            || remove_heaviest(&mut spec.node_affinity.preferred, |t| t.weight)
            || remove_schedule_anyway_spread(spec)
            || (tolerate_prefer_no_schedule && tolerate_prefer_no_schedule_taints(spec));
        if relaxed {
            // The terms were valid before; removing some keeps them valid.
            if let Ok((requirements, strict)) = pod_requirements(&self.spec) {
                self.requirements = requirements;
                self.strict = strict;
            }
        }
        relaxed
    }
}

/// `(requirements, strict requirements)` of a spec.
pub(super) fn pod_requirements(spec: &PodSpec) -> Result<(Requirements, Requirements), String> {
    let mut strict: Requirements = spec
        .node_selector
        .iter()
        .map(|(key, value)| Requirement::in_values(key, [value.as_str()]))
        .collect();
    if let Some(first) = spec.node_affinity.required.first() {
        let term =
            term_requirements(first).map_err(|e| format!("invalid required node affinity: {e}"))?;
        strict.add_all(&term);
    }
    let mut requirements = strict.clone();
    if let Some(heaviest) = heaviest_preferred_node_term(spec) {
        let term = term_requirements(&heaviest.expressions)
            .map_err(|e| format!("invalid preferred node affinity: {e}"))?;
        requirements.add_all(&term);
    }
    Ok((requirements, strict))
}

/// Strict requirements only (DaemonSet pods, topology node filters).
pub(super) fn strict_requirements(spec: &PodSpec) -> Option<Requirements> {
    pod_requirements(spec).ok().map(|(_, strict)| strict)
}

fn heaviest_preferred_node_term(
    spec: &PodSpec,
) -> Option<&crate::kube::pod::WeightedNodeSelectorTerm> {
    // First of the heaviest, as a stable sort by weight descending gives.
    let mut best: Option<&crate::kube::pod::WeightedNodeSelectorTerm> = None;
    for term in &spec.node_affinity.preferred {
        if best.is_none_or(|b| term.weight > b.weight) {
            best = Some(term);
        }
    }
    best
}

/// Required terms are OR'ed: drop the first only while another remains.
pub(super) fn remove_required_node_term(spec: &mut PodSpec) -> bool {
    if spec.node_affinity.required.len() > 1 {
        spec.node_affinity.required.remove(0);
        true
    } else {
        false
    }
}

/// Removes the first of the heaviest terms (upstream sorts stably by weight
/// descending and drops the head).
fn remove_heaviest<T>(terms: &mut Vec<T>, weight: impl Fn(&T) -> i32) -> bool {
    if terms.is_empty() {
        return false;
    }
    terms.sort_by_key(|t| std::cmp::Reverse(weight(t)));
    terms.remove(0);
    true
}

/// Whether the pod states a preference `PreferencePolicy::Ignore` drops.
fn has_preferences(spec: &PodSpec) -> bool {
    !spec.node_affinity.preferred.is_empty()
        || !spec.pod_affinity.preferred.is_empty()
        || !spec.pod_anti_affinity.preferred.is_empty()
        || spec
            .topology_spread
            .iter()
            .any(|c| c.when_unsatisfiable == WhenUnsatisfiable::ScheduleAnyway)
}

/// Drops one `ScheduleAnyway` spread constraint (upstream moves the last
/// constraint into its slot).
fn remove_schedule_anyway_spread(spec: &mut PodSpec) -> bool {
    match spec
        .topology_spread
        .iter()
        .position(|c| c.when_unsatisfiable == WhenUnsatisfiable::ScheduleAnyway)
    {
        Some(i) => {
            spec.topology_spread.swap_remove(i);
            true
        }
        None => false,
    }
}

/// Adds `Exists` / `PreferNoSchedule` unless the pod already has exactly it.
pub(super) fn tolerate_prefer_no_schedule_taints(spec: &mut PodSpec) -> bool {
    let toleration = Toleration::exists("", Some(TaintEffect::PreferNoSchedule));
    let present = spec.tolerations.iter().any(|t| {
        t.key.is_empty()
            && t.operator == TolerationOperator::Exists
            && t.value.is_empty()
            && t.effect == Some(TaintEffect::PreferNoSchedule)
    });
    if present {
        return false;
    }
    spec.tolerations.push(toleration);
    true
}

/// Whether two host-port claims collide: same port and protocol, and the
/// same address or either side listening on every address.
pub(super) fn host_ports_conflict(a: &HostPort, b: &HostPort) -> bool {
    let wildcard = |ip: &str| ip.is_empty() || ip == "0.0.0.0" || ip == "::";
    a.port == b.port
        && protocol(&a.protocol) == protocol(&b.protocol)
        && (a.host_ip == b.host_ip || wildcard(&a.host_ip) || wildcard(&b.host_ip))
}

fn protocol(p: &str) -> &str {
    if p.is_empty() { "TCP" } else { p }
}

/// Whether any of `wanted` collides with any of `used`.
pub(super) fn any_port_conflict(wanted: &[HostPort], used: &[HostPort]) -> bool {
    wanted
        .iter()
        .any(|w| used.iter().any(|u| host_ports_conflict(w, u)))
}
