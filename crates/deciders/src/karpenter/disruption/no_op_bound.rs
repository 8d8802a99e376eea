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
        let rooms: Vec<(NodeId, Amounts)> = views
            .rooms()
            .filter(|&(_, initialized, _)| initialized)
            .map(|(id, _, room)| (id, amounts(&room.as_room())))
            .collect();
        let room_sum = rooms
            .iter()
            .filter(|(_, room)| room.iter().all(|&a| a >= 0))
            .fold(NOTHING, |sum, (_, room)| plus(&sum, room));
        let mut by_size = rooms.clone();
        by_size.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        // In this order no room admits more than one before it unless they
        // are equal, so one pass finds the frontier.
        let mut frontier: Vec<(NodeId, Amounts)> = Vec::new();
        for (id, room) in by_size {
            let admits_more = |kept: &Amounts| room.iter().zip(kept).any(|(r, k)| r > k);
            if room.iter().all(|&a| a >= 0) && frontier.iter().all(|(_, kept)| admits_more(kept)) {
                frontier.push((id, room));
            }
        }
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
        // Replicas come in runs of one shape: the last answer is reused.
        let mut last: Option<(Amounts, bool)> = None;
        for &wanted in requests {
            total = plus(&total, &wanted);
            let fits_elsewhere = match last {
                Some((shape, fits)) if shape == wanted => fits,
                _ => self.fits_elsewhere(&wanted, candidates),
            };
            last = Some((wanted, fits_elsewhere));
            if !fits_elsewhere {
                stranded = plus(&stranded, &wanted);
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
