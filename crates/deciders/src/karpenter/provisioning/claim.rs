//! The NodeClaims a solve opens from templates (core: scheduling/
//! nodeclaim.go): whether a pod can join one and what it becomes. The
//! templates live in `template`, the filter's messages and minValues in
//! `fit`.

use std::borrow::Cow;

use super::fit::{format_resources, merged_get, min_values_shortfall};
use super::pod::PodWork;
use super::template::{Refiltered, Template};
use super::topology::PodTopology;
use crate::kube::labels::{LABEL_HOSTNAME, well_known_labels};
use crate::kube::pod::HostPort;
use crate::kube::requirements::{Requirement, Requirements};
use crate::kube::resources::{ResourceKind, Resources};
use crate::kube::taints::first_untolerated;
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
    /// Whether a pod added requirements (else they are the template's
    /// plus the hostname).
    pub narrowed: bool,
    /// Element-wise max over options of allocatable − DaemonSet overhead: a
    /// pod that does not fit under it cannot fit any option.
    headroom: Resources,
    /// The reservations it holds an instance of (sorted ids; see
    /// `reservations`).
    pub reserved: Vec<&'static str>,
    /// Under BestEffort: the claim was opened (its first pod added) with
    /// options that miss a `minValues` (upstream annotates the NodeClaim
    /// `karpenter.sh/nodeclaim-min-values-relaxed` then, and only then).
    pub min_values_relaxed: bool,
    /// How many hostname topology groups held its hostname when it was
    /// last registered (see `Topology::register_claim_host`).
    pub hosts_registered: usize,
}

/// A successful `can_add`: what the claim becomes with the pod.
pub(super) struct Accepted {
    /// `None` when the pod adds no requirement.
    pub requirements: Option<Requirements>,
    /// The claim's options the pod leaves.
    pub options: Refiltered,
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
            narrowed: false,
            headroom: Resources::ZERO,
            reserved: Vec::new(),
            min_values_relaxed: false,
            hosts_registered: 0,
        };
        claim.update_headroom(template);
        claim
    }

    fn update_headroom(&mut self, template: &Template<'_>) {
        // Options are kept in template order, so as many as the template's
        // are the template's.
        if self.options.len() == template.options.len() {
            self.headroom = template.max_room;
            return;
        }
        let mut headroom = Resources::ZERO;
        for &index in &self.options {
            headroom = headroom.max(&template.room[index as usize]);
        }
        self.headroom = headroom;
    }

    /// Lowers the headroom's cpu, memory and pod amounts to the maximum over
    /// the options left (what nearly every request asks for; a full
    /// recount costs a comparison per amount per option). The other
    /// amounts keep their earlier, larger values: once a pod has joined,
    /// the headroom only serves the quiet rejection of `can_add`, whose
    /// answer any upper bound leaves the same.
    fn narrow_headroom(&mut self, template: &Template<'_>) {
        if self.options.len() == template.options.len() {
            self.headroom = template.max_room;
            return;
        }
        let (mut cpu, mut memory, mut pods) = (0, 0, 0);
        for &index in &self.options {
            let room = &template.room[index as usize];
            cpu = room.cpu_millis().max(cpu);
            memory = room.memory_bytes().max(memory);
            pods = room.pods().max(pods);
        }
        self.set_headroom(cpu, memory, pods);
    }

    /// Sets the headroom's CPU, memory and pod amounts (see
    /// `narrow_headroom`).
    fn set_headroom(&mut self, cpu: i64, memory: i64, pods: i64) {
        self.headroom.set(ResourceKind::Cpu, cpu);
        self.headroom.set(ResourceKind::Memory, memory);
        self.headroom.set(ResourceKind::Pods, pods);
    }

    /// Whether the pod could join (core: nodeclaim.go `CanAdd`). Under
    /// [`Attempt::Quiet`] the rejection carries no text and cheap certain
    /// rejections are tried first; the answer is the same either way.
    pub fn can_add(
        &self,
        template: &Template<'_>,
        topology: &PodTopology<'_>,
        pod: &PodWork<'_>,
        attempt: Attempt,
    ) -> Result<Accepted, Rejection> {
        let explain = matches!(attempt, Attempt::Explain);
        // Rejection text is only written when it may be shown.
        let say = |message: &dyn Fn() -> String| {
            if explain { message() } else { String::new() }
        };
        let pool = &template.pool.name;
        // Quiet attempts are mostly turned away by a pod's affinity (a
        // NodeClaim in another zone), which needs no sum of requests.
        if !explain && topology.rejects_node(&self.requirements) {
            return Err(Rejection::Topology(String::new()));
        }
        let requests = self.requests + pod.requests;
        if !requests.fits(&self.headroom) {
            return Err(Rejection::InstanceTypes(say(&|| {
                format!(
                    "NodePool {pool}: no instance type has room for {}",
                    format_resources(&requests)
                )
            })));
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
        // A pod that adds no requirement leaves the claim's as they are.
        let merged: Cow<'_, Requirements> = if pod.requirements.is_empty() && narrowed.is_empty() {
            Cow::Borrowed(&self.requirements)
        } else {
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
            Cow::Owned(merged)
        };
        let merged_requirements = |merged: Cow<'_, Requirements>| match merged {
            Cow::Borrowed(_) => None,
            Cow::Owned(merged) => Some(merged),
        };
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
            &self.requests,
            &requests,
            pod.host_ports(),
            &self.host_ports,
        ) {
            return Ok(Accepted {
                requirements: merged_requirements(merged),
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
                requirements: merged_requirements(merged),
                options: Refiltered::Fewer {
                    kept: options,
                    most_room: None,
                },
            }),
            Err(failure) => {
                let mut shown = Requirements::new();
                for r in merged.iter() {
                    if pod.requirements.has(r.key()) || narrowed.has(r.key()) {
                        shown.add(r.clone());
                    }
                }
                if shown.is_empty() {
                    shown = merged.into_owned();
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
    pub fn add(&mut self, template: &Template<'_>, pod: &PodWork<'_>, accepted: Accepted) {
        if self.pods.is_empty() && template.relax_min_values {
            let requirements = accepted.requirements.as_ref().unwrap_or(&self.requirements);
            self.min_values_relaxed = min_values_shortfall(
                accepted.options.of(&self.options),
                requirements,
                &template.type_requirements,
            )
            .is_some();
        }
        self.pods.push(pod.id);
        self.requests += pod.requests;
        if let Some(requirements) = accepted.requirements {
            self.requirements = requirements;
            self.narrowed = true;
        }
        if let Refiltered::Fewer { kept, most_room } = accepted.options
            && kept.len() != self.options.len()
        {
            self.options = kept;
            match most_room {
                Some([cpu, memory, pods]) => self.set_headroom(cpu, memory, pods),
                None => self.narrow_headroom(template),
            }
        }
        self.host_ports.extend(pod.host_ports().iter().cloned());
    }

    /// Smallest DaemonSet overhead over the groups its options still span.
    pub fn min_daemon_overhead(&self, template: &Template<'_>) -> Resources {
        let mut spanned = vec![false; template.groups.len()];
        for &i in &self.options {
            spanned[template.group_of[i as usize] as usize] = true;
        }
        template
            .groups
            .iter()
            .zip(&spanned)
            .filter(|&(_, &spanned)| spanned)
            .map(|(group, _)| group.overhead)
            .reduce(|min, overhead| min.min(&overhead))
            .unwrap_or(Resources::ZERO)
    }
}
