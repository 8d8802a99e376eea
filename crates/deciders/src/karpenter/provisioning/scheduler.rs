//! The solve loop (core: scheduling/scheduler.go `Solve`, queue.go):
//! NodePool templates in weight order, pods in queue order, each placed on
//! an existing node, an in-flight NodeClaim of this solve, or a new
//! NodeClaim, relaxing one preference at a time, retried until a full pass
//! over the queue makes no progress.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, VecDeque};

use super::claim::{Accepted, Attempt, Claim, Rejection};
use super::existing::{Closure, ExistingNodes, ExistingSet};
use super::fit::{min_values_shortfall, no_undefined, relax_min_values};
use super::pod::PodWork;
use super::prepared::{OfferingKeys, Prepared, PriceTable};
use super::queue::{MergedRuns, PresortedQueue, QueueKey, queued_pod};
use super::reservations::ReservationManager;
use super::template::{OfferingFilter, Template, without_bookkeeping};
use super::topology::Topology;
use super::{
    MinValuesPolicy, NewNodeClaim, PreferencePolicy, PriceToBeat, ProvisioningInput,
    SchedulingPolicies, SchedulingResult, SolveSetup, StopEarly,
};
use crate::cloud::{CapacityType, Catalog, Price};
use crate::kube::labels::{LABEL_CAPACITY_RESERVATION_ID, LABEL_CAPACITY_TYPE, well_known_labels};
use crate::kube::pod::PodSpec;
use crate::kube::requirements::Requirement;
use crate::kube::resources::{ResourceKind, Resources};
use crate::scheduler::{Cluster, NodeId, Pod, PodId};

/// Upstream `MaxInstanceTypes`: options written on a NodeClaim.
pub const MAX_INSTANCE_TYPES: usize = 600;

type Limits = BTreeMap<ResourceKind, i64>;

struct Scheduler<'a> {
    input: &'a ProvisioningInput<'a>,
    prepared: &'a Prepared,
    templates: Vec<Template<'a>>,
    /// Why NodePools have no template (for messages when none is left).
    template_errors: Vec<String>,
    remaining: Vec<Option<Limits>>,
    existing: ExistingSet<'a>,
    claims: Vec<Claim>,
    /// The order in-flight claims are tried in.
    claim_order: ClaimOrder,
    topology: Topology<'a>,
    tolerate_prefer_no_schedule: bool,
    hostnames: u32,
    placed_existing: Vec<(PodId, NodeId)>,
    /// The stops in force (none with minValues).
    stop: StopEarly<'a>,
    /// Set when a pod settled the outcome
    /// ([`StopEarly::bound_pods_must_fit`],
    /// [`StopEarly::not_on_uninitialized`]): the solve ends.
    settled: bool,
    /// Instances left per reservation (`None`: no catalog has reserved
    /// offerings).
    reservations: Option<ReservationManager>,
    /// Upstream's fallback mode (see [`SolveSetup::reserved_fallback`]).
    reserved_fallback: bool,
    /// The last `add` failed for reserved capacity (never relaxed).
    reserved_error: bool,
}

/// Calls `f` with the caller's prepared setup, or one built for this solve.
fn with_prepared<R>(
    input: &ProvisioningInput<'_>,
    setup: SolveSetup<'_>,
    f: impl FnOnce(&Prepared) -> R,
) -> R {
    match setup.prepared {
        Some(prepared) => f(prepared),
        None => f(&Prepared::new(input.nodepools, input.daemonsets)),
    }
}

/// Places the pods (see [`super::solve`]).
pub(super) fn solve(input: &ProvisioningInput<'_>, setup: SolveSetup<'_>) -> SchedulingResult {
    with_prepared(input, setup, |prepared| {
        let existing = ExistingNodes::new(input.cluster, input.daemonsets, prepared);
        solve_prepared(input, setup, prepared, &existing, existing.unclosed(), &[])
    })
}

/// Places the pods on the nodes of `existing` (see
/// [`super::solve_with_existing`] and [`super::solve_with_closure`]).
pub(super) fn solve_with_closure(
    input: &ProvisioningInput<'_>,
    setup: SolveSetup<'_>,
    existing: &ExistingNodes,
    closure: Option<&Closure>,
    closed: &[NodeId],
) -> SchedulingResult {
    let mut closed = closed.to_vec();
    closed.sort_unstable();
    closed.dedup();
    let closure = closure.unwrap_or(existing.unclosed());
    with_prepared(input, setup, |prepared| {
        solve_prepared(input, setup, prepared, existing, closure, &closed)
    })
}

/// The error of every pod when every NodePool is static (core:
/// provisioner.go).
pub const NO_DYNAMIC_NODEPOOLS: &str = "no dynamic nodepools found";

/// The solve; the nodes of `closure` and `closed` (sorted) are taken as
/// marked for deletion.
fn solve_prepared<'a>(
    input: &'a ProvisioningInput<'a>,
    setup: SolveSetup<'a>,
    prepared: &'a Prepared,
    base: &'a ExistingNodes,
    closure: &'a Closure,
    closed: &[NodeId],
) -> SchedulingResult {
    debug_assert!(
        base.fits(input.cluster),
        "existing-node views built from another cluster"
    );
    debug_assert!(
        prepared.matches(input.nodepools, input.daemonsets),
        "prepared setup built from other NodePools, catalogs or DaemonSets"
    );
    let cluster = input.cluster;
    if prepared.order().is_empty() && !input.nodepools.is_empty() {
        // Only static NodePools: upstream's scheduler is not even built
        // (`ErrNodePoolsNotFound`), every pod gets this error.
        let errors = input
            .pods
            .iter()
            .filter(|&&id| queued_pod(cluster, id).is_some())
            .map(|&id| (id, NO_DYNAMIC_NODEPOOLS.to_string()))
            .collect();
        return SchedulingResult {
            errors,
            ..SchedulingResult::default()
        };
    }
    let stop_early = setup.stop_early;
    let mut templates = Vec::new();
    let mut template_errors = Vec::new();
    let relax_min_values = input.policies.min_values == MinValuesPolicy::BestEffort;
    let ignore_preferences = input.policies.preference == PreferencePolicy::Ignore;
    for &i in prepared.order() {
        let ctx = &input.nodepools[i];
        match prepared.template(i) {
            Ok(core) => match &core.min_values_error {
                Some(e) if !relax_min_values => template_errors.push(e.clone()),
                _ => templates.push(Template {
                    pool_index: i,
                    pool: ctx.pool,
                    catalog: ctx.catalog,
                    core,
                    relax_min_values,
                }),
            },
            Err(e) => template_errors.push(e.to_string()),
        }
    }
    let tolerate_prefer_no_schedule = prepared.tolerate_prefer_no_schedule();
    let has_min_values = templates.iter().any(|t| t.requirements.has_min_values());
    let stop = if has_min_values {
        StopEarly::default()
    } else {
        stop_early
    };
    let mut price_watch = stop.unless_cheaper_than.map(PriceWatch::new);

    let existing = ExistingSet::new(base, cluster, closure, closed);
    let remaining = remaining_limits(input, &existing);

    // The batch. Pods are made ready to place as the queue reaches them,
    // unless topology must know them all first (a pod with spread or pod
    // affinity terms, or a running pod with required anti-affinity).
    let mut errors: BTreeMap<PodId, String> = BTreeMap::new();
    let mut batch: Vec<BatchPod<'_>> = Vec::with_capacity(input.pods.len().min(BATCH_START));
    let runs = setup.queue;
    let eager = !base.anti_affinity_pods().is_empty()
        || match runs {
            Some(runs) => runs.has_topology_terms(cluster),
            None => input
                .pods
                .iter()
                .filter_map(|&id| queued_pod(cluster, id))
                .any(|pod| pod.spec.has_topology_terms()),
        };
    debug_assert!(
        runs.is_none_or(|runs| same_queued_pods(cluster, input.pods, runs)),
        "queue runs of other pods than the solve's"
    );
    let (mut topology, mut first_round) = if eager {
        let mut keys = Vec::with_capacity(input.pods.len());
        let mut works: Vec<PodWork<'_>> = Vec::with_capacity(input.pods.len());
        for &id in input.pods {
            let Some((pod, work)) = batch_entry(cluster, id, ignore_preferences) else {
                continue;
            };
            match work {
                Ok(work) => {
                    keys.push((QueueKey::of(pod), works.len()));
                    works.push(work);
                }
                Err(e) => {
                    errors.insert(id, e);
                }
            }
        }
        let topology = Topology::new(
            cluster,
            prepared.domains(),
            prepared.node_requirements(),
            &works,
            base.anti_affinity_pods(),
        );
        batch.extend(works.into_iter().map(BatchPod::Ready));
        (
            topology,
            FirstRound::Heap(keys.into_iter().map(Reverse).collect()),
        )
    } else {
        let first_round = match runs {
            Some(runs) => FirstRound::Runs(MergedRuns::new(cluster, runs)),
            None => {
                let mut keys = Vec::with_capacity(input.pods.len());
                for &id in input.pods {
                    let Some(pod) = queued_pod(cluster, id) else {
                        continue;
                    };
                    keys.push((QueueKey::of(pod), batch.len()));
                    batch.push(BatchPod::Waiting(id, &pod.spec));
                }
                FirstRound::Heap(keys.into_iter().map(Reverse).collect())
            }
        };
        let topology = Topology::new(
            cluster,
            prepared.domains(),
            prepared.node_requirements(),
            &[],
            &[],
        );
        (topology, first_round)
    };
    if topology.tracks_hostnames() {
        for hostname in existing.hostnames() {
            topology.register_host(hostname);
        }
    }

    let reservations = ReservationManager::new(&templates);
    let mut scheduler = Scheduler {
        input,
        prepared,
        templates,
        template_errors,
        remaining,
        existing,
        claims: Vec::new(),
        claim_order: ClaimOrder::default(),
        topology,
        tolerate_prefer_no_schedule,
        hostnames: 0,
        placed_existing: Vec::new(),
        stop,
        settled: false,
        reservations,
        reserved_fallback: setup.reserved_fallback,
        reserved_error: false,
    };
    let mut deferred = BTreeSet::new();

    // The queue: the batch in queue order (see `FirstRound`), then the
    // pods put back, in turn.
    let mut put_back: VecDeque<usize> = VecDeque::new();
    // Pods placed so far, and their count when each pod was put back: the
    // solve ends when one comes round again with no pod placed since.
    let mut placed = 0usize;
    let mut placed_when_put_back: Vec<usize> = Vec::new();
    // What a stop ends (see `SchedulingResult::stopped_on`).
    let stops = stop.at_new_nodeclaims.is_some()
        || stop.unless_cheaper_than.is_some()
        || stop.bound_pods_must_fit
        || !stop.not_on_uninitialized.is_empty();
    // Sized as a batch made as the queue reaches its pods: a stop ends most
    // solves within it.
    let mut taken: Vec<PodId> = Vec::with_capacity(if stops {
        input.pods.len().min(BATCH_START)
    } else {
        0
    });
    let mut requeued = false;
    let mut stopped = false;
    loop {
        let next = match first_round.next(cluster, &mut batch) {
            Some(next) => next,
            None => match put_back.front() {
                Some(&next) if placed_when_put_back[next] != placed => {
                    put_back.pop_front();
                    next
                }
                _ => break,
            },
        };
        let pod = match batch[next].ready(ignore_preferences) {
            Ok(pod) => pod,
            Err((id, e)) => {
                // Never queued: its requirements are invalid.
                errors.insert(id, e);
                continue;
            }
        };
        if stops {
            taken.push(pod.id);
        }
        match scheduler.try_schedule(pod) {
            Ok(()) => {
                placed += 1;
                errors.remove(&pod.id);
                deferred.remove(&pod.id);
                let enough_claims = stop
                    .at_new_nodeclaims
                    .is_some_and(|n| scheduler.claims.len() >= n);
                let out_of_reach = price_watch
                    .as_mut()
                    .is_some_and(|watch| watch.out_of_reach(&scheduler));
                if enough_claims || out_of_reach || scheduler.settled {
                    stopped = true;
                    break;
                }
            }
            Err(reason) => {
                if scheduler.reserved_error {
                    deferred.insert(pod.id);
                } else {
                    deferred.remove(&pod.id);
                }
                errors.insert(pod.id, reason);
                if scheduler.settled {
                    stopped = true;
                    break;
                }
                scheduler.topology.update(pod.id, &pod.spec);
                put_back.push_back(next);
                if placed_when_put_back.len() <= next {
                    placed_when_put_back.resize(next + 1, 0);
                }
                placed_when_put_back[next] = placed;
                requeued = true;
            }
        }
    }
    let mut result = scheduler.finish(errors);
    result.deferred = deferred.into_iter().collect();
    result.stopped_on = (stopped && !requeued).then_some(taken);
    result
}

/// The first round over the batch, in queue order.
enum FirstRound<'r> {
    /// Indices of a batch built whole (a heap, as a stop usually comes
    /// after a few pods; the index breaks ties, as a stable sort would).
    Heap(BinaryHeap<Reverse<(QueueKey, usize)>>),
    /// The caller's runs, each pod added to the batch when reached.
    Runs(MergedRuns<'r>),
}

impl<'r> FirstRound<'r> {
    /// The batch index of the next pod, adding it to `batch` if it is not
    /// there yet.
    fn next<'s>(&mut self, cluster: &'s Cluster, batch: &mut Vec<BatchPod<'s>>) -> Option<usize> {
        match self {
            FirstRound::Heap(heap) => heap.pop().map(|Reverse((_, next))| next),
            FirstRound::Runs(runs) => {
                for id in runs.by_ref() {
                    // Runs hold queued pods of this cluster.
                    if let Some(pod) = queued_pod(cluster, id) {
                        batch.push(BatchPod::Waiting(id, &pod.spec));
                        return Some(batch.len() - 1);
                    }
                }
                None
            }
        }
    }
}

/// Room for this many pods in a batch made as the queue reaches them (a
/// stopped solve reaches few).
const BATCH_START: usize = 16;

/// Whether `runs` hold exactly the pods of `pods` a solve takes.
fn same_queued_pods(cluster: &Cluster, pods: &[PodId], runs: PresortedQueue<'_>) -> bool {
    let mut given: Vec<PodId> = pods
        .iter()
        .copied()
        .filter(|&id| queued_pod(cluster, id).is_some())
        .collect();
    let mut queued: Vec<PodId> = MergedRuns::new(cluster, runs).collect();
    given.sort_unstable();
    queued.sort_unstable();
    given == queued
}

/// A pod of the batch: made ready to place (its requirements derived) when
/// the queue first reaches it.
enum BatchPod<'s> {
    Waiting(PodId, &'s PodSpec),
    Ready(PodWork<'s>),
}

impl<'s> BatchPod<'s> {
    /// The pod ready to place, or its id and why its requirements are
    /// invalid (it then leaves the queue).
    fn ready(&mut self, ignore_preferences: bool) -> Result<&PodWork<'s>, (PodId, String)> {
        if let BatchPod::Waiting(id, spec) = *self {
            *self =
                BatchPod::Ready(PodWork::new(id, spec, ignore_preferences).map_err(|e| (id, e))?);
        }
        match self {
            BatchPod::Ready(pod) => Ok(pod),
            // Not reached: made ready above.
            BatchPod::Waiting(id, _) => Err((*id, String::new())),
        }
    }
}

/// The pod's work in a solve's batch (see [`queued_pod`]); an error when
/// its requirements are invalid.
fn batch_entry(
    cluster: &Cluster,
    id: PodId,
    ignore_preferences: bool,
) -> Option<(&Pod, Result<PodWork<'_>, String>)> {
    let pod = queued_pod(cluster, id)?;
    Some((pod, PodWork::new(id, &pod.spec, ignore_preferences)))
}

/// Whether a solve over `pods` takes the pods of `first` from its queue
/// before any other, in that order: what a kept consolidation verdict
/// whose solve a stop ended rests on (see
/// [`SchedulingResult::stopped_on`]). Linear in `pods`: only the pods that
/// queue no later than the last of `first` are looked at closely.
pub fn queue_starts_with(
    cluster: &Cluster,
    pods: &[PodId],
    policies: SchedulingPolicies,
    first: &[PodId],
) -> bool {
    let Some(last) = last_key(cluster, first) else {
        return first.is_empty();
    };
    let ahead = keyed_up_to(cluster, pods, last);
    takes_first(cluster, ahead, policies, first)
}

/// [`queue_starts_with`] for a solve given `queue`: its shared runs are in
/// queue order already, so only their pods up to the last of `first` are
/// looked at, and the rest of the solve's pods one by one.
pub fn presorted_queue_starts_with(
    cluster: &Cluster,
    queue: PresortedQueue<'_>,
    policies: SchedulingPolicies,
    first: &[PodId],
) -> bool {
    let Some(last) = last_key(cluster, first) else {
        return first.is_empty();
    };
    let shared = queue
        .shared
        .iter()
        .flat_map(|run| run.up_to(last).iter().copied());
    let ahead = shared.chain(keyed_up_to(cluster, queue.own, last));
    takes_first(cluster, ahead, policies, first)
}

/// The queue key of the last pod of `first`; `None` when `first` is empty
/// or that pod is gone.
fn last_key(cluster: &Cluster, first: &[PodId]) -> Option<QueueKey> {
    first
        .last()
        .and_then(|&id| cluster.pod(id))
        .map(QueueKey::of)
}

/// The pods of `pods` that exist and queue no later than `last`, keyed.
fn keyed_up_to<'p>(
    cluster: &'p Cluster,
    pods: &'p [PodId],
    last: QueueKey,
) -> impl Iterator<Item = (QueueKey, PodId)> + 'p {
    pods.iter().filter_map(move |&id| {
        let key = QueueKey::of(cluster.pod(id)?);
        (key <= last).then_some((key, id))
    })
}

/// Whether the pods of `ahead` (those queued no later than the last of
/// `first`, keyed) that a solve takes are exactly `first`, in queue order.
fn takes_first(
    cluster: &Cluster,
    ahead: impl Iterator<Item = (QueueKey, PodId)>,
    policies: SchedulingPolicies,
    first: &[PodId],
) -> bool {
    let ignore_preferences = policies.preference == PreferencePolicy::Ignore;
    let mut taken: Vec<(QueueKey, PodId)> = Vec::with_capacity(first.len());
    // Whether a pod's requirements are valid depends on its spec alone,
    // and replicas share theirs: the last spec's answer is kept.
    let mut last: Option<(*const PodSpec, bool)> = None;
    for (key, id) in ahead {
        let Some(pod) = queued_pod(cluster, id) else {
            continue;
        };
        let spec: *const PodSpec = pod.spec.as_ref();
        let valid = match last {
            Some((seen, valid)) if std::ptr::eq(seen, spec) => valid,
            _ => PodWork::new(id, &pod.spec, ignore_preferences).is_ok(),
        };
        last = Some((spec, valid));
        if valid {
            if taken.len() == first.len() {
                return false;
            }
            taken.push((key, id));
        }
    }
    if taken.len() != first.len() {
        return false;
    }
    taken.sort_unstable();
    taken.iter().map(|&(_, id)| id).eq(first.iter().copied())
}

/// Watches the first new NodeClaim against a [`PriceToBeat`]
/// ([`super::StopEarly::unless_cheaper_than`]).
struct PriceWatch {
    to_beat: PriceToBeat,
    /// The claim's option count at the last check that found it could
    /// still undercut the price (checked again only once it narrowed).
    checked_options: usize,
}

impl PriceWatch {
    fn new(to_beat: PriceToBeat) -> PriceWatch {
        PriceWatch {
            to_beat,
            checked_options: usize::MAX,
        }
    }

    /// Whether the first new NodeClaim, if any, can no longer undercut the
    /// price.
    fn out_of_reach(&mut self, scheduler: &Scheduler<'_>) -> bool {
        let Some(claim) = scheduler.claims.first() else {
            return false;
        };
        if claim.options.len() == self.checked_options {
            return false;
        }
        self.checked_options = claim.options.len();
        let counted =
            counted_capacity_types(self.to_beat, claim.requirements.get(LABEL_CAPACITY_TYPE));
        let catalog = scheduler.templates[claim.template].catalog;
        !claim
            .options
            .iter()
            .any(|&i| undercuts(catalog, i, counted, self.to_beat.price))
    }
}

/// Whether some option of `template` with room for `requests` (cpu,
/// memory, pods) has an offering that undercuts `to_beat`: a claim the
/// pod opens has no other options.
fn could_undercut(template: &Template<'_>, requests: &Resources, to_beat: PriceToBeat) -> bool {
    let counted = counted_capacity_types(to_beat, None);
    template.options.iter().any(|&i| {
        let room = &template.room[i as usize];
        room.cpu_millis() >= requests.cpu_millis()
            && room.memory_bytes() >= requests.memory_bytes()
            && room.pods() >= requests.pods()
            && undercuts(template.catalog, i, counted, to_beat.price)
    })
}

/// Every capacity type (the order of the flags below).
const CAPACITY_TYPES: [CapacityType; 3] = [
    CapacityType::OnDemand,
    CapacityType::Spot,
    CapacityType::Reserved,
];

/// Which capacity types' offerings count against `to_beat` (spot only with
/// its `spot`), among those a capacity-type requirement lets through (all
/// without one), by [`CAPACITY_TYPES`] position.
fn counted_capacity_types(to_beat: PriceToBeat, allowed: Option<&Requirement>) -> [bool; 3] {
    CAPACITY_TYPES.map(|ct| {
        (ct != CapacityType::Spot || to_beat.spot) && allowed.is_none_or(|r| r.has(ct.label()))
    })
}

/// Whether catalog type `index` has an available offering below `price`
/// of a counted capacity type.
fn undercuts(catalog: &Catalog, index: u32, counted: [bool; 3], price: Price) -> bool {
    CAPACITY_TYPES.iter().zip(counted).any(|(&ct, counted)| {
        counted
            && catalog
                .cheapest_price(index as usize, ct)
                .is_some_and(|p| p < price)
    })
}

/// Whether a pod's chances of fitting only shrink as other pods are
/// placed: it has nothing to relax and no topology spread or required pod
/// affinity (which other pods' placements can satisfy).
fn is_rigid(spec: &PodSpec) -> bool {
    spec.node_affinity.required.len() <= 1
        && spec.node_affinity.preferred.is_empty()
        && spec.pod_affinity.preferred.is_empty()
        && spec.pod_affinity.required.is_empty()
        && spec.pod_anti_affinity.preferred.is_empty()
        && spec.topology_spread.is_empty()
}

/// Remaining limits per NodePool: spec.limits − what its nodes that are
/// neither marked for deletion nor closed use (`None` without limits).
fn remaining_limits(
    input: &ProvisioningInput<'_>,
    existing: &ExistingSet<'_>,
) -> Vec<Option<Limits>> {
    // A pool name repeated in `nodepools` is charged to its first entry.
    let usage: Vec<_> = input
        .nodepools
        .iter()
        .map(|ctx| existing.pool_usage(input.cluster, &ctx.pool.name))
        .collect();
    input
        .nodepools
        .iter()
        .enumerate()
        .map(|(i, ctx)| {
            if ctx.pool.limits.is_empty() {
                return None;
            }
            let first = input
                .nodepools
                .iter()
                .position(|c| c.pool.name == ctx.pool.name);
            let mut limits = ctx.pool.limits.clone();
            if first == Some(i) {
                for (kind, left) in limits.iter_mut() {
                    *left -= if input.node_count_resource == Some(*kind) {
                        usage[i].nodes
                    } else {
                        usage[i].capacity.get(*kind)
                    };
                }
            }
            Some(limits)
        })
        .collect()
}

/// A resource amount as limits count it (`nodes` is one per node).
fn capacity_for_limit(
    input: &ProvisioningInput<'_>,
    kind: ResourceKind,
    capacity: &Resources,
) -> i64 {
    if input.node_count_resource == Some(kind) {
        1
    } else {
        capacity.get(kind)
    }
}

impl<'a> Scheduler<'a> {
    /// Places the pod, relaxing a copy of it one preference at a time
    /// until it fits or nothing is left to relax.
    fn try_schedule(&mut self, pod: &PodWork<'_>) -> Result<(), String> {
        let mut reason = match self.add(pod) {
            Ok(()) => return Ok(()),
            Err(reason) => reason,
        };
        // A pod short of reserved capacity may fit once other NodeClaims
        // launched: nothing of it is relaxed (upstream trySchedule).
        if self.settled || self.reserved_error {
            return Err(reason);
        }
        let mut relaxed = pod.clone();
        loop {
            if !relaxed.relax(self.tolerate_prefer_no_schedule) {
                return Err(reason);
            }
            self.topology.update(relaxed.id, &relaxed.spec);
            match self.add(&relaxed) {
                Ok(()) => return Ok(()),
                Err(again) if self.reserved_error => return Err(again),
                Err(again) => reason = again,
            }
        }
    }

    fn add(&mut self, pod: &PodWork<'_>) -> Result<(), String> {
        self.reserved_error = false;
        // The groups that constrain the pod stay as they are until it is
        // placed: looked up once for the three places tried.
        let topology = self.topology.for_pod(pod);
        // 1. Existing nodes, initialized first, then by name.
        let on_existing = self
            .existing
            .first_fit(&pod.requests, |node| node.can_add(&topology, pod));
        if let Some((i, requirements)) = on_existing {
            let node = self.existing.view(i);
            if !self.stop.not_on_uninitialized.is_empty()
                && self
                    .stop
                    .not_on_uninitialized
                    .binary_search(&pod.id)
                    .is_ok()
                && self
                    .input
                    .cluster
                    .node(node.id)
                    .is_some_and(|n| !n.initialized)
            {
                self.settled = true;
            }
            self.topology
                .record(pod, &node.taints, &requirements, no_undefined(), None);
            self.placed_existing.push((pod.id, node.id));
            self.existing.add(i, pod, requirements);
            return Ok(());
        }
        // 2. NodeClaims opened in this solve, fewest pods first.
        let on_claim = {
            if topology.rejects_all_claims(self.claims.len()) {
                None
            } else {
                self.claim_order.find_map(|i| {
                    if topology.rejects_claim(i) {
                        return None;
                    }
                    let claim = &self.claims[i];
                    let template = &self.templates[claim.template];
                    let accepted = claim
                        .can_add(template, &topology, pod, Attempt::Quiet)
                        .ok()?;
                    let reserved = self.to_reserve(template, claim, &accepted).ok()?;
                    Some((i, accepted, reserved))
                })
            }
        };
        if let Some((i, accepted, reserved)) = on_claim {
            let claim = &mut self.claims[i];
            let template = &self.templates[claim.template];
            let before = claim.pods.len();
            claim.add(template, pod, accepted);
            if let Some(manager) = self.reservations.as_mut() {
                manager.update(&claim.reserved, &reserved);
            }
            claim.reserved = reserved;
            self.claim_order.grew(i, before);
            self.topology
                .register_claim_host(&claim.hostname, &mut claim.hosts_registered);
            self.topology.record(
                pod,
                &template.pool.taints,
                &claim.requirements,
                well_known_labels(),
                Some((i, &claim.hostname)),
            );
            return Ok(());
        }
        // 3. A new NodeClaim from the first template that accepts.
        if self.settles_before_new_claim(pod) {
            self.settled = true;
            return Err("a new NodeClaim would reach a stop".to_string());
        }
        if self.templates.is_empty() {
            return Err(self
                .template_errors
                .first()
                .cloned()
                .unwrap_or_else(|| "no NodePools".to_string()));
        }
        let mut closest: Option<Rejection> = None;
        let mut opened = None;
        let mut short_of_reserved = None;
        {
            for t in 0..self.templates.len() {
                let template = &self.templates[t];
                let options = match self.options_within_limits(template) {
                    Ok(options) => options,
                    Err(rejection) => {
                        keep_closest(&mut closest, rejection);
                        continue;
                    }
                };
                self.hostnames += 1;
                let hostname = format!("hostname-placeholder-{:04}", self.hostnames);
                let claim = Claim::new(t, template, hostname, options);
                match claim.can_add(template, &topology, pod, Attempt::Explain) {
                    Ok(accepted) => match self.to_reserve(template, &claim, &accepted) {
                        Ok(reserved) => {
                            opened = Some((t, claim, accepted, reserved));
                            break;
                        }
                        // Not the next NodePool: this one has the reserved
                        // capacity the pod is to wait for (upstream
                        // addToNewNodeClaim).
                        Err(message) => {
                            short_of_reserved = Some(format!(
                                "NodePool {}: deferring the decision to a later simulation, limited reserved offering capacity: {message}",
                                template.pool.name
                            ));
                            break;
                        }
                    },
                    Err(rejection) => keep_closest(&mut closest, rejection),
                }
            }
        }
        if let Some(message) = short_of_reserved {
            self.reserved_error = true;
            return Err(message);
        }
        let Some((t, mut claim, accepted, reserved)) = opened else {
            return Err(closest.map_or_else(String::new, |r| r.message().to_string()));
        };
        let template = &self.templates[t];
        let index = self.claims.len();
        claim.add(template, pod, accepted);
        if let Some(manager) = self.reservations.as_mut() {
            manager.update(&claim.reserved, &reserved);
        }
        claim.reserved = reserved;
        self.topology
            .register_claim_host(&claim.hostname, &mut claim.hosts_registered);
        self.topology.record(
            pod,
            &template.pool.taints,
            &claim.requirements,
            well_known_labels(),
            Some((index, &claim.hostname)),
        );
        self.subtract_max(t, &claim.options);
        self.claim_order.push(index, claim.pods.len());
        self.claims.push(claim);
        Ok(())
    }

    /// Whether `pod`, having found no existing node or open claim, settles
    /// the outcome ([`StopEarly::bound_pods_must_fit`]): it is bound and
    /// rigid, and any claim it opens reaches a stop (the claim count, or,
    /// as the first, a price no option with room for it undercuts). If it
    /// fails instead, its error is final: it can no more fit an existing
    /// node or claim later, as placing pods only takes room and adds
    /// anti-affinity.
    fn settles_before_new_claim(&self, pod: &PodWork<'_>) -> bool {
        if !self.stop.bound_pods_must_fit
            || self.tolerate_prefer_no_schedule
            || !is_rigid(&pod.spec)
            || self
                .input
                .cluster
                .pod(pod.id)
                .is_none_or(|p| p.node.is_none())
        {
            return false;
        }
        if self
            .stop
            .at_new_nodeclaims
            .is_some_and(|n| self.claims.len() + 1 >= n)
        {
            return true;
        }
        let Some(to_beat) = self.stop.unless_cheaper_than else {
            return false;
        };
        self.claims.is_empty()
            && !self
                .templates
                .iter()
                .any(|t| could_undercut(t, &pod.requests, to_beat))
    }

    /// The reservations `claim` holds once the pod it `accepted` joins (none
    /// without reserved offerings anywhere).
    fn to_reserve(
        &self,
        template: &Template<'_>,
        claim: &Claim,
        accepted: &Accepted,
    ) -> Result<Vec<&'static str>, &'static str> {
        let Some(manager) = &self.reservations else {
            return Ok(Vec::new());
        };
        manager.to_reserve(
            template,
            accepted.options.of(&claim.options),
            accepted
                .requirements
                .as_ref()
                .unwrap_or(&claim.requirements),
            &claim.reserved,
            self.reserved_fallback,
        )
    }

    /// The template's types that stay within the pool's remaining limits.
    fn options_within_limits(&self, template: &Template<'_>) -> Result<Vec<u32>, Rejection> {
        let Some(limits) = &self.remaining[template.pool_index] else {
            return Ok(template.options.clone());
        };
        // Every option fits when the largest does (the common case).
        let all_fit = !template.options.is_empty()
            && limits.iter().all(|(kind, left)| {
                let most = if self.input.node_count_resource == Some(*kind) {
                    1
                } else {
                    template.max_capacity.get(*kind)
                };
                most <= *left
            });
        if all_fit {
            return Ok(template.options.clone());
        }
        let name = &template.pool.name;
        if let Some(kind) = self.input.node_count_resource
            && limits.get(&kind).is_some_and(|&left| left <= 0)
        {
            return Err(Rejection::Limits(format!(
                "NodePool {name}: nodes limit {} reached",
                template.pool.limits.get(&kind).copied().unwrap_or(0)
            )));
        }
        let mut blocking: Option<ResourceKind> = None;
        let options: Vec<u32> = template
            .options
            .iter()
            .copied()
            .filter(|&i| {
                let capacity = &template.instance_type(i).capacity;
                let over = limits
                    .iter()
                    .find(|(kind, left)| capacity_for_limit(self.input, **kind, capacity) > **left);
                if let Some((kind, _)) = over {
                    blocking.get_or_insert(*kind);
                }
                over.is_none()
            })
            .collect();
        if options.is_empty() {
            let kind = blocking.unwrap_or(ResourceKind::Cpu);
            return Err(Rejection::Limits(format!(
                "NodePool {name}: {} limit {} reached",
                self.resource_name(kind),
                format_limit(kind, template.pool.limits.get(&kind).copied().unwrap_or(0))
            )));
        }
        Ok(options)
    }

    fn resource_name(&self, kind: ResourceKind) -> &'static str {
        if self.input.node_count_resource == Some(kind) {
            "nodes"
        } else {
            kind.well_known_name().unwrap_or("extended resource")
        }
    }

    /// Pessimistically charges the largest option against the limits.
    fn subtract_max(&mut self, template: usize, options: &[u32]) {
        let template = &self.templates[template];
        let Some(limits) = self.remaining[template.pool_index].as_mut() else {
            return;
        };
        // A claim's options are a subset of its template's: as many means
        // the same, whose maximum the template keeps.
        let all_options = !options.is_empty() && options.len() == template.options.len();
        for (kind, left) in limits.iter_mut() {
            if self.input.node_count_resource == Some(*kind) {
                *left -= i64::from(!options.is_empty());
                continue;
            }
            if all_options {
                *left -= template.max_capacity.get(*kind);
                continue;
            }
            let most = options
                .iter()
                .map(|&i| template.instance_type(i).capacity.get(*kind))
                .max()
                .unwrap_or(0);
            *left -= most;
        }
    }

    /// FinalizeScheduling and truncation to the cheapest 600 options.
    fn finish(self, mut errors: BTreeMap<PodId, String>) -> SchedulingResult {
        let mut new_nodeclaims = Vec::new();
        for claim in &self.claims {
            let template = &self.templates[claim.template];
            let mut requirements = if claim.narrowed {
                without_bookkeeping(&claim.requirements)
            } else {
                template.launch_requirements.clone()
            };
            // Upstream FinalizeScheduling: a NodeClaim that reserved
            // capacity launches into those reservations only, so two
            // NodeClaims never launch into one instance left.
            if !claim.reserved.is_empty() {
                requirements.add(Requirement::in_values(
                    LABEL_CAPACITY_TYPE,
                    [CapacityType::Reserved.label()],
                ));
                requirements.add(Requirement::in_values(
                    LABEL_CAPACITY_RESERVATION_ID,
                    claim.reserved.iter().copied(),
                ));
            }
            if template.relax_min_values {
                // What the last pod's filter lowered them to (the options
                // only shrink, so the last lowering is over these).
                relax_min_values(
                    &claim.options,
                    &mut requirements,
                    &template.type_requirements,
                );
            }
            let offering_keys = OfferingKeys::new(&requirements).as_array();
            let prices = self
                .prepared
                .price_table(template.pool_index, offering_keys, || {
                    let offerings = OfferingFilter::new(&requirements);
                    PriceTable::new(
                        &template.options,
                        |i| {
                            template
                                .cheapest_price(i, &offerings)
                                .unwrap_or(Price::from_micros(i64::MAX))
                        },
                        |i| template.instance_type(i).name(),
                    )
                });
            // The options by (price, name, index): the table's order, kept
            // to the claim's options (a subset of the template's).
            let mut is_option = vec![0u64; template.catalog.len().div_ceil(64)];
            for &i in &claim.options {
                is_option[i as usize / 64] |= 1 << (i % 64);
            }
            let instance_types: Vec<u32> = prices
                .order
                .iter()
                .copied()
                .filter(|&i| is_option[i as usize / 64] & (1 << (i % 64)) != 0)
                .take(MAX_INSTANCE_TYPES)
                .collect();
            debug_assert_eq!(
                instance_types.len(),
                claim.options.len().min(MAX_INSTANCE_TYPES),
                "options are distinct"
            );
            // `Truncate` checks minValues under Strict only.
            if let Some(shortfall) = (!template.relax_min_values)
                .then(|| {
                    min_values_shortfall(
                        &instance_types,
                        &requirements,
                        &template.type_requirements,
                    )
                })
                .flatten()
            {
                for &pod in &claim.pods {
                    errors.insert(
                        pod,
                        format!(
                            "NodePool {}: minValues not met by the {MAX_INSTANCE_TYPES} cheapest instance types: {shortfall}",
                            template.pool.name
                        ),
                    );
                }
                continue;
            }
            new_nodeclaims.push(NewNodeClaim {
                nodepool: template.pool_index,
                requirements,
                instance_types: instance_types.iter().map(|&i| i as usize).collect(),
                pods: claim.pods.clone(),
                requests: claim.requests + claim.min_daemon_overhead(template),
                min_values_relaxed: template
                    .relax_min_values
                    .then_some(claim.min_values_relaxed),
            });
        }
        SchedulingResult {
            new_nodeclaims,
            existing: self.placed_existing,
            errors: errors.into_iter().collect(),
            deferred: Vec::new(),
            stopped_on: None,
        }
    }
}

/// In-flight claim indices in the order `add` tries them: by pod count
/// ascending, as a stable sort before every pod would leave them. A claim
/// that gains a pod moves to the front of its new count (it came before
/// every claim already there); a new claim goes last among its count.
///
/// A list linked through the claim indices, with the first and last claim
/// of each count: a move takes a few writes, whatever the claims number.
struct ClaimOrder {
    /// The first claim in try order.
    head: usize,
    /// Per claim, the next and the previous claim in try order.
    links: Vec<Link>,
    /// Per pod count, the first and the last claim holding that many.
    ends: Vec<Ends>,
}

#[derive(Clone, Copy)]
struct Link {
    next: usize,
    prev: usize,
}

#[derive(Clone, Copy)]
struct Ends {
    first: usize,
    last: usize,
}

/// No claim.
const NO_CLAIM: usize = usize::MAX;

const NO_ENDS: Ends = Ends {
    first: NO_CLAIM,
    last: NO_CLAIM,
};

impl Default for ClaimOrder {
    fn default() -> Self {
        ClaimOrder {
            head: NO_CLAIM,
            links: Vec::new(),
            ends: Vec::new(),
        }
    }
}

impl ClaimOrder {
    /// The first `Some` of `f` over the claims in try order.
    #[inline]
    fn find_map<T>(&self, mut f: impl FnMut(usize) -> Option<T>) -> Option<T> {
        let mut at = self.head;
        while at != NO_CLAIM {
            if let Some(found) = f(at) {
                return Some(found);
            }
            at = self.links[at].next;
        }
        None
    }

    fn push(&mut self, claim: usize, count: usize) {
        if self.links.len() <= claim {
            self.links.resize(
                claim + 1,
                Link {
                    next: NO_CLAIM,
                    prev: NO_CLAIM,
                },
            );
        }
        self.counts_up_to(count);
        // Last among its count: after the last claim holding as many pods
        // or fewer.
        let after = self.ends[..=count]
            .iter()
            .rev()
            .map(|ends| ends.last)
            .find(|&c| c != NO_CLAIM)
            .unwrap_or(NO_CLAIM);
        self.link_after(claim, after);
        let ends = &mut self.ends[count];
        if ends.first == NO_CLAIM {
            ends.first = claim;
        }
        ends.last = claim;
    }

    /// `claim` went from `before` pods to `before + 1`.
    fn grew(&mut self, claim: usize, before: usize) {
        let now = before + 1;
        self.counts_up_to(now);
        let link = self.links[claim];
        // Out of the claims holding `before` (they are adjacent).
        let left = &mut self.ends[before];
        match (left.first == claim, left.last == claim) {
            (true, true) => *left = NO_ENDS,
            (true, false) => left.first = link.next,
            (false, true) => left.last = link.prev,
            (false, false) => {}
        }
        let left_last = left.last;
        // Just before the claims holding `now` pods, else just after those
        // left holding `before`, else where it is.
        let after = match self.ends[now].first {
            NO_CLAIM => left_last,
            first_now => self.links[first_now].prev,
        };
        if after != NO_CLAIM && after != claim {
            self.unlink(claim);
            self.link_after(claim, after);
        }
        let ends = &mut self.ends[now];
        ends.first = claim;
        if ends.last == NO_CLAIM {
            ends.last = claim;
        }
    }

    fn counts_up_to(&mut self, count: usize) {
        if self.ends.len() <= count {
            // Counts grow one at a time: room for a few more at once.
            self.ends.reserve((count + 1).max(8) - self.ends.len());
            self.ends.resize(count + 1, NO_ENDS);
        }
    }

    /// Links `claim` after `after` (at the head for [`NO_CLAIM`]).
    fn link_after(&mut self, claim: usize, after: usize) {
        let next = match after {
            NO_CLAIM => std::mem::replace(&mut self.head, claim),
            after => std::mem::replace(&mut self.links[after].next, claim),
        };
        self.links[claim] = Link { next, prev: after };
        if next != NO_CLAIM {
            self.links[next].prev = claim;
        }
    }

    fn unlink(&mut self, claim: usize) {
        let Link { next, prev } = self.links[claim];
        match prev {
            NO_CLAIM => self.head = next,
            prev => self.links[prev].next = next,
        }
        if next != NO_CLAIM {
            self.links[next].prev = prev;
        }
    }
}

/// Keeps the rejection that got furthest; the earlier (heavier) NodePool
/// wins ties.
fn keep_closest(closest: &mut Option<Rejection>, rejection: Rejection) {
    if closest.as_ref().is_none_or(|c| rejection.rank() > c.rank()) {
        *closest = Some(rejection);
    }
}

/// A limit value as written in a NodePool (`100` CPUs, `64Gi`).
fn format_limit(kind: ResourceKind, amount: i64) -> String {
    super::fit::format_resources(&Resources::ZERO.with(kind, amount))
        .split_once('=')
        .map_or_else(|| amount.to_string(), |(_, v)| v.to_string())
}

#[cfg(test)]
mod tests {
    use super::ClaimOrder;

    /// The incremental order matches what the straightforward solve did:
    /// a stable sort of the claim list by pod count before every pod.
    #[test]
    fn claim_order_matches_stable_sort_before_every_pod() {
        let mut counts: Vec<usize> = Vec::new();
        let mut sorted: Vec<usize> = Vec::new();
        let mut order = ClaimOrder::default();
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..2000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            sorted.sort_by_key(|&i| counts[i]);
            let expected: Vec<usize> = sorted.clone();
            let mut tried = Vec::new();
            let none: Option<()> = order.find_map(|claim| {
                tried.push(claim);
                None
            });
            assert_eq!(none, None);
            assert_eq!(tried, expected);
            if let Some(&last) = expected.last() {
                let mut calls = 0;
                let found = order.find_map(|claim| {
                    calls += 1;
                    (claim == expected[0] || claim == last).then_some(claim)
                });
                assert_eq!((found, calls), (Some(expected[0]), 1), "stops at the first");
            }
            if counts.is_empty() || seed.is_multiple_of(5) {
                // A new claim, opened with one pod, goes to the end.
                counts.push(1);
                sorted.push(counts.len() - 1);
                order.push(counts.len() - 1, 1);
            } else {
                // Some claim gains a pod, chosen anywhere in the order.
                let claim = expected[(seed >> 8) as usize % expected.len()];
                order.grew(claim, counts[claim]);
                counts[claim] += 1;
            }
        }
        assert!(counts.iter().any(|&c| c > 3), "counts spread out");
    }
}
