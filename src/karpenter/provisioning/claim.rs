//! NodeClaim templates (one per NodePool with instance types left) and the
//! NodeClaims a solve opens from them (core: scheduling/nodeclaimtemplate.go,
//! nodeclaim.go): DaemonSet overhead groups, the instance-type filter that
//! shrinks a claim's options as pods join, and minValues.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use super::columns::TypeColumns;
use super::pod::{
    PodWork, any_port_conflict, remove_required_node_term, strict_requirements,
    tolerate_prefer_no_schedule_taints,
};
use super::topology::PodTopology;
use crate::cloud::{Catalog, InstanceType, Offering, Price};
use crate::karpenter::instance_types::template_requirements;
use crate::karpenter::nodepool::NodePool;
use crate::kube::labels::{
    LABEL_CAPACITY_TYPE, LABEL_HOSTNAME, LABEL_NODE_INITIALIZED, LABEL_NODE_REGISTERED,
    LABEL_NODEPOOL, LABEL_TOPOLOGY_ZONE, LABEL_TOPOLOGY_ZONE_ID, LabelKeySet, well_known_labels,
};
use crate::kube::pod::{HostPort, PodSpec};
use crate::kube::requirements::{Requirement, Requirements};
use crate::kube::resources::{ResourceKind, Resources};
use crate::kube::taints::{first_untolerated, tolerates_all};
use crate::scheduler::PodId;

/// Why a pod could not join a NodeClaim (or existing node), ordered by how
/// far it got: the furthest stage names the "closest" NodePool.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Rejection {
    /// An untolerated taint.
    Taint(String),
    /// Incompatible requirements.
    Requirements(String),
    /// The NodePool's limits leave no instance type.
    Limits(String),
    /// A topology rule admits no domain.
    Topology(String),
    /// No instance type is left.
    InstanceTypes(String),
}

impl Rejection {
    pub fn message(&self) -> &str {
        match self {
            Rejection::Taint(m)
            | Rejection::Requirements(m)
            | Rejection::Limits(m)
            | Rejection::Topology(m)
            | Rejection::InstanceTypes(m) => m,
        }
    }

    pub fn rank(&self) -> u8 {
        match self {
            Rejection::Taint(_) => 0,
            Rejection::Requirements(_) => 1,
            Rejection::Limits(_) => 2,
            Rejection::Topology(_) => 3,
            Rejection::InstanceTypes(_) => 4,
        }
    }
}

/// Instance types grouped by which DaemonSet pods would run on them.
#[derive(Debug, Clone)]
pub(super) struct DaemonGroup {
    /// Requests of those DaemonSet pods.
    pub overhead: Resources,
    /// Their host ports.
    pub host_ports: Vec<HostPort>,
}

/// One NodePool ready to open NodeClaims.
pub(super) struct Template<'a> {
    /// Index into `ProvisioningInput::nodepools`.
    pub pool_index: usize,
    pub pool: &'a NodePool,
    pub catalog: &'a Catalog,
    /// Requirements of each catalog type (shared per catalog).
    pub type_requirements: Arc<Vec<Requirements>>,
    /// The same by key.
    columns: TypeColumns,
    /// NodePool requirements ∩ labels ∩ nodepool name ∩ the simulation-only
    /// registered/initialized labels.
    pub requirements: Requirements,
    /// Catalog indices that passed the empty-pod pre-filter.
    pub options: Vec<u32>,
    pub groups: Vec<DaemonGroup>,
    /// Catalog index → group index (meaningful for `options` only).
    pub group_of: Vec<u32>,
    /// Catalog index → allocatable − its group's DaemonSet overhead
    /// (meaningful for `options` only).
    room: Vec<Resources>,
}

impl<'a> Template<'a> {
    /// Builds the template and pre-filters its instance types; `Err` names
    /// what excluded them all.
    pub fn new(
        pool_index: usize,
        pool: &'a NodePool,
        catalog: &'a Catalog,
        type_requirements: Arc<Vec<Requirements>>,
        daemonsets: &[Arc<PodSpec>],
    ) -> Result<Template<'a>, String> {
        let mut requirements = template_requirements(pool);
        requirements.add(Requirement::in_values(LABEL_NODE_REGISTERED, ["true"]));
        requirements.add(Requirement::in_values(LABEL_NODE_INITIALIZED, ["true"]));
        let mut template = Template {
            pool_index,
            pool,
            catalog,
            columns: TypeColumns::new(type_requirements.clone()),
            type_requirements,
            requirements,
            options: (0..catalog.len() as u32).collect(),
            groups: vec![DaemonGroup {
                overhead: Resources::ZERO,
                host_ports: Vec::new(),
            }],
            group_of: vec![0; catalog.len()],
            room: vec![Resources::ZERO; catalog.len()],
        };
        let filtered = template
            .filter(
                &template.options,
                &template.requirements,
                &Resources::ZERO,
                &[],
                &[],
            )
            .map_err(|failure| {
                format!(
                    "NodePool {}: no instance type left after its requirements ({})",
                    pool.name,
                    failure.describe(&template.requirements, &Resources::ZERO)
                )
            })?;
        template.options = filtered;
        template.build_daemon_groups(daemonsets);
        for &index in &template.options {
            let overhead = template.groups[template.group_of[index as usize] as usize].overhead;
            template.room[index as usize] = template.instance_type(index).allocatable - overhead;
        }
        Ok(template)
    }

    fn build_daemon_groups(&mut self, daemonsets: &[Arc<PodSpec>]) {
        let mut by_set: BTreeMap<Vec<bool>, u32> = BTreeMap::new();
        self.groups.clear();
        for &index in &self.options {
            let type_reqs = &self.type_requirements[index as usize];
            let set: Vec<bool> = daemonsets
                .iter()
                .map(|ds| daemon_fits(&self.requirements, &self.pool.taints, type_reqs, ds))
                .collect();
            let group = *by_set.entry(set.clone()).or_insert_with(|| {
                let mut overhead = Resources::ZERO;
                let mut host_ports = Vec::new();
                for (ds, &on) in daemonsets.iter().zip(&set) {
                    if on {
                        overhead += ds.requests;
                        host_ports.extend(ds.host_ports.iter().cloned());
                    }
                }
                self.groups.push(DaemonGroup {
                    overhead,
                    host_ports,
                });
                (self.groups.len() - 1) as u32
            });
            self.group_of[index as usize] = group;
        }
    }

    pub fn instance_type(&self, index: u32) -> &InstanceType {
        &self.catalog.instance_types()[index as usize]
    }

    /// Keeps the types in `options` that meet `requirements`, have room for
    /// `requests` plus their DaemonSet overhead, and an available offering
    /// the requirements allow (core: nodeclaim.go
    /// `filterInstanceTypesByRequirements`); then checks minValues (Strict).
    pub fn filter(
        &self,
        options: &[u32],
        requirements: &Requirements,
        requests: &Resources,
        pod_ports: &[HostPort],
        claim_ports: &[HostPort],
    ) -> Result<Vec<u32>, FilterFailure> {
        let offerings = OfferingFilter::new(requirements);
        let mut failure = FilterFailure::default();
        let blocked: Vec<bool> = self
            .groups
            .iter()
            .map(|g| {
                any_port_conflict(pod_ports, &g.host_ports)
                    || any_port_conflict(pod_ports, claim_ports)
            })
            .collect();
        let mut remaining = Vec::new();
        for &index in options {
            let group = self.group_of[index as usize] as usize;
            if blocked.get(group).copied().unwrap_or(true) {
                failure.host_ports = true;
                continue;
            }
            let it = self.instance_type(index);
            let total = *requests + self.groups[group].overhead;
            let fits = total.fits(&it.allocatable);
            let offering = it.offerings.iter().any(|o| offerings.allows(o));
            let compatible = self.type_requirements[index as usize].is_intersecting(requirements);
            failure.requirements_met |= compatible;
            failure.fits |= fits;
            failure.offering |= offering;
            if compatible && fits && offering {
                remaining.push(index);
            }
        }
        if remaining.is_empty() {
            return Err(failure);
        }
        if let Some(shortfall) =
            min_values_shortfall(&remaining, requirements, &self.type_requirements)
        {
            failure.min_values = Some(shortfall);
            return Err(failure);
        }
        Ok(remaining)
    }

    /// [`Template::filter`] for `options` that already pass it under
    /// `base`, now under `merged` (`base` plus more): only requirements
    /// that differ from `base` are checked per type, offerings only when a
    /// key they read changed. Same survivors; `None` on any failure.
    pub fn refilter(
        &self,
        options: &[u32],
        base: &Requirements,
        merged: &Requirements,
        requests: &Resources,
        pod_ports: &[HostPort],
        claim_ports: &[HostPort],
    ) -> Option<Vec<u32>> {
        // `merged` has every key of `base`; both are sorted by key.
        let mut base_iter = base.iter().peekable();
        let mut offerings_changed = false;
        let mut matchers = Vec::new();
        for requirement in merged.iter() {
            let key = requirement.key();
            while base_iter.next_if(|b| b.key() < key).is_some() {}
            if base_iter.peek().is_some_and(|b| *b == requirement) {
                continue;
            }
            offerings_changed |= matches!(
                key,
                LABEL_TOPOLOGY_ZONE | LABEL_TOPOLOGY_ZONE_ID | LABEL_CAPACITY_TYPE
            );
            matchers.extend(self.columns.matcher(requirement));
        }
        let offerings = OfferingFilter::new(merged);
        let blocked: Vec<bool> = self
            .groups
            .iter()
            .map(|g| {
                any_port_conflict(pod_ports, &g.host_ports)
                    || any_port_conflict(pod_ports, claim_ports)
            })
            .collect();
        // Only positive amounts need comparing: every template option has no
        // negative allocatable (the template's own filter asked it to fit
        // nothing), which is all `Resources::fits` asks of the rest.
        let wants: Vec<Vec<(ResourceKind, i64)>> = self
            .groups
            .iter()
            .map(|g| {
                (*requests + g.overhead)
                    .iter()
                    .filter(|&(_, amount)| amount > 0)
                    .collect()
            })
            .collect();
        let mut remaining = Vec::with_capacity(options.len());
        for &index in options {
            let group = self.group_of[index as usize] as usize;
            if blocked.get(group).copied().unwrap_or(true) {
                continue;
            }
            let it = self.instance_type(index);
            if !wants[group]
                .iter()
                .all(|&(kind, want)| it.allocatable.get(kind) >= want)
            {
                continue;
            }
            if offerings_changed && !it.offerings.iter().any(|o| offerings.allows(o)) {
                continue;
            }
            if matchers.iter().all(|m| m.accepts(index)) {
                remaining.push(index);
            }
        }
        if remaining.is_empty()
            || min_values_shortfall(&remaining, merged, &self.type_requirements).is_some()
        {
            return None;
        }
        Some(remaining)
    }

    /// The cheapest available offering of a type the filter allows.
    pub fn cheapest_price(&self, index: u32, offerings: &OfferingFilter<'_>) -> Option<Price> {
        self.instance_type(index)
            .offerings
            .iter()
            .filter(|o| offerings.allows(o))
            .map(|o| o.price)
            .min()
    }
}

/// Upstream `isDaemonPodCompatible`: the DaemonSet pod tolerates the pool's
/// taints (PreferNoSchedule always tolerated), its strict requirements are
/// compatible with the template and intersect the type, trying each
/// required node-affinity term in turn.
fn daemon_fits(
    template: &Requirements,
    taints: &[crate::kube::taints::Taint],
    type_reqs: &Requirements,
    ds: &PodSpec,
) -> bool {
    let mut spec = ds.clone();
    tolerate_prefer_no_schedule_taints(&mut spec);
    if tolerates_all(taints, &spec.tolerations).is_err() {
        return false;
    }
    loop {
        let Some(strict) = strict_requirements(&spec) else {
            return false;
        };
        if template.is_compatible(&strict, well_known_labels())
            && type_reqs.is_intersecting(&strict)
        {
            return true;
        }
        if !remove_required_node_term(&mut spec) {
            return false;
        }
    }
}

/// Offering compatibility with the three offering keys looked up once.
pub(super) struct OfferingFilter<'r> {
    zone: Option<&'r Requirement>,
    zone_id: Option<&'r Requirement>,
    capacity_type: Option<&'r Requirement>,
}

impl<'r> OfferingFilter<'r> {
    pub fn new(requirements: &'r Requirements) -> Self {
        OfferingFilter {
            zone: requirements.get(LABEL_TOPOLOGY_ZONE),
            zone_id: requirements.get(LABEL_TOPOLOGY_ZONE_ID),
            capacity_type: requirements.get(LABEL_CAPACITY_TYPE),
        }
    }

    /// Available and allowed.
    pub fn allows(&self, o: &Offering) -> bool {
        o.available
            && self.zone.is_none_or(|r| r.has(o.zone))
            && self.zone_id.is_none_or(|r| r.has(o.zone_id))
            && self
                .capacity_type
                .is_none_or(|r| r.has(o.capacity_type.label()))
    }
}

/// What the instance-type filter found, for the message.
#[derive(Debug, Clone, Default)]
pub(super) struct FilterFailure {
    requirements_met: bool,
    fits: bool,
    offering: bool,
    host_ports: bool,
    min_values: Option<String>,
}

impl FilterFailure {
    /// A one-line reason.
    pub fn describe(&self, shown: &Requirements, requests: &Resources) -> String {
        let shown = conjunction(shown);
        if let Some(shortfall) = &self.min_values {
            return format!("minValues not met: {shortfall}");
        }
        if !self.requirements_met && !self.fits && !self.offering && self.host_ports {
            return "host port conflict with DaemonSet or earlier pods".to_string();
        }
        if !self.requirements_met {
            format!("no instance type satisfies {shown}")
        } else if !self.fits {
            format!(
                "no instance type has room for {}",
                format_resources(requests)
            )
        } else if !self.offering {
            format!("no available offering satisfies {shown}")
        } else {
            format!(
                "no instance type satisfies {shown} with room for {} and an available offering",
                format_resources(requests)
            )
        }
    }
}

/// `a ∧ b ∧ c`, leaving out bookkeeping keys.
pub(super) fn conjunction(requirements: &Requirements) -> String {
    let parts: Vec<String> = requirements
        .iter()
        .filter(|r| !is_bookkeeping(r.key()))
        .map(ToString::to_string)
        .collect();
    if parts.is_empty() {
        "the NodePool requirements".to_string()
    } else {
        parts.join(" ∧ ")
    }
}

fn is_bookkeeping(key: &str) -> bool {
    matches!(
        key,
        LABEL_HOSTNAME | LABEL_NODEPOOL | LABEL_NODE_REGISTERED | LABEL_NODE_INITIALIZED
    )
}

/// `cpu=1500m, memory=2Gi, pods=3` (non-zero amounts).
pub(super) fn format_resources(resources: &Resources) -> String {
    use crate::kube::resources::{GIB, MIB, ResourceKind};
    let parts: Vec<String> = resources
        .iter()
        .map(|(kind, amount)| {
            let name = kind.well_known_name().unwrap_or("extended");
            let value = match kind {
                ResourceKind::Cpu if amount % 1000 == 0 => format!("{}", amount / 1000),
                ResourceKind::Cpu => format!("{amount}m"),
                ResourceKind::Memory | ResourceKind::EphemeralStorage if amount % GIB == 0 => {
                    format!("{}Gi", amount / GIB)
                }
                ResourceKind::Memory | ResourceKind::EphemeralStorage if amount % MIB == 0 => {
                    format!("{}Mi", amount / MIB)
                }
                _ => amount.to_string(),
            };
            format!("{name}={value}")
        })
        .collect();
    parts.join(", ")
}

/// The first key whose minValues the types do not reach, described
/// (upstream `SatisfiesMinValues` counts each type's own values).
pub(super) fn min_values_shortfall(
    types: &[u32],
    requirements: &Requirements,
    type_requirements: &[Requirements],
) -> Option<String> {
    for requirement in requirements.iter() {
        let Some(min) = requirement.min_values() else {
            continue;
        };
        let mut values: BTreeSet<&str> = BTreeSet::new();
        for &index in types {
            if let Some(own) = type_requirements[index as usize].get(requirement.key())
                && !own.is_complement()
            {
                values.extend(own.values().iter().map(String::as_str));
            }
        }
        if values.len() < min as usize {
            return Some(format!(
                "{} needs {min} values, {} available",
                requirement.key(),
                values.len()
            ));
        }
    }
    None
}

/// A NodeClaim opened in this solve.
pub(super) struct Claim {
    /// Index into the scheduler's templates.
    pub template: usize,
    pub hostname: String,
    pub requirements: Requirements,
    /// Catalog indices that pass the template's filter under
    /// `requirements` once a pod joined (under the template's own
    /// requirements before), which lets `can_add` recheck only what a new
    /// pod changes.
    pub options: Vec<u32>,
    pub pods: Vec<PodId>,
    /// Sum of the pods' requests.
    pub requests: Resources,
    pub host_ports: Vec<HostPort>,
    /// Element-wise max over options of allocatable − DaemonSet overhead: a
    /// pod that does not fit under it cannot fit any option.
    headroom: Resources,
}

/// A successful `can_add`: what the claim becomes with the pod.
pub(super) struct Accepted {
    pub requirements: Requirements,
    pub options: Vec<u32>,
}

/// How a pod is tried on a NodeClaim.
#[derive(Debug, Clone, Copy)]
pub(super) enum Attempt {
    /// A NodeClaim being opened: a rejection says why, as the pod's error
    /// may quote it.
    Explain,
    /// A NodeClaim already holding pods: only the answer is used.
    Quiet,
}

impl Claim {
    pub fn new(
        template_index: usize,
        template: &Template<'_>,
        hostname: String,
        options: Vec<u32>,
    ) -> Claim {
        let mut requirements = template.requirements.clone();
        requirements.add(Requirement::in_values(LABEL_HOSTNAME, [hostname.as_str()]));
        let mut claim = Claim {
            template: template_index,
            hostname,
            requirements,
            options,
            pods: Vec::new(),
            requests: Resources::ZERO,
            host_ports: Vec::new(),
            headroom: Resources::ZERO,
        };
        claim.update_headroom(template);
        claim
    }

    fn update_headroom(&mut self, template: &Template<'_>) {
        let mut headroom = Resources::ZERO;
        for &index in &self.options {
            headroom = headroom.max(&template.room[index as usize]);
        }
        self.headroom = headroom;
    }

    /// Whether the pod could join (core: nodeclaim.go `CanAdd`). Under
    /// [`Attempt::Quiet`] the rejection carries no text and cheap certain
    /// rejections are tried first; the answer is the same either way.
    pub fn can_add(
        &self,
        template: &Template<'_>,
        topology: &PodTopology<'_>,
        pod: &PodWork,
        attempt: Attempt,
    ) -> Result<Accepted, Rejection> {
        let explain = matches!(attempt, Attempt::Explain);
        // Rejection text is only written when it may be shown.
        let say = |message: &dyn Fn() -> String| {
            if explain { message() } else { String::new() }
        };
        let pool = &template.pool.name;
        let requests = self.requests + pod.requests;
        if !requests.fits(&self.headroom) {
            return Err(Rejection::InstanceTypes(say(&|| {
                format!(
                    "NodePool {pool}: no instance type has room for {}",
                    format_resources(&requests)
                )
            })));
        }
        if !explain && topology.rejects_node(&self.requirements, &pod.requirements) {
            return Err(Rejection::Topology(String::new()));
        }
        if let Some(taint) = first_untolerated(&template.pool.taints, &pod.spec.tolerations) {
            return Err(Rejection::Taint(say(&|| {
                format!("incompatible with NodePool {pool}: did not tolerate taint {taint}")
            })));
        }
        let allow = well_known_labels();
        if !self.requirements.is_compatible(&pod.requirements, allow) {
            return Err(Rejection::Requirements(say(&|| {
                let e = self
                    .requirements
                    .compatible(&pod.requirements, allow)
                    .err()
                    .map(|e| e.to_string())
                    .unwrap_or_default();
                format!("incompatible with NodePool {pool}: {e}")
            })));
        }
        let narrowed = if topology.constrains() {
            let lookup = |key: &str| merged_get(&self.requirements, &pod.requirements, key);
            topology
                .add_requirements(&lookup, &pod.spec, explain)
                .map_err(|e| Rejection::Topology(say(&|| format!("NodePool {pool}: {}", e.0))))?
        } else {
            Requirements::new()
        };
        let mut merged = self.requirements.clone();
        merged.add_all(&pod.requirements);
        if !narrowed.is_empty() {
            if !merged.is_compatible(&narrowed, allow) {
                return Err(Rejection::Topology(say(&|| {
                    let e = merged
                        .compatible(&narrowed, allow)
                        .err()
                        .map(|e| e.to_string())
                        .unwrap_or_default();
                    format!("NodePool {pool}: {e}")
                })));
            }
            merged.add_all(&narrowed);
        }
        // The options already meet what they were last filtered under: only
        // what the pod changed needs checking again.
        let filtered_under = if self.pods.is_empty() {
            &template.requirements
        } else {
            &self.requirements
        };
        if let Some(options) = template.refilter(
            &self.options,
            filtered_under,
            &merged,
            &requests,
            pod.host_ports(),
            &self.host_ports,
        ) {
            return Ok(Accepted {
                requirements: merged,
                options,
            });
        }
        if !explain {
            return Err(Rejection::InstanceTypes(String::new()));
        }
        // The same failure, through the filter that says why.
        match template.filter(
            &self.options,
            &merged,
            &requests,
            pod.host_ports(),
            &self.host_ports,
        ) {
            Ok(options) => Ok(Accepted {
                requirements: merged,
                options,
            }),
            Err(failure) => {
                let mut shown = Requirements::new();
                for r in merged.iter() {
                    if pod.requirements.has(r.key()) || narrowed.has(r.key()) {
                        shown.add(r.clone());
                    }
                }
                if shown.is_empty() {
                    shown = merged.clone();
                }
                Err(Rejection::InstanceTypes(format!(
                    "NodePool {}: {}",
                    template.pool.name,
                    failure.describe(&shown, &requests)
                )))
            }
        }
    }

    /// Adds the pod with what `can_add` returned.
    pub fn add(&mut self, template: &Template<'_>, pod: &PodWork, accepted: Accepted) {
        self.pods.push(pod.id);
        self.requests += pod.requests;
        self.requirements = accepted.requirements;
        if accepted.options.len() != self.options.len() {
            self.options = accepted.options;
            self.update_headroom(template);
        }
        self.host_ports.extend(pod.host_ports().iter().cloned());
    }

    /// Smallest DaemonSet overhead over the groups its options still span.
    pub fn min_daemon_overhead(&self, template: &Template<'_>) -> Resources {
        let groups: BTreeSet<u32> = self
            .options
            .iter()
            .map(|&i| template.group_of[i as usize])
            .collect();
        let mut min: Option<Resources> = None;
        for g in groups {
            let overhead = template.groups[g as usize].overhead;
            min = Some(min.map_or(overhead, |m| m.min(&overhead)));
        }
        min.unwrap_or(Resources::ZERO)
    }
}

/// The requirement on `key` of `a ∩ b` without building the whole merge.
pub(super) fn merged_get<'r>(
    a: &'r Requirements,
    b: &'r Requirements,
    key: &str,
) -> Option<Cow<'r, Requirement>> {
    match (a.get(key), b.get(key)) {
        (Some(x), Some(y)) => Some(Cow::Owned(x.intersection(y))),
        (Some(x), None) | (None, Some(x)) => Some(Cow::Borrowed(x)),
        (None, None) => None,
    }
}

/// A shared helper for the allow-nothing key set.
pub(super) fn no_undefined() -> &'static LabelKeySet {
    static EMPTY: LabelKeySet = LabelKeySet::new();
    &EMPTY
}
