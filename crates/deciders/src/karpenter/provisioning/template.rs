//! NodeClaim templates (core: scheduling/nodeclaimtemplate.go): a
//! NodePool's requirements, the instance types that pass its empty-pod
//! pre-filter, DaemonSet overhead groups, and the instance-type filter that
//! shrinks a NodeClaim's options as pods join (nodeclaim.go).

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::ops::Deref;
use std::sync::Arc;

use super::columns::TypeColumns;
use super::fit::{FilterFailure, min_values_shortfall};
use super::pod::{
    any_port_conflict, remove_required_node_term, strict_requirements,
    tolerate_prefer_no_schedule_taints,
};
use crate::cloud::catalog::{Zone, offered_zone_bit};
use crate::cloud::{CapacityType, Catalog, InstanceType, Offering, Price};
use crate::karpenter::instance_types::template_requirements;
use crate::kube::labels::{
    LABEL_CAPACITY_RESERVATION_ID, LABEL_CAPACITY_RESERVATION_TYPE, LABEL_CAPACITY_TYPE,
    LABEL_HOSTNAME, LABEL_NODE_INITIALIZED, LABEL_NODE_REGISTERED, LABEL_TOPOLOGY_ZONE,
    LABEL_TOPOLOGY_ZONE_ID, well_known_labels,
};
use crate::kube::pod::{HostPort, PodSpec};
use crate::kube::requirements::{IntersectionProbe, Requirement, Requirements};
use crate::kube::resources::{ResourceKind, Resources, SLOTS};
use crate::kube::taints::tolerates_all;
use crate::nodepool::NodePool;

/// Instance types grouped by which DaemonSet pods would run on them.
#[derive(Debug, Clone)]
pub(super) struct DaemonGroup {
    /// Requests of those DaemonSet pods.
    pub overhead: Resources,
    /// Their host ports.
    pub host_ports: Vec<HostPort>,
}

/// One NodePool's template as every solve starts it (prepared once, see
/// [`super::Prepared`]): requirements, the types that pass the empty-pod
/// pre-filter, and DaemonSet overhead groups. Owns its data so it can
/// outlive the solve that first needed it.
pub(super) struct TemplateCore {
    /// Requirements of each catalog type (shared per catalog).
    pub type_requirements: Arc<Vec<Requirements>>,
    /// The same by key.
    columns: TypeColumns,
    /// NodePool requirements ∩ labels ∩ nodepool name ∩ the simulation-only
    /// registered/initialized labels.
    pub requirements: Requirements,
    /// `requirements` without the simulation-only labels: what a NodeClaim
    /// whose pods added no requirement is launched with.
    pub launch_requirements: Requirements,
    /// Catalog indices that passed the empty-pod pre-filter.
    pub options: Vec<u32>,
    pub groups: Vec<DaemonGroup>,
    /// The resource kinds of which some group's overhead has a positive
    /// amount (most filters ask for all of them, and then no group's
    /// overhead can be what alone exceeds a type).
    overhead_kinds: Vec<ResourceKind>,
    /// Catalog index → group index (meaningful for `options` only).
    pub group_of: Vec<u32>,
    /// Catalog index → allocatable − its group's DaemonSet overhead
    /// (meaningful for `options` only).
    pub room: Vec<Resources>,
    /// Element-wise maximum capacity over `options` (what limits charge).
    pub max_capacity: Resources,
    /// Element-wise maximum `room` over `options`.
    pub max_room: Resources,
    /// `room`'s CPU, memory and pod amounts, packed for the filter's loop
    /// over options.
    room_cpu_memory_pods: Vec<[i64; 3]>,
    /// `options` sorted by their CPU, memory and pod room (one list per
    /// amount, in that order; equal rooms by index).
    by_room: [Vec<u32>; 3],
    /// Why `options` miss the requirements' `minValues`, as the solve
    /// reports it: under `MinValuesPolicy::Strict` the template is then
    /// dropped (upstream's pre-filter leaves it no type); under
    /// `BestEffort` it is kept.
    pub min_values_error: Option<String>,
}

impl TemplateCore {
    /// Builds the template of `pool` and pre-filters its instance types;
    /// `Err` names what excluded them all.
    pub fn new(
        pool: &NodePool,
        catalog: &Catalog,
        type_requirements: Arc<Vec<Requirements>>,
        daemonsets: &[Arc<PodSpec>],
    ) -> Result<TemplateCore, String> {
        let mut requirements = template_requirements(pool);
        requirements.add(Requirement::in_values(LABEL_NODE_REGISTERED, ["true"]));
        requirements.add(Requirement::in_values(LABEL_NODE_INITIALIZED, ["true"]));
        let launch_requirements = without_bookkeeping(&requirements);
        let mut core = TemplateCore {
            columns: TypeColumns::new(type_requirements.clone()),
            type_requirements,
            requirements,
            launch_requirements,
            options: (0..catalog.len() as u32).collect(),
            groups: vec![DaemonGroup {
                overhead: Resources::ZERO,
                host_ports: Vec::new(),
            }],
            overhead_kinds: Vec::new(),
            group_of: vec![0; catalog.len()],
            room: vec![Resources::ZERO; catalog.len()],
            max_capacity: Resources::ZERO,
            max_room: Resources::ZERO,
            room_cpu_memory_pods: vec![[0; 3]; catalog.len()],
            by_room: Default::default(),
            min_values_error: None,
        };
        let (filtered, min_values_error) = {
            let template = |relax_min_values| Template {
                pool_index: 0,
                pool,
                catalog,
                core: &core,
                relax_min_values,
            };
            let message = |failure: FilterFailure| {
                format!(
                    "NodePool {}: no instance type left after its requirements ({})",
                    pool.name,
                    failure.describe(&core.requirements, &Resources::ZERO)
                )
            };
            let filter = |relax| {
                template(relax).filter(
                    &core.options,
                    &core.requirements,
                    &Resources::ZERO,
                    &[],
                    &[],
                )
            };
            let filtered = filter(true).map_err(message)?;
            (filtered, filter(false).err().map(message))
        };
        core.options = filtered;
        core.min_values_error = min_values_error;
        core.max_capacity = core
            .options
            .iter()
            .filter_map(|&i| catalog.instance_types().get(i as usize))
            .fold(Resources::ZERO, |max, it| max.max(&it.capacity));
        core.build_daemon_groups(pool, daemonsets);
        for &index in &core.options {
            let overhead = core.groups[core.group_of[index as usize] as usize].overhead;
            let room = catalog.instance_types()[index as usize].allocatable - overhead;
            core.room[index as usize] = room;
            core.room_cpu_memory_pods[index as usize] =
                [room.cpu_millis(), room.memory_bytes(), room.pods()];
        }
        core.max_room = core
            .options
            .iter()
            .fold(Resources::ZERO, |max, &i| max.max(&core.room[i as usize]));
        for (amount, sorted) in core.by_room.iter_mut().enumerate() {
            *sorted = core.options.clone();
            sorted.sort_unstable_by_key(|&i| (core.room_cpu_memory_pods[i as usize][amount], i));
        }
        Ok(core)
    }

    fn build_daemon_groups(&mut self, pool: &NodePool, daemonsets: &[Arc<PodSpec>]) {
        let mut by_set: BTreeMap<Vec<bool>, u32> = BTreeMap::new();
        self.groups.clear();
        for &index in &self.options {
            let type_reqs = &self.type_requirements[index as usize];
            let set: Vec<bool> = daemonsets
                .iter()
                .map(|ds| daemon_fits(&self.requirements, &pool.taints, type_reqs, ds))
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
        let mut kinds: Vec<ResourceKind> = Vec::new();
        for group in &self.groups {
            for (kind, amount) in group.overhead.iter() {
                if amount > 0 && !kinds.contains(&kind) {
                    kinds.push(kind);
                }
            }
        }
        self.overhead_kinds = kinds;
    }
}

/// `requirements` without the hostname and the simulation-only registered
/// and initialized labels (upstream `FinalizeScheduling`).
pub(super) fn without_bookkeeping(requirements: &Requirements) -> Requirements {
    let mut launched = requirements.clone();
    for key in [
        LABEL_HOSTNAME,
        LABEL_NODE_REGISTERED,
        LABEL_NODE_INITIALIZED,
    ] {
        launched.remove(key);
    }
    launched
}

/// One NodePool ready to open NodeClaims in a solve: its prepared core with
/// the pool and catalog it was prepared from.
pub(super) struct Template<'a> {
    /// Index into `ProvisioningInput::nodepools`.
    pub pool_index: usize,
    pub pool: &'a NodePool,
    pub catalog: &'a Catalog,
    pub core: &'a TemplateCore,
    /// `MinValuesPolicy::BestEffort`: the filters keep types that miss a
    /// `minValues` instead of failing.
    pub relax_min_values: bool,
}

impl Deref for Template<'_> {
    type Target = TemplateCore;

    fn deref(&self) -> &TemplateCore {
        self.core
    }
}

/// The options a [`Template::refilter`] keeps, in their order.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Refiltered {
    /// Every one: the list stays as it is (nothing is copied).
    All,
    /// Only these.
    Fewer {
        kept: Vec<u32>,
        /// The most CPU, memory and pod room among them, when the refilter
        /// read those rooms anyway.
        most_room: Option<[i64; 3]>,
    },
}

impl Refiltered {
    /// The options of `options` that `keep` admits (`keep` is asked once
    /// per option, in order). The list is copied only from the first one
    /// it turns away: most pods that join a NodeClaim leave all of its
    /// options, or all but a few smallest.
    fn keep_where(options: &[u32], mut keep: impl FnMut(u32) -> bool) -> Option<Vec<u32>> {
        let first_dropped = options.iter().position(|&index| !keep(index))?;
        let mut kept = vec![0; options.len() - 1];
        kept[..first_dropped].copy_from_slice(&options[..first_dropped]);
        let mut len = first_dropped;
        // Each option is written past the kept ones and counted only when
        // kept: no branch on the answer.
        for &index in &options[first_dropped + 1..] {
            let keep = keep(index);
            kept[len] = index;
            len += usize::from(keep);
        }
        kept.truncate(len);
        Some(kept)
    }

    /// The options kept, `options` being those refiltered.
    pub fn of<'a>(&'a self, options: &'a [u32]) -> &'a [u32] {
        match self {
            Refiltered::All => options,
            Refiltered::Fewer { kept, .. } => kept,
        }
    }
}

impl Template<'_> {
    pub fn instance_type(&self, index: u32) -> &InstanceType {
        &self.catalog.instance_types()[index as usize]
    }

    /// Keeps the types in `options` that meet `requirements`, have room for
    /// `requests` plus their DaemonSet overhead, and an available offering
    /// the requirements allow (core: nodeclaim.go
    /// `filterInstanceTypesByRequirements`); then checks minValues (unless
    /// relaxed, under BestEffort).
    pub fn filter(
        &self,
        options: &[u32],
        requirements: &Requirements,
        requests: &Resources,
        pod_ports: &[HostPort],
        claim_ports: &[HostPort],
    ) -> Result<Vec<u32>, FilterFailure> {
        let offerings = OfferingFilter::new(requirements);
        let zone_mask = offerings.zone_mask(self.catalog.zones());
        let mut failure = FilterFailure::default();
        let blocked = self.port_blocked_groups(pod_ports, claim_ports);
        let mut remaining = Vec::new();
        let mut compatible_with = IntersectionProbe::new(requirements);
        for &index in options {
            let group = self.group_of[index as usize] as usize;
            if blocked.holds(group) {
                failure.host_ports = true;
                continue;
            }
            let it = self.instance_type(index);
            let total = *requests + self.groups[group].overhead;
            let fits = total.fits(&it.allocatable);
            let offering = offerings.allows_any(self.catalog, index, zone_mask);
            let compatible = compatible_with.intersects(&self.type_requirements[index as usize]);
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
        if self.relax_min_values {
            return Ok(remaining);
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
    /// `base` with requests `filtered_for`, now under `merged` (`base`
    /// plus more) with `requests` (`filtered_for` plus more): only
    /// requirements that differ from `base` are checked per type,
    /// offerings only when a key they read changed, and when nothing but
    /// the CPU, memory and pod requests changed only the types those
    /// outgrow. Same survivors; `None` on any failure.
    #[allow(clippy::too_many_arguments)]
    pub fn refilter(
        &self,
        options: &[u32],
        base: &Requirements,
        merged: &Requirements,
        filtered_for: &Resources,
        requests: &Resources,
        pod_ports: &[HostPort],
        claim_ports: &[HostPort],
    ) -> Option<Refiltered> {
        // `merged` has every key of `base`; both are sorted by key.
        let mut base_iter = base.iter().peekable();
        let mut offerings_changed = false;
        let mut matchers = Vec::new();
        // The same set (a pod that added nothing) changes nothing.
        let changed = if std::ptr::eq(base, merged) {
            [].iter()
        } else {
            merged.iter()
        };
        for requirement in changed {
            let key = requirement.key();
            while base_iter.next_if(|b| b.key() < key).is_some() {}
            if base_iter.peek().is_some_and(|b| *b == requirement) {
                continue;
            }
            offerings_changed |= matches!(
                key,
                LABEL_TOPOLOGY_ZONE
                    | LABEL_TOPOLOGY_ZONE_ID
                    | LABEL_CAPACITY_TYPE
                    | LABEL_CAPACITY_RESERVATION_ID
                    | LABEL_CAPACITY_RESERVATION_TYPE
            );
            matchers.extend(self.columns.matcher(requirement));
        }
        // The filter with its zone mask, when a key offerings read changed.
        let offerings = offerings_changed.then(|| {
            let filter = OfferingFilter::new(merged);
            let mask = filter.zone_mask(self.catalog.zones());
            (filter, mask)
        });
        let blocked = self.port_blocked_groups(pod_ports, claim_ports);
        // Only positive amounts need comparing: every template option has no
        // negative allocatable (the template's own filter asked it to fit
        // nothing), which is all `Resources::fits` asks of the rest. A type
        // fits `requests` plus its group's overhead where its `room`
        // (allocatable less that overhead) holds `requests`, for every
        // amount the overhead does not make positive on its own.
        fn overhead_only_of<'g>(
            g: &'g DaemonGroup,
            requests: &'g Resources,
        ) -> impl Iterator<Item = (ResourceKind, i64)> + 'g {
            g.overhead
                .iter()
                .filter(|&(kind, amount)| amount > 0 && requests.get(kind) <= 0)
                .map(|(kind, amount)| (kind, amount + requests.get(kind)))
                .filter(|&(_, amount)| amount > 0)
        }
        // Usually no group has any: then no per-group list is made.
        let overhead_only: Vec<Vec<(ResourceKind, i64)>> = if self
            .overhead_kinds
            .iter()
            .any(|&kind| requests.get(kind) <= 0)
            && self
                .groups
                .iter()
                .any(|g| overhead_only_of(g, requests).next().is_some())
        {
            self.groups
                .iter()
                .map(|g| overhead_only_of(g, requests).collect())
                .collect()
        } else {
            Vec::new()
        };
        // Only CPU, memory and pods asked for: the packed rooms answer.
        let packed_wants = cpu_memory_pods_wants(requests);
        let wants: Vec<(usize, i64)> = match packed_wants {
            Some(_) => Vec::new(),
            None => requests
                .iter()
                .filter(|&(_, amount)| amount > 0)
                .map(|(kind, amount)| (kind.slot(), amount))
                .collect(),
        };
        let room_holds = |index: u32| match packed_wants {
            Some([cpu, memory, pods]) => {
                let [room_cpu, room_memory, room_pods] = self.room_cpu_memory_pods[index as usize];
                room_cpu >= cpu && room_memory >= memory && room_pods >= pods
            }
            None => {
                let room = &self.room[index as usize];
                wants
                    .iter()
                    .all(|&(slot, want)| room.amount_at(slot) >= want)
            }
        };
        // The common case: nothing else to check per type but its
        // offerings.
        if let Some([cpu, memory, pods]) = packed_wants
            && blocked.0.is_none()
            && overhead_only.is_empty()
            && matchers.is_empty()
        {
            if offerings.is_none()
                && let Some(before) = cpu_memory_pods_wants(filtered_for)
                && let Some(kept) = self.drop_outgrown(options, before, [cpu, memory, pods])
            {
                return self.unless_min_values_missed(kept, options, merged);
            }
            let rooms = &self.room_cpu_memory_pods;
            let mut most_room = [0; 3];
            let mut room_holds = |index: u32| {
                let room = rooms[index as usize];
                let holds = room[0] >= cpu && room[1] >= memory && room[2] >= pods;
                if holds {
                    most_room = [
                        most_room[0].max(room[0]),
                        most_room[1].max(room[1]),
                        most_room[2].max(room[2]),
                    ];
                }
                holds
            };
            let kept = match &offerings {
                None => Refiltered::keep_where(options, room_holds),
                Some((filter, mask)) => Refiltered::keep_where(options, |index| {
                    // Offerings first: the room seen is then a kept one's.
                    filter.allows_any(self.catalog, index, *mask) && room_holds(index)
                }),
            };
            let kept = match kept {
                None => Refiltered::All,
                Some(kept) => Refiltered::Fewer {
                    kept,
                    most_room: Some(most_room),
                },
            };
            return self.unless_min_values_missed(kept, options, merged);
        }
        let mut remaining = Vec::with_capacity(options.len());
        for &index in options {
            let group = self.group_of[index as usize] as usize;
            if blocked.holds(group) {
                continue;
            }
            if !room_holds(index) {
                continue;
            }
            if let Some(overhead_only) = overhead_only.get(group)
                && !overhead_only.is_empty()
            {
                let allocatable = &self.instance_type(index).allocatable;
                if !overhead_only
                    .iter()
                    .all(|&(kind, want)| allocatable.get(kind) >= want)
                {
                    continue;
                }
            }
            if let Some((filter, mask)) = &offerings
                && !filter.allows_any(self.catalog, index, *mask)
            {
                continue;
            }
            if matchers.iter().all(|m| m.accepts(index)) {
                remaining.push(index);
            }
        }
        let kept = if remaining.len() == options.len() {
            Refiltered::All
        } else {
            Refiltered::Fewer {
                kept: remaining,
                most_room: None,
            }
        };
        self.unless_min_values_missed(kept, options, merged)
    }

    /// The refilter's common case when only the pod's CPU, memory and pod
    /// requests changed what `options` must hold: `options` (ascending
    /// template indices) all have room for `before`, so the ones that no
    /// longer fit `now` are among the types whose room in some amount
    /// lies between the two, found in `by_room` without walking the
    /// options. `None` when the options are few, or those types many (a
    /// NodeClaim's first pod, whose options were kept for no request):
    /// walking the options costs less then.
    fn drop_outgrown(
        &self,
        options: &[u32],
        before: [i64; 3],
        now: [i64; 3],
    ) -> Option<Refiltered> {
        // About what the six searches of the sorted rooms cost.
        const WALKED_UP_TO: usize = 64;
        if options.len() <= WALKED_UP_TO {
            return None;
        }
        debug_assert!(options.is_sorted());
        let rooms = &self.room_cpu_memory_pods;
        let outgrown: [&[u32]; 3] = std::array::from_fn(|amount| {
            if now[amount] <= before[amount] {
                return &[][..];
            }
            let sorted = &self.by_room[amount];
            let room = |index: &u32| rooms[*index as usize][amount];
            let from = sorted.partition_point(|index| room(index) < before[amount]);
            let until = from + sorted[from..].partition_point(|index| room(index) < now[amount]);
            &sorted[from..until]
        });
        // Each such type costs a search of the options; each option a
        // comparison of its rooms.
        const SEARCH_COST_IN_COMPARISONS: usize = 8;
        if outgrown.iter().map(|types| types.len()).sum::<usize>() * SEARCH_COST_IN_COMPARISONS
            > options.len()
        {
            return None;
        }
        // Positions in `options` of the types it loses.
        let mut dropped: Vec<usize> = outgrown
            .iter()
            .flat_map(|types| types.iter())
            .filter_map(|index| options.binary_search(index).ok())
            .collect();
        if dropped.is_empty() {
            return Some(Refiltered::All);
        }
        dropped.sort_unstable();
        dropped.dedup();
        let mut kept = Vec::with_capacity(options.len() - dropped.len());
        let mut from = 0;
        for &at in &dropped {
            kept.extend_from_slice(&options[from..at]);
            from = at + 1;
        }
        kept.extend_from_slice(&options[from..]);
        let most_room = std::array::from_fn(|amount| self.most_room_of(&kept, amount));
        Some(Refiltered::Fewer {
            kept,
            most_room: Some(most_room),
        })
    }

    /// The most room in `amount` (0: CPU, 1: memory, 2: pods) among
    /// `kept` (ascending template indices): the first of them down
    /// `by_room`, which is usually its top; a linear maximum when that
    /// search runs long (options narrowed to a few types).
    fn most_room_of(&self, kept: &[u32], amount: usize) -> i64 {
        const SEARCHED_DOWN_TO: usize = 16;
        let rooms = &self.room_cpu_memory_pods;
        let room = |index: u32| rooms[index as usize][amount];
        if kept.len() > SEARCHED_DOWN_TO
            && let Some(&top) = self.by_room[amount]
                .iter()
                .rev()
                .take(SEARCHED_DOWN_TO)
                .find(|index| kept.binary_search(index).is_ok())
        {
            return room(top);
        }
        kept.iter().map(|&index| room(index)).max().unwrap_or(0)
    }

    /// The options `kept` of `options`, unless none are or they miss a
    /// `minValues` of `requirements` (not checked under BestEffort).
    fn unless_min_values_missed(
        &self,
        kept: Refiltered,
        options: &[u32],
        requirements: &Requirements,
    ) -> Option<Refiltered> {
        let remaining = kept.of(options);
        if remaining.is_empty()
            || (!self.relax_min_values
                && min_values_shortfall(remaining, requirements, &self.type_requirements).is_some())
        {
            return None;
        }
        Some(kept)
    }

    /// The DaemonSet groups whose host ports, or the claim's, conflict
    /// with the pod's.
    fn port_blocked_groups(&self, pod_ports: &[HostPort], claim_ports: &[HostPort]) -> PortBlocked {
        // Without host ports the pod conflicts with no group.
        PortBlocked((!pod_ports.is_empty()).then(|| {
            self.groups
                .iter()
                .map(|g| {
                    any_port_conflict(pod_ports, &g.host_ports)
                        || any_port_conflict(pod_ports, claim_ports)
                })
                .collect()
        }))
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

/// The positive amounts of `requests` as a CPU, memory and pods minimum
/// (`i64::MIN` where nothing is asked); `None` when another amount is.
fn cpu_memory_pods_wants(requests: &Resources) -> Option<[i64; 3]> {
    const KINDS: [ResourceKind; 3] = [ResourceKind::Cpu, ResourceKind::Memory, ResourceKind::Pods];
    let mut minimum = [i64::MIN; 3];
    for slot in 0..SLOTS {
        let amount = requests.amount_at(slot);
        if amount <= 0 {
            continue;
        }
        let at = KINDS.iter().position(|kind| kind.slot() == slot)?;
        minimum[at] = amount;
    }
    Some(minimum)
}

/// Per DaemonSet group, whether a host port conflict rules its types out
/// (`None`: no group's).
struct PortBlocked(Option<Vec<bool>>);

impl PortBlocked {
    fn holds(&self, group: usize) -> bool {
        self.0
            .as_ref()
            .is_some_and(|blocked| blocked.get(group).copied().unwrap_or(true))
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

/// Offering compatibility with the offering keys looked up once (a
/// reserved offering's reservation id and type too).
pub(super) struct OfferingFilter<'r> {
    zone: Option<&'r Requirement>,
    zone_id: Option<&'r Requirement>,
    /// Per capacity type (see [`capacity_type_slot`]), whether allowed.
    capacity_types: [bool; 3],
    reservation_id: Option<&'r Requirement>,
    reservation_type: Option<&'r Requirement>,
    /// The zone answers given so far, by the addresses of the offering's
    /// zone and zone id (a catalog's offerings share their zone strings,
    /// so a filter asks each requirement once per zone).
    zones: RefCell<Vec<((usize, usize), bool)>>,
}

/// Where a capacity type's answer is kept in [`OfferingFilter`].
fn capacity_type_slot(capacity_type: CapacityType) -> usize {
    match capacity_type {
        CapacityType::OnDemand => 0,
        CapacityType::Spot => 1,
        CapacityType::Reserved => 2,
    }
}

impl<'r> OfferingFilter<'r> {
    pub fn new(requirements: &'r Requirements) -> Self {
        let capacity_type = requirements.get(LABEL_CAPACITY_TYPE);
        let allowed = |ct: CapacityType| capacity_type.is_none_or(|r| r.has(ct.label()));
        OfferingFilter {
            zone: requirements.get(LABEL_TOPOLOGY_ZONE),
            zone_id: requirements.get(LABEL_TOPOLOGY_ZONE_ID),
            capacity_types: [
                allowed(CapacityType::OnDemand),
                allowed(CapacityType::Spot),
                allowed(CapacityType::Reserved),
            ],
            reservation_id: requirements.get(LABEL_CAPACITY_RESERVATION_ID),
            reservation_type: requirements.get(LABEL_CAPACITY_RESERVATION_TYPE),
            zones: RefCell::new(Vec::new()),
        }
    }

    /// Whether the offering's zone and zone id are allowed.
    fn allows_zone(&self, o: &Offering) -> bool {
        if self.zone.is_none() && self.zone_id.is_none() {
            return true;
        }
        let key = (o.zone.as_ptr() as usize, o.zone_id.as_ptr() as usize);
        if let Some(&(_, allowed)) = self.zones.borrow().iter().find(|(k, _)| *k == key) {
            return allowed;
        }
        let allowed = self.zone.is_none_or(|r| r.has(o.zone))
            && self.zone_id.is_none_or(|r| r.has(o.zone_id));
        self.zones.borrow_mut().push((key, allowed));
        allowed
    }

    /// The zones and capacity types it allows, as the bits of
    /// [`Catalog::offered_zones`] over the catalog's `zones`.
    pub fn zone_mask(&self, zones: &[Zone]) -> u64 {
        let mut mask = 0;
        for (z, zone) in zones.iter().enumerate() {
            if self.zone.is_none_or(|r| r.has(zone.name))
                && self.zone_id.is_none_or(|r| r.has(zone.id))
            {
                for capacity_type in [CapacityType::OnDemand, CapacityType::Spot] {
                    if self.capacity_types[capacity_type_slot(capacity_type)] {
                        mask |= offered_zone_bit(z, capacity_type).unwrap_or(0);
                    }
                }
            }
        }
        mask
    }

    /// Whether the type at `index` of `catalog` has an offering it allows;
    /// `zone_mask` is [`OfferingFilter::zone_mask`] of the catalog's zones.
    pub fn allows_any(&self, catalog: &Catalog, index: u32, zone_mask: u64) -> bool {
        match catalog.offered_zones(index as usize) {
            Some(offered) => offered & zone_mask != 0,
            None => catalog.instance_types()[index as usize]
                .offerings
                .iter()
                .any(|o| self.allows(o)),
        }
    }

    /// Available and allowed.
    pub fn allows(&self, o: &Offering) -> bool {
        o.available
            && self.capacity_types[capacity_type_slot(o.capacity_type)]
            && self.allows_zone(o)
            && o.reservation.is_none_or(|res| {
                self.reservation_id.is_none_or(|r| r.has(res.id))
                    && self
                        .reservation_type
                        .is_none_or(|r| r.has(res.reservation_type.label()))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cloud::fake::{FAKE_ZONES, instance_types_of};
    use crate::karpenter::provisioning::tests::default_pool;
    use crate::kube::labels::LABEL_INSTANCE_TYPE;
    use crate::kube::resources::GIB;
    use proptest::prelude::*;

    /// The template core of `pool` over `catalog`, without DaemonSets.
    fn core_of(pool: &NodePool, catalog: &Catalog) -> TemplateCore {
        TemplateCore::new(pool, catalog, catalog.type_requirements().clone(), &[])
            .expect("the types pass an empty pod")
    }

    /// The template of `core`, its minValues strict.
    fn strict_template<'a>(
        pool: &'a NodePool,
        catalog: &'a Catalog,
        core: &'a TemplateCore,
    ) -> Template<'a> {
        Template {
            pool_index: 0,
            pool,
            catalog,
            core,
            relax_min_values: false,
        }
    }

    /// The most CPU, memory and pod room among `kept`, counted from the
    /// full rooms (0 for none).
    fn most_room_over(core: &TemplateCore, kept: &[u32]) -> [i64; 3] {
        let most = |amount: fn(&Resources) -> i64| {
            kept.iter()
                .map(|&i| amount(&core.room[i as usize]))
                .max()
                .unwrap_or(0)
        };
        [
            most(Resources::cpu_millis),
            most(Resources::memory_bytes),
            most(Resources::pods),
        ]
    }

    /// `count` types whose CPU, memory and pod slots vary apart, so that
    /// the type with the most room in one is often outgrown in another.
    fn spread_catalog(count: i64) -> Catalog {
        instance_types_of((0..count).map(|i| {
            Resources::cpu_mem((i % 8 + 1) * 1000, ((i * 3) % 7 + 1) * GIB)
                .with(ResourceKind::Pods, ((i * 5) % 9 + 1) * 2)
        }))
    }

    /// Types of varied CPU, memory, pod slots and ephemeral storage (the
    /// last asked for only by filters that cannot use the packed rooms).
    fn varied_catalog() -> Catalog {
        instance_types_of((0..24i64).map(|i| {
            Resources::cpu_mem((i % 8 + 1) * 1000, (i % 5 + 1) * 2 * GIB)
                .with(ResourceKind::Pods, (i % 3 + 1) * 10)
                .with(ResourceKind::EphemeralStorage, (i % 4) * 10 * GIB)
        }))
    }

    proptest! {
        /// The most room among any options kept is their largest, whether
        /// found down the sorted rooms or by a walk of a few options.
        #[test]
        fn most_room_of_is_the_largest_kept(kept_mask: u64) {
            // As many types as mask bits: a subset of them often misses
            // every type of the most room.
            let catalog = spread_catalog(64);
            let pool = default_pool();
            let core = core_of(&pool, &catalog);
            let template = strict_template(&pool, &catalog, &core);
            let kept: Vec<u32> = core
                .options
                .iter()
                .copied()
                .filter(|&i| kept_mask & (1 << (i % 64)) != 0)
                .collect();
            let largest = most_room_over(&core, &kept);
            for (amount, largest) in largest.into_iter().enumerate() {
                prop_assert_eq!(template.most_room_of(&kept, amount), largest);
            }
        }

        /// Pods joining a NodeClaim one after another: each refilter of
        /// the options left, told the requests they were kept for, keeps
        /// what a full filter of the starting options keeps for the sum,
        /// with the most room of what it kept (pods that ask only CPU,
        /// memory and pod slots take the path that looks only at the
        /// types they outgrow).
        #[test]
        fn chained_refilters_keep_what_filter_keeps(
            every in 1usize..5,
            pods in prop::collection::vec((0i64..3000, 0i64..4, 0i64..3), 1..8),
        ) {
            // More types than a refilter walks.
            let catalog = spread_catalog(192);
            let pool = default_pool();
            let core = core_of(&pool, &catalog);
            let template = strict_template(&pool, &catalog, &core);
            // A claim whose options something else narrowed already.
            let start: Vec<u32> = core.options.iter().copied().step_by(every).collect();
            let mut options = start.clone();
            let mut requests = Resources::ZERO;
            for (cpu, gib, slots) in pods {
                let before = requests;
                requests += Resources::cpu_mem(cpu, gib * GIB).with(ResourceKind::Pods, slots);
                let expected = template.filter(&start, &core.requirements, &requests, &[], &[]).ok();
                let refiltered = template.refilter(
                    &options, &core.requirements, &core.requirements, &before, &requests, &[], &[],
                );
                let found = refiltered.as_ref().map(|kept| kept.of(&options).to_vec());
                prop_assert_eq!(&found, &expected);
                if let Some(Refiltered::Fewer { kept, most_room: Some(most_room) }) = &refiltered {
                    prop_assert_eq!(*most_room, most_room_over(&core, kept));
                }
                match found {
                    Some(kept) => options = kept,
                    None => break,
                }
            }
        }
    }

    proptest! {
        /// A refilter keeps exactly the options a full filter keeps under
        /// the merged requirements: with CPU, memory and pods asked (the
        /// packed rooms), with ephemeral storage too, with the template's
        /// own requirements (the same set) or with a zone or instance
        /// types added.
        #[test]
        fn refilter_keeps_what_filter_keeps(
            cpu in 0i64..9000,
            gib in 0i64..11,
            pods in 0i64..31,
            storage_gib in 0i64..40,
            zone in 0usize..4,
            types in prop::collection::vec(0usize..24, 0..3),
        ) {
            let catalog = varied_catalog();
            let pool = default_pool();
            let core = core_of(&pool, &catalog);
            let template = strict_template(&pool, &catalog, &core);
            let mut requests = Resources::cpu_mem(cpu, gib * GIB).with(ResourceKind::Pods, pods);
            if storage_gib % 2 == 1 {
                requests.set(ResourceKind::EphemeralStorage, storage_gib * GIB);
            }
            let mut added = core.requirements.clone();
            if let Some(zone) = FAKE_ZONES.get(zone) {
                added.add(Requirement::in_values(LABEL_TOPOLOGY_ZONE, [zone.name]));
            }
            if !types.is_empty() {
                let names: Vec<String> = types.iter().map(|i| format!("fake-it-{i}")).collect();
                added.add(Requirement::in_values(LABEL_INSTANCE_TYPE, names.iter().map(String::as_str)));
            }
            let merged = if zone == FAKE_ZONES.len() && types.is_empty() {
                &core.requirements
            } else {
                &added
            };
            let expected = template.filter(&core.options, merged, &requests, &[], &[]).ok();
            let refiltered =
                template.refilter(&core.options, &core.requirements, merged, &Resources::ZERO, &requests, &[], &[]);
            // Every option kept is said as `All`; the most room it reports
            // is that of the options it kept.
            match &refiltered {
                Some(Refiltered::All) => {
                    prop_assert_eq!(expected.as_ref().map(Vec::len), Some(core.options.len()));
                }
                Some(Refiltered::Fewer { kept, most_room }) => {
                    prop_assert!(kept.len() < core.options.len());
                    if let Some(most_room) = most_room {
                        prop_assert_eq!(*most_room, most_room_over(&core, kept));
                    }
                }
                None => {}
            }
            let found = refiltered.map(|kept| kept.of(&core.options).to_vec());
            prop_assert_eq!(found, expected);
        }
    }
}
