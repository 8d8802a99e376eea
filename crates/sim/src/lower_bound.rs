//! The cost lower bound: at every instant, the cheapest $/h at which any
//! mix of the instance types a variant could run would cover the CPU and
//! memory its pods request, integrated over the run. It answers "how close
//! to the floor did this configuration get?": `efficiency = bound / cost`.
//!
//! # Definitions (the contract)
//!
//! - **Types.** A type is `(cpu_i, mem_i, price_i)`: `cpu_i` and `mem_i`
//!   are its allocatable CPU (millicores) and memory (bytes), what pods can
//!   request (the catalog's allocatable model, [`crate::cloud::allocatable`]).
//!   `price_i` is the cheapest offering the variant could launch at, at
//!   current prices (the spot price history moves spot prices), within the
//!   scenario's zones and the variant's capacity types, ignoring temporary
//!   unavailability (the ICE cache, storm outages): the floor is about
//!   prices, not luck.
//!   - Karpenter: the types any NodePool admits (its template requirements,
//!     zones and capacity types, minValues; [`filter_instance_types`]), each
//!     priced by its offerings compatible with that NodePool.
//!   - Cluster Autoscaler: each node group's types, priced by its offerings
//!     in the group's zones and in the capacity types its on-demand/spot
//!     split can buy.
//!   - Every running node also counts as a type, at its allocatable and its
//!     billed price, so the bound stays a floor after a NodePool change or
//!     a price move.
//! - **Demand.** `C(t)`, `M(t)`: the requests of the pods bound to nodes at
//!   `t`, DaemonSet pods included; pending pods are not counted (a pod
//!   nobody can run would otherwise lift the floor above what was paid).
//! - **Rate.** The fractional covering `min Σ x_i·price_i` subject to
//!   `Σ x_i·cpu_i ≥ C`, `Σ x_i·mem_i ≥ M`, `x_i ≥ 0` real. The running
//!   nodes are a feasible covering (the pods on them fit), so the rate never
//!   exceeds the fleet's billed $/h.
//! - **Integral.** The state (demand, prices, type set) is piecewise
//!   constant between events, so the rate is integrated exactly over each
//!   interval: each interval's rate is rounded *down* to a whole micro-USD/h
//!   (after shaving one part per billion to absorb floating-point error),
//!   multiplied by the interval's milliseconds in integer arithmetic, and
//!   the sum is rounded down once to micro-USD at the end. The bound is thus
//!   at most the integral of the billed rate, which is at most the ledger's
//!   cost (per-second billing plus 60 s minimums); the ledger rounds each
//!   node's cost half up to the micro-dollar, so the comparison is exact up
//!   to under half a micro-dollar per node.
//!
//! # Solving
//!
//! With two constraints an optimal basic solution uses at most two types,
//! both constraints tight when it uses two. Plotting each type by what a
//! dollar buys, `(cpu_i/price_i, mem_i/price_i)`, the mixes a dollar buys
//! form the convex hull of those points; the optimum lies on its upper-right
//! boundary: a single hull vertex (one constraint slack), or two adjacent
//! vertices. [`Covering::new`] keeps those vertices (exact integer
//! geometry), so [`Covering::rate`] is a scan over a handful of candidates.
//! Types of price zero make a resource free: its constraint then costs
//! nothing to meet.
//!
//! # Capacity reservations
//!
//! A reservation is paid whether it is used or not (the ledger's fixed
//! charge), and its instances cost nothing more: for the covering it is a
//! *bounded* free supply, `count × (cpu_r, mem_r)`. With covering
//! constraints and zero cost, using all of it is optimal, so the rate is
//! the fixed charges in force plus the covering of what the reservations
//! leave, `max(0, C − Σ count·cpu_r)` and the same for memory, by the other
//! types. A reservation counts while some NodePool may launch into it and
//! it is not expiring; after that only the reserved nodes still running on
//! it count (at their allocatable). Reserved offerings and reserved nodes
//! are never covering types themselves (their price 0 would make every
//! resource free). The running nodes still cover the bound pods (those on
//! reserved nodes within the supply), so the bound stays a floor.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use crate::autoscaler::CapacitySplit;
use crate::cloud::{CapacityType, Catalog, Price};
use crate::karpenter::instance_types::{filter_instance_types, template_requirements};
use crate::scheduler::NodeId;

use super::engine::{CaSetup, PoolSetup};
use super::ledger::MicroUsd;

/// Milliseconds per hour.
const MS_PER_HOUR: i128 = 3_600_000;
/// Relative shave applied to a computed rate before rounding it down, so
/// that floating-point error can never lift it above an exact covering.
const FLOAT_SHAVE: f64 = 1e-9;

/// One type the covering may use: allocatable CPU and memory at a price.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CoverType {
    /// Allocatable CPU, millicores.
    pub cpu_millis: i64,
    /// Allocatable memory, bytes.
    pub memory_bytes: i64,
    /// Price per hour.
    pub price: Price,
}

impl CoverType {
    fn per_dollar_cmp_cpu(&self, other: &CoverType) -> Ordering {
        // cpu_a / p_a vs cpu_b / p_b, cross-multiplied (prices > 0).
        (i128::from(self.cpu_millis) * i128::from(other.price.micros()))
            .cmp(&(i128::from(other.cpu_millis) * i128::from(self.price.micros())))
    }

    fn per_dollar_cmp_memory(&self, other: &CoverType) -> Ordering {
        (i128::from(self.memory_bytes) * i128::from(other.price.micros()))
            .cmp(&(i128::from(other.memory_bytes) * i128::from(self.price.micros())))
    }
}

/// The candidate set of one price state: the types that can be part of an
/// optimal covering, ready for cheap evaluation.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Covering {
    /// Upper-right hull vertices of the per-dollar points, CPU per dollar
    /// strictly decreasing (memory per dollar strictly increasing).
    hull: Vec<CoverType>,
    /// A zero-price type offers CPU.
    free_cpu: bool,
    /// A zero-price type offers memory.
    free_memory: bool,
}

impl Covering {
    /// The candidate set for `types` (any order, duplicates allowed; types
    /// with no CPU and no memory, or a negative price, are ignored).
    pub fn new(types: impl IntoIterator<Item = CoverType>) -> Covering {
        let mut covering = Covering::default();
        let mut useful: Vec<CoverType> = Vec::new();
        for t in types {
            let t = CoverType {
                cpu_millis: t.cpu_millis.max(0),
                memory_bytes: t.memory_bytes.max(0),
                price: t.price,
            };
            if (t.cpu_millis == 0 && t.memory_bytes == 0) || t.price.micros() < 0 {
                continue;
            }
            if t.price.micros() == 0 {
                covering.free_cpu |= t.cpu_millis > 0;
                covering.free_memory |= t.memory_bytes > 0;
                continue;
            }
            useful.push(t);
        }
        // CPU per dollar descending, then memory per dollar descending; the
        // rest only makes the order total (determinism).
        useful.sort_by(|a, b| {
            b.per_dollar_cmp_cpu(a)
                .then_with(|| b.per_dollar_cmp_memory(a))
                .then_with(|| a.cmp(b))
        });
        // Pareto front: memory per dollar must strictly increase as CPU per
        // dollar decreases; anything else is dominated.
        let mut front: Vec<CoverType> = Vec::new();
        for t in useful {
            if front
                .last()
                .is_none_or(|last| t.per_dollar_cmp_memory(last) == Ordering::Greater)
            {
                front.push(t);
            }
        }
        // Concave chain: drop a vertex lying on or inside the segment of
        // its neighbours (a mix of those two does at least as well).
        for t in front {
            while covering.hull.len() >= 2 {
                let n = covering.hull.len();
                if outside_of_segment(&covering.hull[n - 2], &covering.hull[n - 1], &t) {
                    break;
                }
                covering.hull.pop();
            }
            covering.hull.push(t);
        }
        covering
    }

    /// The candidates kept (hull vertices, CPU per dollar decreasing).
    pub fn candidates(&self) -> &[CoverType] {
        &self.hull
    }

    /// The cheapest $/h (in micro-USD per hour, as a float) covering
    /// `cpu_millis` and `memory_bytes`; `None` when no mix covers them.
    pub fn rate(&self, cpu_millis: i64, memory_bytes: i64) -> Option<f64> {
        let cpu = if self.free_cpu {
            0.0
        } else {
            cpu_millis.max(0) as f64
        };
        let memory = if self.free_memory {
            0.0
        } else {
            memory_bytes.max(0) as f64
        };
        if cpu == 0.0 && memory == 0.0 {
            return Some(0.0);
        }
        let mut best: Option<f64> = None;
        let mut consider = |cost: f64| {
            if best.is_none_or(|b| cost < b) {
                best = Some(cost);
            }
        };
        for t in &self.hull {
            if let Some(cost) = single_cost(t, cpu, memory) {
                consider(cost);
            }
        }
        for pair in self.hull.windows(2) {
            if let Some(cost) = pair_cost(&pair[0], &pair[1], cpu, memory) {
                consider(cost);
            }
        }
        best
    }
}

/// Cost of covering with type `t` alone.
pub fn single_cost(t: &CoverType, cpu: f64, memory: f64) -> Option<f64> {
    let need = |want: f64, has: i64| {
        if want <= 0.0 {
            Some(0.0)
        } else if has > 0 {
            Some(want / has as f64)
        } else {
            None
        }
    };
    let units = need(cpu, t.cpu_millis)?.max(need(memory, t.memory_bytes)?);
    Some(units * t.price.micros() as f64)
}

/// Cost of the mix of `a` and `b` meeting both constraints exactly, if
/// that mix uses non-negative amounts of each.
pub fn pair_cost(a: &CoverType, b: &CoverType, cpu: f64, memory: f64) -> Option<f64> {
    let (ca, ma) = (a.cpu_millis as f64, a.memory_bytes as f64);
    let (cb, mb) = (b.cpu_millis as f64, b.memory_bytes as f64);
    let det = ca * mb - cb * ma;
    if det == 0.0 {
        return None;
    }
    let xa = (cpu * mb - memory * cb) / det;
    let xb = (memory * ca - cpu * ma) / det;
    if xa < 0.0 || xb < 0.0 {
        return None;
    }
    Some(xa * a.price.micros() as f64 + xb * b.price.micros() as f64)
}

/// Whether per-dollar point `b` lies strictly beyond the segment from `a`
/// to `c` (away from the origin), with `a`, `b`, `c` in order of
/// decreasing CPU per dollar. Exact in i128; an overflow keeps `b`.
fn outside_of_segment(a: &CoverType, b: &CoverType, c: &CoverType) -> bool {
    let (pa, pb, pc) = (
        i128::from(a.price.micros()),
        i128::from(b.price.micros()),
        i128::from(c.price.micros()),
    );
    let cross = || -> Option<i128> {
        // (b − a) × (c − a), scaled by pa²·pb·pc > 0.
        let xb = i128::from(b.cpu_millis)
            .checked_mul(pa)?
            .checked_sub(i128::from(a.cpu_millis).checked_mul(pb)?)?;
        let yb = i128::from(b.memory_bytes)
            .checked_mul(pa)?
            .checked_sub(i128::from(a.memory_bytes).checked_mul(pb)?)?;
        let xc = i128::from(c.cpu_millis)
            .checked_mul(pa)?
            .checked_sub(i128::from(a.cpu_millis).checked_mul(pc)?)?;
        let yc = i128::from(c.memory_bytes)
            .checked_mul(pa)?
            .checked_sub(i128::from(a.memory_bytes).checked_mul(pc)?)?;
        xb.checked_mul(yc)?.checked_sub(yb.checked_mul(xc)?)
    };
    cross().is_none_or(|value| value > 0)
}

/// A rate rounded down to whole micro-USD per hour (see the module doc).
fn floor_rate(rate: Option<f64>) -> i64 {
    let Some(rate) = rate else {
        // Cannot happen while the running nodes are candidates (they cover
        // the bound pods); 0 keeps the bound a floor regardless.
        return 0;
    };
    let shaved = rate * (1.0 - FLOAT_SHAVE);
    if shaved.is_finite() && shaved > 0.0 {
        shaved.floor().min(i64::MAX as f64) as i64
    } else {
        0
    }
}

/// One type a variant can launch, with the offerings that price it.
#[derive(Debug, Clone, PartialEq)]
pub struct LaunchableType {
    /// Instance type name.
    pub name: String,
    /// Allocatable CPU, millicores.
    pub cpu_millis: i64,
    /// Allocatable memory, bytes.
    pub memory_bytes: i64,
    /// The offerings the variant may buy: (zone, capacity type, price).
    pub offerings: Vec<(String, CapacityType, Price)>,
}

impl LaunchableType {
    fn cheapest(&self) -> Option<CoverType> {
        let price = self.offerings.iter().map(|o| o.2).min()?;
        Some(CoverType {
            cpu_millis: self.cpu_millis,
            memory_bytes: self.memory_bytes,
            price,
        })
    }
}

/// The types Karpenter may launch under `pools`, priced from `catalogs`
/// (one per pool, zones outside the scenario already unavailable).
pub fn nodepool_types(pools: &[PoolSetup], catalogs: &[Catalog]) -> Vec<LaunchableType> {
    let mut out = Vec::new();
    for (setup, catalog) in pools.iter().zip(catalogs) {
        let template = template_requirements(&setup.pool);
        for index in filter_instance_types(&setup.pool, catalog).allowed {
            let Some(it) = catalog.instance_types().get(index) else {
                continue;
            };
            let offerings: Vec<_> = it
                .offerings
                .iter()
                .filter(|o| o.available && o.reservation.is_none() && o.is_compatible(&template))
                .map(|o| (o.zone.to_string(), o.capacity_type, o.price))
                .collect();
            if !offerings.is_empty() {
                out.push(LaunchableType {
                    name: it.name().to_string(),
                    cpu_millis: it.allocatable.cpu_millis(),
                    memory_bytes: it.allocatable.memory_bytes(),
                    offerings,
                });
            }
        }
    }
    out
}

/// The reservations some NodePool of `pools` may launch into, with the
/// allocatable CPU and memory of one of their instances (the largest over
/// the pools' catalogs): reserved offerings of types the pool admits,
/// compatible with its template, whether or not instances are left.
pub fn reservable(pools: &[PoolSetup], catalogs: &[Catalog]) -> BTreeMap<&'static str, (i64, i64)> {
    let mut out: BTreeMap<&'static str, (i64, i64)> = BTreeMap::new();
    for (setup, catalog) in pools.iter().zip(catalogs) {
        if !catalog
            .instance_types()
            .iter()
            .any(|it| it.offerings.iter().any(|o| o.reservation.is_some()))
        {
            continue;
        }
        let template = template_requirements(&setup.pool);
        // Used-up reservations count too: their offerings come back.
        let mut whole = catalog.clone();
        let ids: Vec<&'static str> = catalog
            .instance_types()
            .iter()
            .flat_map(|it| it.offerings.iter().filter_map(|o| o.reservation))
            .map(|r| r.id)
            .collect();
        for id in ids {
            whole.set_reservation(id, 1, false);
        }
        for index in filter_instance_types(&setup.pool, &whole).allowed {
            let Some(it) = whole.instance_types().get(index) else {
                continue;
            };
            for o in &it.offerings {
                if let Some(r) = o.reservation
                    && o.is_compatible(&template)
                {
                    let entry = out.entry(r.id).or_default();
                    entry.0 = entry.0.max(it.allocatable.cpu_millis());
                    entry.1 = entry.1.max(it.allocatable.memory_bytes());
                }
            }
        }
    }
    out
}

/// One reservation as the bound counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Reservation {
    /// Instances it holds.
    count: u32,
    /// One instance's allocatable, when some NodePool may launch into it.
    launchable: Option<(i64, i64)>,
    /// Expiring: only its running nodes count.
    expiring: bool,
}

/// The types Cluster Autoscaler's node groups may launch: each group's
/// types, in its zones and the capacity types its split can buy.
pub fn node_group_types(setup: &CaSetup) -> Vec<LaunchableType> {
    let mut out = Vec::new();
    for group in &setup.config.config().node_groups {
        let (on_demand, spot) = match group.capacity {
            CapacitySplit::OnDemand => (true, false),
            CapacitySplit::Spot => (false, true),
            CapacitySplit::Mixed {
                on_demand_base_capacity,
                on_demand_percentage_above_base,
            } => (
                on_demand_base_capacity > 0 || on_demand_percentage_above_base > 0,
                on_demand_percentage_above_base < 100,
            ),
        };
        for name in &group.instance_types {
            let Some(it) = setup.catalog.get(name) else {
                continue;
            };
            let offerings: Vec<_> = it
                .offerings
                .iter()
                .filter(|o| o.available && group.zones.iter().any(|z| z == o.zone))
                .filter(|o| match o.capacity_type {
                    CapacityType::OnDemand => on_demand,
                    CapacityType::Spot => spot,
                    // An ASG buys on-demand or spot only.
                    CapacityType::Reserved => false,
                })
                .map(|o| (o.zone.to_string(), o.capacity_type, o.price))
                .collect();
            if !offerings.is_empty() {
                out.push(LaunchableType {
                    name: it.name().to_string(),
                    cpu_millis: it.allocatable.cpu_millis(),
                    memory_bytes: it.allocatable.memory_bytes(),
                    offerings,
                });
            }
        }
    }
    out
}

/// Follows a run's state and integrates the bound. The engine tells it
/// what changed; the candidate set is rebuilt lazily, once per changed
/// state, and the rate is re-solved only when the demand changes.
#[derive(Debug, Clone, Default)]
pub struct BoundTracker {
    launchable: Vec<LaunchableType>,
    /// Candidates among `launchable` alone; `None` when their prices or
    /// set changed since.
    launchable_covering: Option<Covering>,
    /// Running nodes: allocatable CPU, memory, billed price.
    running: BTreeMap<NodeId, CoverType>,
    /// The distinct entries of `running`, with their node counts (the
    /// candidate set is rebuilt from these: a fleet has few distinct ones).
    running_distinct: BTreeMap<CoverType, usize>,
    /// `None` when prices or the type set changed since it was built.
    covering: Option<Covering>,
    /// Last demand solved and its rate (µ$/h, rounded down).
    solved: Option<((i64, i64), i64)>,
    /// The variant's capacity reservations, by id.
    reservations: BTreeMap<&'static str, Reservation>,
    /// Reserved nodes running: their reservation and allocatable.
    reserved_nodes: BTreeMap<NodeId, (&'static str, i64, i64)>,
    /// The fixed charges in force (µ$/h).
    fixed_rate: i64,
    /// ∫ rate dt, in micro-USD·ms per hour.
    integral: i128,
}

impl BoundTracker {
    /// A tracker for a variant that may launch `launchable`.
    pub fn new(launchable: Vec<LaunchableType>) -> BoundTracker {
        BoundTracker {
            launchable,
            ..BoundTracker::default()
        }
    }

    fn invalidate(&mut self) {
        self.covering = None;
        self.solved = None;
    }

    fn invalidate_launchable(&mut self) {
        self.launchable_covering = None;
        self.invalidate();
    }

    /// The variant's launchable types changed (a NodePool change).
    pub fn set_launchable(&mut self, launchable: Vec<LaunchableType>) {
        self.launchable = launchable;
        self.invalidate_launchable();
    }

    /// A spot offering's price changed.
    pub fn spot_price_changed(&mut self, instance_type: &str, zone: &str, price: Price) {
        for t in self
            .launchable
            .iter_mut()
            .filter(|t| t.name == instance_type)
        {
            for offering in &mut t.offerings {
                if offering.0 == zone && offering.1 == CapacityType::Spot {
                    offering.2 = price;
                }
            }
        }
        self.invalidate_launchable();
    }

    /// A node started running (and being billed at `price`).
    pub fn node_added(&mut self, node: NodeId, cpu_millis: i64, memory_bytes: i64, price: Price) {
        self.node_removed(node);
        let entry = CoverType {
            cpu_millis,
            memory_bytes,
            price,
        };
        self.running.insert(node, entry);
        let count = self.running_distinct.entry(entry).or_default();
        *count += 1;
        if *count == 1 {
            self.invalidate();
        }
    }

    /// A running node's billed price changed.
    pub fn node_price_changed(&mut self, node: NodeId, price: Price) {
        if let Some(&entry) = self.running.get(&node) {
            self.node_added(node, entry.cpu_millis, entry.memory_bytes, price);
        }
    }

    /// A node stopped running.
    pub fn node_removed(&mut self, node: NodeId) {
        if self.reserved_nodes.remove(&node).is_some() {
            self.solved = None;
        }
        let Some(entry) = self.running.remove(&node) else {
            return;
        };
        if let Some(count) = self.running_distinct.get_mut(&entry) {
            *count -= 1;
            if *count == 0 {
                self.running_distinct.remove(&entry);
                self.invalidate();
            }
        }
    }

    /// The candidate set of the current state.
    pub fn covering(&mut self) -> &Covering {
        let launchable = &self.launchable;
        let launchable_covering = self.launchable_covering.get_or_insert_with(|| {
            Covering::new(launchable.iter().filter_map(LaunchableType::cheapest))
        });
        let running = &self.running_distinct;
        // The hull of a union is the hull of one part's hull and the other.
        self.covering.get_or_insert_with(|| {
            let mut covering = Covering::new(
                launchable_covering
                    .candidates()
                    .iter()
                    .copied()
                    .chain(running.keys().copied()),
            );
            covering.free_cpu |= launchable_covering.free_cpu;
            covering.free_memory |= launchable_covering.free_memory;
            covering
        })
    }

    /// The variant's reservations (id, instances): each counts as supply
    /// while [`BoundTracker::set_reservable`] says a NodePool may launch
    /// into it.
    pub fn set_reservations(
        &mut self,
        reservations: impl IntoIterator<Item = (&'static str, u32)>,
    ) {
        self.reservations = reservations
            .into_iter()
            .map(|(id, count)| {
                let r = Reservation {
                    count,
                    ..Reservation::default()
                };
                (id, r)
            })
            .collect();
        self.solved = None;
    }

    /// Which reservations the NodePools in force may launch into, with one
    /// instance's allocatable ([`reservable`]).
    pub fn set_reservable(&mut self, reservable: &BTreeMap<&'static str, (i64, i64)>) {
        for (id, r) in &mut self.reservations {
            r.launchable = reservable.get(id).copied();
        }
        self.solved = None;
    }

    /// A reservation began expiring: from now on only its running nodes
    /// count.
    pub fn reservation_expiring(&mut self, id: &str) {
        if let Some(r) = self.reservations.get_mut(id) {
            r.expiring = true;
        }
        self.solved = None;
    }

    /// A node launched into reservation `id` started running.
    pub fn reserved_node_added(
        &mut self,
        node: NodeId,
        id: &'static str,
        cpu_millis: i64,
        memory_bytes: i64,
    ) {
        self.reserved_nodes
            .insert(node, (id, cpu_millis, memory_bytes));
        self.solved = None;
    }

    /// The fixed charges in force changed to `rate` per hour.
    pub fn set_fixed_rate(&mut self, rate: Price) {
        self.fixed_rate = rate.micros();
        self.solved = None;
    }

    /// The CPU and memory the reservations supply for free.
    fn reserved_supply(&self) -> (i64, i64) {
        let mut running: BTreeMap<&str, (i64, i64)> = BTreeMap::new();
        for (id, cpu, memory) in self.reserved_nodes.values() {
            let entry = running.entry(id).or_default();
            entry.0 += cpu;
            entry.1 += memory;
        }
        let mut supply = (0i64, 0i64);
        for (id, r) in &self.reservations {
            let on_nodes = running.remove(id).unwrap_or_default();
            let whole = match r.launchable {
                Some((cpu, memory)) if !r.expiring => (
                    cpu.saturating_mul(i64::from(r.count)),
                    memory.saturating_mul(i64::from(r.count)),
                ),
                _ => (0, 0),
            };
            supply.0 = supply.0.saturating_add(whole.0.max(on_nodes.0));
            supply.1 = supply.1.saturating_add(whole.1.max(on_nodes.1));
        }
        // Nodes of reservations the variant does not list (none in a
        // prepared run) still hold their pods.
        for (cpu, memory) in running.values() {
            supply.0 = supply.0.saturating_add(*cpu);
            supply.1 = supply.1.saturating_add(*memory);
        }
        supply
    }

    /// The bound's rate for this demand in the current state, micro-USD per
    /// hour rounded down.
    pub fn rate(&mut self, cpu_millis: i64, memory_bytes: i64) -> i64 {
        let demand = (cpu_millis, memory_bytes);
        if let Some((solved, rate)) = self.solved
            && solved == demand
        {
            return rate;
        }
        let (free_cpu, free_memory) = self.reserved_supply();
        let covered = floor_rate(self.covering().rate(
            cpu_millis.saturating_sub(free_cpu).max(0),
            memory_bytes.saturating_sub(free_memory).max(0),
        ));
        let rate = covered.saturating_add(self.fixed_rate);
        self.solved = Some((demand, rate));
        rate
    }

    /// Adds `millis` of the current state with this demand to the integral.
    pub fn integrate(&mut self, millis: u64, cpu_millis: i64, memory_bytes: i64) {
        if millis == 0 {
            return;
        }
        let rate = self.rate(cpu_millis, memory_bytes);
        self.integral += i128::from(rate) * i128::from(millis);
    }

    /// The bound so far, rounded down to a micro-dollar.
    pub fn total(&self) -> MicroUsd {
        MicroUsd(i64::try_from(self.integral / MS_PER_HOUR).unwrap_or(i64::MAX))
    }
}

#[cfg(test)]
mod tests;
