//! A proof, far cheaper than a simulation, that consolidating some
//! candidates is a no-op: their pods cannot all go elsewhere, and what
//! cannot is more than any instance type cheaper than the candidates
//! together holds.
//!
//! Consolidation is N → 0 or N → 1 (see [`super::consolidation`]), and a
//! candidate's pod placed on a node that has not finished initializing
//! makes a no-op (see `SimulationView::simulate_on`). So a command moves
//! every pod of the candidates to an initialized open node or to one new
//! NodeClaim whose options cost less than the candidates together
//! (upstream `RemoveInstanceTypeOptionsByPriceAndMinValues` keeps options
//! whose worst launch price is below that, and no launch costs less than a
//! type's cheapest available offering). A solve only takes room from open
//! nodes, so what goes to that claim is at least, per resource:
//!
//! - the requests of the pods that fit no initialized open node's room
//!   now, other than the candidates' own; and
//! - all the pods' requests less the sum of those rooms.
//!
//! When that is more than nothing, no delete is possible; when, besides,
//! no type whose cheapest available offering undercuts the candidates can
//! allocate it, no replacement is either. Everything the bound leaves out
//! (pending pods and deleting nodes' pods taking room first, DaemonSet
//! overhead, taints, affinities, a second claim, minValues, spot rules,
//! multi-node's same-type filter and Balanced's gate) only adds reasons
//! for a no-op, so candidates ruled out are ones whose simulation finds a
//! no-op. The reason it would give is not known: single-node consolidation
//! rules out only quiet candidates this way; multi-node's search wants no
//! reason.
//!
//! The bound reads CPU, memory and pod slots only: a request fits a room
//! here whenever it fits the whole room, so leaving the other resources
//! out only rules out less.

use crate::fast_hash::FastMap;
use std::sync::Arc;

use super::types::{Amounts, amounts};
use crate::cloud::Price;
use crate::karpenter::provisioning::{LaunchRoom, OpenViews};
use crate::scheduler::NodeId;

const NOTHING: Amounts = [0; 3];

/// [`Resources::fits`] on these amounts: no amount of `room` is negative
/// and every positive amount of `wanted` is at most `room`'s.
fn fits(wanted: &Amounts, room: &Amounts) -> bool {
    wanted
        .iter()
        .zip(room)
        .all(|(&want, &have)| have >= 0 && (want <= 0 || want <= have))
}

/// Element-wise `a + b`.
fn plus(a: &Amounts, b: &Amounts) -> Amounts {
    [a[0] + b[0], a[1] + b[1], a[2] + b[2]]
}

/// Element-wise `max(a - b, 0)`.
fn less(a: &Amounts, b: &Amounts) -> Amounts {
    [0, 1, 2].map(|k| (a[k] - b[k]).max(0))
}

/// Element-wise maximum.
fn max(a: &Amounts, b: &Amounts) -> Amounts {
    [0, 1, 2].map(|k| a[k].max(b[k]))
}

/// What the bound reads of one pass: the rooms of the initialized open
/// nodes, and the instance types by price.
#[derive(Debug)]
pub(crate) struct NoOpBound {
    /// Each initialized open node's room, by node id (every amount −1
    /// where a whole room's amount is negative: nothing fits there).
    rooms: Vec<(NodeId, Amounts)>,
    /// The rooms no other room admits more than, largest first (a pod that
    /// fits none of these fits no room).
    frontier: Vec<(NodeId, Amounts)>,
    /// Σ `rooms` that admit anything.
    room_sum: Amounts,
    /// What a new NodeClaim may launch as, cheapest first.
    launch_rooms: Arc<[LaunchRoom]>,
    /// Per prefix of `launch_rooms`, the element-wise maximum allocatable.
    most_allocatable: Vec<Amounts>,
}

impl NoOpBound {
    /// The bound over the views open to consolidation simulations, for
    /// NodeClaims that launch as `launch_rooms` (see
    /// [`crate::karpenter::provisioning::Prepared::launch_rooms`]).
    pub(crate) fn new(views: &OpenViews, launch_rooms: Arc<[LaunchRoom]>) -> NoOpBound {
        NoOpBound::from_rooms(rooms_of(views), launch_rooms, None)
    }

    /// The bound over initialized open rooms `rooms` (sorted by node id),
    /// its frontier found from that of `last` when little changed since.
    fn from_rooms(
        rooms: Vec<(NodeId, Amounts)>,
        launch_rooms: Arc<[LaunchRoom]>,
        last: Option<&LastBound>,
    ) -> NoOpBound {
        let room_sum = rooms
            .iter()
            .filter(|(_, room)| room.iter().all(|&a| a >= 0))
            .fold(NOTHING, |sum, (_, room)| plus(&sum, room));
        let frontier = last
            .and_then(|last| frontier_after(&last.rooms, &last.frontier, &rooms))
            .unwrap_or_else(|| frontier_of(&rooms));
        let mut most = NOTHING;
        let most_allocatable = launch_rooms
            .iter()
            .map(|launch| {
                most = max(&most, &amounts(&launch.allocatable));
                most
            })
            .collect();
        NoOpBound {
            rooms,
            frontier,
            room_sum,
            launch_rooms,
            most_allocatable,
        }
    }

    /// Whether consolidating `candidates` (sorted node ids), priced
    /// `price` together, moving pods that request `requests` (see
    /// [`amounts`]), is sure to be a no-op.
    pub(crate) fn rules_out(
        &self,
        candidates: &[NodeId],
        price: Price,
        requests: &[Amounts],
    ) -> bool {
        let cheaper = self
            .launch_rooms
            .partition_point(|launch| launch.price < price);
        // What a cheaper type could hold at most (nothing without one).
        let most = cheaper
            .checked_sub(1)
            .map_or([-1; 3], |last| self.most_allocatable[last]);
        let mut total = NOTHING;
        let mut stranded = NOTHING;
        // Replicas come in runs of one shape: a run is judged at once. As
        // requests are never negative, what is stranded only grows, so it
        // outgrows `most` within a run exactly when it has at its end.
        for run in requests.chunk_by(|a, b| a == b) {
            let shape = run[0];
            let count = run.len() as i64;
            let sum = shape.map(|amount| amount * count);
            total = plus(&total, &sum);
            if !self.fits_elsewhere(&shape, candidates) {
                stranded = plus(&stranded, &sum);
                if !fits(&stranded, &most) {
                    return true;
                }
            }
        }
        let own_rooms = candidates
            .iter()
            .filter_map(|candidate| {
                let at = self
                    .rooms
                    .binary_search_by_key(candidate, |(id, _)| *id)
                    .ok()?;
                Some(self.rooms[at].1).filter(|room| room.iter().all(|&a| a >= 0))
            })
            .fold(NOTHING, |sum, room| plus(&sum, &room));
        let elsewhere = less(&self.room_sum, &own_rooms);
        let needs_claim = max(&stranded, &less(&total, &elsewhere));
        if needs_claim == NOTHING {
            return false;
        }
        !self.launch_rooms[..cheaper]
            .iter()
            .any(|launch| fits(&needs_claim, &amounts(&launch.allocatable)))
    }

    /// Whether `wanted` fits the room of an initialized open node other
    /// than the `candidates` (sorted).
    fn fits_elsewhere(&self, wanted: &Amounts, candidates: &[NodeId]) -> bool {
        let is_candidate = |id: &NodeId| candidates.binary_search(id).is_ok();
        let mut fits_a_candidate = false;
        for (id, room) in &self.frontier {
            if fits(wanted, room) {
                if !is_candidate(id) {
                    return true;
                }
                fits_a_candidate = true;
            }
        }
        // Rooms only the candidates' admitted more than may still fit.
        fits_a_candidate
            && self
                .rooms
                .iter()
                .any(|(id, room)| !is_candidate(id) && fits(wanted, room))
    }
}

/// Each initialized open view's room, by node id.
fn rooms_of(views: &OpenViews) -> Vec<(NodeId, Amounts)> {
    views
        .rooms()
        .filter(|&(_, initialized, _)| initialized)
        .map(|(id, _, room)| (id, amounts(&room.as_room())))
        .collect()
}

/// The frontier of `rooms` from `before`, that of the rooms `was` (both
/// sorted by node id): `before` itself when none of its rooms changed or
/// went and every room that changed or came is held by one of it (at
/// least as large in every amount, and, if equal, of a smaller node id)
/// or has a negative amount; `None` otherwise. A room that went or
/// changed off the frontier only held rooms a frontier room holds too,
/// and a held room admits no more than its holder, so the frontier stays.
fn frontier_after(
    was: &[(NodeId, Amounts)],
    before: &[(NodeId, Amounts)],
    rooms: &[(NodeId, Amounts)],
) -> Option<Vec<(NodeId, Amounts)>> {
    let on_frontier = |id: NodeId| before.iter().any(|(f, _)| *f == id);
    let held = |id: NodeId, room: &Amounts| {
        room.iter().any(|&a| a < 0)
            || before.iter().any(|(f, kept)| {
                kept.iter().zip(room).all(|(k, r)| k >= r) && (kept != room || *f < id)
            })
    };
    let mut was = was.iter().peekable();
    for (id, room) in rooms {
        while let Some((gone, _)) = was.next_if(|(earlier, _)| earlier < id) {
            if on_frontier(*gone) {
                return None;
            }
        }
        match was.next_if(|(earlier, _)| earlier == id) {
            Some((_, then)) if then == room => {}
            then => {
                if (then.is_some() && on_frontier(*id)) || !held(*id, room) {
                    return None;
                }
            }
        }
    }
    if was.any(|(gone, _)| on_frontier(*gone)) {
        return None;
    }
    Some(before.to_vec())
}

/// The rooms no other room admits more than (of equal ones, the first by
/// node id), largest first; none with a negative amount.
fn frontier_of(rooms: &[(NodeId, Amounts)]) -> Vec<(NodeId, Amounts)> {
    // Largest first (by amounts in order, then by node id): a room can
    // then only be admitted more than by one before it.
    let before = |a: &(NodeId, Amounts), b: &(NodeId, Amounts)| b.1.cmp(&a.1).then(a.0.cmp(&b.0));
    // A room that one before it holds in every amount is not on the
    // frontier (that one, or a room holding it in turn, is; or it has a
    // negative amount, and then so does the room it holds). The largest
    // room in each amount holds most rooms of a busy cluster, so only the
    // others are sorted.
    let mut largest: [Option<&(NodeId, Amounts)>; 3] = [None; 3];
    for room in rooms {
        for (k, kept) in largest.iter_mut().enumerate() {
            if kept.is_none_or(|kept| (room.1[k], kept.0) > (kept.1[k], room.0)) {
                *kept = Some(room);
            }
        }
    }
    let held_by_one_before = |room: &(NodeId, Amounts)| {
        largest.iter().flatten().any(|&big| {
            big.0 != room.0
                && before(big, room).is_lt()
                && big.1.iter().zip(&room.1).all(|(b, r)| b >= r)
        })
    };
    let mut by_size: Vec<(NodeId, Amounts)> = rooms
        .iter()
        .filter(|room| !held_by_one_before(room))
        .copied()
        .collect();
    by_size.sort_unstable_by(before);
    let mut frontier: Vec<(NodeId, Amounts)> = Vec::new();
    for (id, room) in by_size {
        let admits_more = |kept: &Amounts| room.iter().zip(kept).any(|(r, k)| r > k);
        if room.iter().all(|&a| a >= 0) && frontier.iter().all(|(_, kept)| admits_more(kept)) {
            frontier.push((id, room));
        }
    }
    frontier
}

/// Single candidates the bound ruled out, kept from pass to pass with what
/// the ruling read of them (price and moving requests) and the epoch of
/// the bound it was made with. A bound starts a new epoch when a room grew
/// since the last bound built (a room larger in any amount, or a node's
/// room that was not there), or when what a new NodeClaim may launch as
/// changed: within an epoch every room only shrank or went, and a
/// candidate that was ruled out still is, since fewer and smaller rooms
/// only leave more of its pods stranded and less room elsewhere.
#[derive(Debug, Default)]
pub(crate) struct KeptRulings {
    /// The rooms and launch rooms of the last bound built.
    last: Option<LastBound>,
    epoch: u64,
    ruled_out: FastMap<NodeId, Ruling>,
}

#[derive(Debug)]
struct LastBound {
    rooms: Vec<(NodeId, Amounts)>,
    frontier: Vec<(NodeId, Amounts)>,
    launch_rooms: Arc<[LaunchRoom]>,
}

#[derive(Debug)]
struct Ruling {
    epoch: u64,
    price: Price,
    /// The requests kept with the candidate's node facts (held, so that
    /// the same address is the same requests).
    requests: Arc<[Amounts]>,
}

impl KeptRulings {
    /// The bound over `views` for NodeClaims that launch as
    /// `launch_rooms` (as [`NoOpBound::new`] builds it), its frontier
    /// found from the last bound's when little changed since.
    pub(crate) fn bound(&self, views: &OpenViews, launch_rooms: Arc<[LaunchRoom]>) -> NoOpBound {
        NoOpBound::from_rooms(rooms_of(views), launch_rooms, self.last.as_ref())
    }

    /// The epoch of `bound`, just built for a pass.
    pub(crate) fn epoch_of(&mut self, bound: &NoOpBound) -> u64 {
        let new_epoch = match &self.last {
            None => true,
            Some(last) => {
                last.launch_rooms[..] != bound.launch_rooms[..] || grew(&last.rooms, &bound.rooms)
            }
        };
        if new_epoch {
            self.epoch += 1;
            self.ruled_out.clear();
        }
        self.last = Some(LastBound {
            rooms: bound.rooms.clone(),
            frontier: bound.frontier.clone(),
            launch_rooms: bound.launch_rooms.clone(),
        });
        self.epoch
    }

    /// Whether `node`, priced `price` and moving pods that request
    /// `requests` (kept with its facts), was ruled out in `epoch` with
    /// these.
    pub(crate) fn still_ruled_out(
        &self,
        epoch: u64,
        node: NodeId,
        price: Price,
        requests: &Arc<[Amounts]>,
    ) -> bool {
        self.ruled_out.get(&node).is_some_and(|ruling| {
            ruling.epoch == epoch
                && ruling.price == price
                && Arc::ptr_eq(&ruling.requests, requests)
        })
    }

    /// Keeps what the bound of `epoch` made of `node` (rulings out only).
    pub(crate) fn keep(
        &mut self,
        epoch: u64,
        node: NodeId,
        price: Price,
        requests: &Arc<[Amounts]>,
        ruled_out: bool,
    ) {
        if ruled_out && epoch == self.epoch {
            self.ruled_out.insert(
                node,
                Ruling {
                    epoch,
                    price,
                    requests: requests.clone(),
                },
            );
        } else {
            self.ruled_out.remove(&node);
        }
    }
}

/// Whether a room of `now` (both sorted by node id) is larger in any
/// amount than the same node's room `then`, or has no room then.
fn grew(then: &[(NodeId, Amounts)], now: &[(NodeId, Amounts)]) -> bool {
    let mut then = then.iter().peekable();
    for (id, room) in now {
        while then.next_if(|(earlier, _)| earlier < id).is_some() {}
        match then.next_if(|(earlier, _)| earlier == id) {
            Some((_, before)) if room.iter().zip(before).all(|(a, b)| a <= b) => {}
            _ => return true,
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::kube::resources::{ResourceKind, Resources};
    use proptest::prelude::*;

    const GIB: i64 = 1 << 30;

    fn launch_rooms(types: &[(i64, i64, i64)]) -> Arc<[LaunchRoom]> {
        types
            .iter()
            .map(|&(micros, cpu, mem_gib)| {
                let mut allocatable = Resources::cpu_mem(cpu, mem_gib * GIB);
                allocatable.set(ResourceKind::Pods, 110);
                LaunchRoom {
                    price: Price::from_micros(micros),
                    allocatable,
                }
            })
            .collect()
    }

    /// Four types from 1 to 16 vCPU, cheapest first.
    fn four_launch_rooms() -> Arc<[LaunchRoom]> {
        launch_rooms(&[
            (40_000, 1000, 2),
            (90_000, 2000, 4),
            (180_000, 4000, 8),
            (500_000, 16000, 64),
        ])
    }

    /// Rooms of CPU, GiB and pod slots, numbered by node in order.
    fn rooms_by_node(rooms: &[(i64, i64, i64)]) -> Vec<(u32, Amounts)> {
        rooms
            .iter()
            .enumerate()
            .map(|(i, &(cpu, gib, slots))| (i as u32, [cpu, gib * GIB, slots]))
            .collect()
    }

    fn bound(rooms: &[(u32, Amounts)], launch: &Arc<[LaunchRoom]>) -> NoOpBound {
        let rooms = rooms.iter().map(|&(id, room)| (NodeId(id), room)).collect();
        NoOpBound::from_rooms(rooms, launch.clone(), None)
    }

    /// A bound's epoch moves on when a room grew, a node's room appeared
    /// or the launch rooms changed, and not when rooms shrank or went; a
    /// ruling holds within its epoch for the same price and requests only.
    #[test]
    fn rulings_hold_while_rooms_only_shrink() {
        let launch = launch_rooms(&[(50_000, 1000, 2), (400_000, 8000, 32)]);
        let candidate = NodeId(9);
        let price = Price::from_micros(100_000);
        // Two 1.5-CPU pods: neither fits elsewhere, and what is stranded
        // fits no type cheaper than the candidate.
        let requests: Arc<[Amounts]> = Arc::new([[1500, GIB, 1], [1500, GIB, 1]]);
        let first = bound(&[(1, [1000, 4 * GIB, 10]), (2, [500, GIB, 5])], &launch);
        assert!(first.rules_out(&[candidate], price, &requests));
        let mut kept = KeptRulings::default();
        let epoch = kept.epoch_of(&first);
        kept.keep(epoch, candidate, price, &requests, true);
        assert!(kept.still_ruled_out(epoch, candidate, price, &requests));
        assert!(!kept.still_ruled_out(epoch, candidate, Price::from_micros(99_000), &requests));
        let same_again: Arc<[Amounts]> = requests.iter().copied().collect();
        assert!(
            !kept.still_ruled_out(epoch, candidate, price, &same_again),
            "other facts"
        );

        let shrunk = bound(&[(1, [900, 4 * GIB, 9])], &launch);
        assert_eq!(kept.epoch_of(&shrunk), epoch, "one room shrank, one went");
        assert!(kept.still_ruled_out(epoch, candidate, price, &requests));

        let grown = bound(&[(1, [2000, 4 * GIB, 9])], &launch);
        let next = kept.epoch_of(&grown);
        assert_ne!(next, epoch, "a room grew");
        assert!(!kept.still_ruled_out(next, candidate, price, &requests));
        assert!(
            !grown.rules_out(&[candidate], price, &requests),
            "now it fits"
        );

        let opened = bound(&[(1, [2000, 4 * GIB, 9]), (3, [0, 0, 0])], &launch);
        assert_ne!(kept.epoch_of(&opened), next, "a room appeared");
        let same_rooms = bound(&[(1, [2000, 4 * GIB, 9]), (3, [0, 0, 0])], &launch);
        let settled = kept.epoch_of(&same_rooms);
        assert_eq!(kept.epoch_of(&same_rooms), settled, "nothing changed");
        let other_launch = launch_rooms(&[(50_000, 2000, 2)]);
        assert_ne!(
            kept.epoch_of(&bound(&[(1, [2000, 4 * GIB, 9])], &other_launch)),
            settled,
            "the launch rooms changed"
        );
    }

    proptest! {
        /// The frontier is the one found by sorting every room: those no
        /// room before them (largest first, then by node id) is at least
        /// as large as in every amount, without negative amounts.
        #[test]
        fn the_frontier_is_found_without_sorting_every_room(
            rooms in prop::collection::vec((-1i64..4, -1i64..4, -1i64..3), 0..40),
        ) {
            let rooms: Vec<(NodeId, Amounts)> = rooms
                .iter()
                .enumerate()
                .map(|(i, &(cpu, mem, slots))| (NodeId(i as u32), [cpu, mem, slots]))
                .collect();
            let mut sorted = rooms.clone();
            sorted.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
            let expected: Vec<(NodeId, Amounts)> = sorted
                .iter()
                .enumerate()
                .filter(|(i, (_, room))| {
                    room.iter().all(|&a| a >= 0)
                        && !sorted[..*i]
                            .iter()
                            .any(|(_, earlier)| earlier.iter().zip(room).all(|(e, r)| e >= r))
                })
                .map(|(_, &room)| room)
                .collect();
            prop_assert_eq!(frontier_of(&rooms), expected);
        }

        /// The frontier found from the last one, when it is, is the one
        /// found afresh: rooms change (shrink or grow, or become another
        /// node's room), go and come between the two, and a node id may
        /// reach past the last one's.
        #[test]
        fn the_frontier_found_from_the_last_one_is_the_frontier(
            rooms in prop::collection::vec((-1i64..5, -1i64..5, -1i64..3), 0..30),
            changes in prop::collection::vec((0usize..34, 0u8..5, -2i64..3), 0..4),
        ) {
            let was: Vec<(NodeId, Amounts)> = rooms
                .iter()
                .enumerate()
                .map(|(i, &(cpu, mem, slots))| (NodeId(i as u32), [cpu, mem, slots]))
                .collect();
            let mut now: BTreeMap<NodeId, Amounts> = was.iter().copied().collect();
            for &(at, change, by) in &changes {
                let id = NodeId(at as u32);
                match change {
                    0 => { now.remove(&id); }
                    1 => { now.insert(id, [by, by, by.min(2)]); }
                    4 => {
                        if let Some(&(_, room)) = was.get(at * 7 % was.len().max(1)) {
                            now.insert(id, room);
                        }
                    }
                    _ => {
                        if let Some(room) = now.get_mut(&id) {
                            room[usize::from(change) - 2] += by;
                        }
                    }
                }
            }
            let now: Vec<(NodeId, Amounts)> = now.into_iter().collect();
            let before = frontier_of(&was);
            if let Some(found) = frontier_after(&was, &before, &now) {
                prop_assert_eq!(found, frontier_of(&now));
            }
            if changes.is_empty() {
                prop_assert!(frontier_after(&was, &before, &now).is_some());
            }
        }

        /// A request fits elsewhere exactly when some room of another
        /// node than the candidates holds it (the frontier is looked at
        /// first, every room only when the candidates' own fit).
        #[test]
        fn a_request_fits_elsewhere_when_another_node_has_room(
            rooms in prop::collection::vec((-1i64..5, -1i64..5, -1i64..3), 1..20),
            asks in prop::collection::vec((0usize..20, 0usize..20, 0i64..5, 0i64..5, 0i64..3), 1..12),
        ) {
            let rooms: Vec<(u32, Amounts)> = rooms
                .iter()
                .enumerate()
                .map(|(i, &(cpu, mem, slots))| (i as u32, [cpu, mem, slots]))
                .collect();
            let bound = bound(&rooms, &launch_rooms(&[(50_000, 1000, 2)]));
            for &(first, second, cpu, mem, slots) in &asks {
                let wanted = [cpu, mem, slots];
                let mut candidates = vec![NodeId(first as u32)];
                if second % 3 == 0 {
                    candidates.push(NodeId(second as u32));
                    candidates.sort_unstable();
                    candidates.dedup();
                }
                let expected = rooms.iter().any(|&(id, room)| {
                    !candidates.contains(&NodeId(id)) && fits(&wanted, &room)
                });
                prop_assert_eq!(bound.fits_elsewhere(&wanted, &candidates), expected);
            }
        }

        /// Judging replicas a run of one shape at a time rules out
        /// exactly what judging them one pod at a time does (each pod's
        /// requests added to what is stranded, checked after every pod).
        #[test]
        fn runs_of_one_shape_are_judged_as_pod_by_pod(
            rooms in prop::collection::vec((0i64..4000, 0i64..8, 0i64..20), 1..8),
            shapes in prop::collection::vec((0i64..3000, 0i64..6, 0i64..2), 1..4),
            runs in prop::collection::vec((0usize..4, 1usize..6), 1..8),
            price in 1i64..600_000,
            own in 0usize..8,
        ) {
            let launch = four_launch_rooms();
            let rooms: Vec<(u32, Amounts)> = rooms_by_node(&rooms);
            let bound = bound(&rooms, &launch);
            let requests: Vec<Amounts> = runs
                .iter()
                .flat_map(|&(shape, count)| {
                    let (cpu, gib, slots) = shapes[shape % shapes.len()];
                    std::iter::repeat_n([cpu, gib * GIB, slots], count)
                })
                .collect();
            let candidates = [NodeId(own as u32)];
            let price = Price::from_micros(price);
            // The bound's rule, one pod at a time.
            let cheaper = bound.launch_rooms.partition_point(|l| l.price < price);
            let most = cheaper.checked_sub(1).map_or([-1; 3], |l| bound.most_allocatable[l]);
            let mut total = NOTHING;
            let mut stranded = NOTHING;
            let mut stranded_out = false;
            for wanted in &requests {
                total = plus(&total, wanted);
                if !bound.fits_elsewhere(wanted, &candidates) {
                    stranded = plus(&stranded, wanted);
                    stranded_out |= !fits(&stranded, &most);
                }
            }
            let expected = stranded_out || {
                let own_room = bound
                    .rooms
                    .iter()
                    .find(|(id, room)| *id == candidates[0] && room.iter().all(|&a| a >= 0))
                    .map_or(NOTHING, |(_, room)| *room);
                let needs_claim = max(&stranded, &less(&total, &less(&bound.room_sum, &own_room)));
                needs_claim != NOTHING
                    && !bound.launch_rooms[..cheaper]
                        .iter()
                        .any(|l| fits(&needs_claim, &amounts(&l.allocatable)))
            };
            prop_assert_eq!(bound.rules_out(&candidates, price, &requests), expected);
        }

        /// Whatever the bound ruled out stays ruled out by every later
        /// bound whose rooms only shrank or went: what a kept ruling rests
        /// on.
        #[test]
        fn a_ruling_holds_for_every_bound_with_smaller_rooms(
            rooms in prop::collection::vec((0i64..4000, 0i64..8, 0i64..20), 1..8),
            shrink in prop::collection::vec((0i64..2000, 0i64..4, 0i64..10, any::<bool>()), 8),
            pods in prop::collection::vec((0i64..3000, 0i64..6, 1i64..2), 1..6),
            price in 1i64..600_000,
            own in 0usize..8,
        ) {
            let launch = four_launch_rooms();
            let then: Vec<(u32, Amounts)> = rooms_by_node(&rooms);
            let now: Vec<(u32, Amounts)> = then
                .iter()
                .zip(&shrink)
                .filter(|(_, s)| !s.3)
                .map(|(&(id, room), &(cpu, gib, slots, _))| {
                    (id, [room[0] - cpu, room[1] - gib * GIB, room[2] - slots])
                })
                .collect();
            let candidate = NodeId(own as u32);
            let price = Price::from_micros(price);
            let requests: Vec<Amounts> =
                pods.iter().map(|&(cpu, gib, slots)| [cpu, gib * GIB, slots]).collect();
            let (before, after) = (bound(&then, &launch), bound(&now, &launch));
            let mut kept = KeptRulings::default();
            let epoch = kept.epoch_of(&before);
            prop_assert_eq!(kept.epoch_of(&after), epoch);
            if before.rules_out(&[candidate], price, &requests) {
                prop_assert!(after.rules_out(&[candidate], price, &requests));
            }
        }
    }
}
