//! The cost ledger: what every node costs from launch to termination, with
//! running totals by capacity type and by node pool (or CA node group), and
//! the fleet's price per hour at any instant for time-series charts.
//!
//! Billing follows EC2's per-second billing for Linux instances, with a
//! 60-second minimum per instance:
//!
//! - Money is integer micro-USD ([`MicroUsd`]); prices are integer micro-USD
//!   per hour ([`Price`]); time is integer milliseconds. A record's
//!   cost is first computed exactly in micro-USD·ms/h (i128), then divided by
//!   3 600 000 (ms per hour) and **rounded half up to a whole micro-USD, once
//!   per record**. Totals are sums of those rounded record costs, so the
//!   report's total equals the sum of its rows. Time is billed to the
//!   millisecond (EC2 counts whole seconds; the difference is under one
//!   second per instance).
//! - A price can change during a node's life (spot price moves): the record
//!   holds piecewise-constant segments and each is charged for the time it
//!   was in force.
//! - **Minimum rule:** if a node lives less than 60 s, the missing
//!   `60 s − lifetime` is charged at the price in force at launch. The whole
//!   instance lifetime counts towards the minimum, not each segment.
//! - Billing runs from the launch time the caller records (when the instance
//!   starts running) to the termination time; no cost for time before launch.
//!
//! The rate sampler ([`CostLedger::hourly_rate_at`]) reports the list price of
//! nodes running at an instant; integrating it gives the ledger's cost except
//! for the 60 s minimum top-ups of short-lived nodes.
//!
//! **Fixed charges** are paid whatever runs: a capacity reservation costs
//! its instances' price from the start of the run until it ends, used or
//! not, while the nodes launched into it are billed at 0. A charge is one
//! rate over one interval, rounded half up once, counted in the total and
//! under its capacity type (not under any pool), and in the fleet's $/h
//! while it lasts; no 60 s minimum applies.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::iter::Sum;
use std::ops::{Add, AddAssign};

use super::time::{SimDuration, SimTime};
pub use crate::cloud::{CapacityType, Price};

/// Milliseconds per hour: the divisor from micro-USD·ms/h to micro-USD.
const MS_PER_HOUR: i128 = 3_600_000;
/// EC2's minimum billed lifetime.
pub const MINIMUM_BILLED: SimDuration = SimDuration::from_secs(60);

/// An amount of money in micro-USD (1 USD = 1 000 000).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct MicroUsd(pub i64);

impl MicroUsd {
    /// US dollars as a float, for charts only.
    pub fn as_usd_f64(self) -> f64 {
        self.0 as f64 / 1e6
    }
}

/// Writes `micros` as dollars with six decimals.
fn write_usd(f: &mut fmt::Formatter<'_>, micros: i64) -> fmt::Result {
    let sign = if micros < 0 { "-" } else { "" };
    let abs = micros.unsigned_abs();
    write!(f, "{sign}${}.{:06}", abs / 1_000_000, abs % 1_000_000)
}

/// `$0.002400`: exact, six decimals.
impl fmt::Display for MicroUsd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_usd(f, self.0)
    }
}

impl Add for MicroUsd {
    type Output = MicroUsd;
    fn add(self, other: MicroUsd) -> MicroUsd {
        MicroUsd(self.0.saturating_add(other.0))
    }
}

impl AddAssign for MicroUsd {
    fn add_assign(&mut self, other: MicroUsd) {
        *self = *self + other;
    }
}

impl Sum for MicroUsd {
    fn sum<I: Iterator<Item = MicroUsd>>(iter: I) -> MicroUsd {
        iter.fold(MicroUsd(0), Add::add)
    }
}

/// Handle to one billing record in a [`CostLedger`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BillingId(usize);

/// What the ledger needs to know when a node is launched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeLaunch {
    /// Node (or NodeClaim) name, for reports and error messages.
    pub node_name: String,
    /// NodePool or CA node-group name.
    pub pool: String,
    /// How the node is bought.
    pub capacity_type: CapacityType,
    /// When billing starts.
    pub launched_at: SimTime,
    /// The price in force at launch.
    pub price: Price,
}

/// A price in force from `from` until the next segment starts (or the node
/// terminates).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PriceSegment {
    /// Start of the segment.
    pub from: SimTime,
    /// Price during the segment.
    pub price: Price,
}

/// One node's billing history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BillingRecord {
    node_name: String,
    pool: String,
    capacity_type: CapacityType,
    launched_at: SimTime,
    terminated_at: Option<SimTime>,
    /// Non-empty; starts are strictly increasing; the first is the launch.
    segments: Vec<PriceSegment>,
}

impl BillingRecord {
    /// Node name.
    pub fn node_name(&self) -> &str {
        &self.node_name
    }

    /// NodePool or node-group name.
    pub fn pool(&self) -> &str {
        &self.pool
    }

    /// Capacity type.
    pub fn capacity_type(&self) -> CapacityType {
        self.capacity_type
    }

    /// When billing started.
    pub fn launched_at(&self) -> SimTime {
        self.launched_at
    }

    /// When billing stopped, if it has.
    pub fn terminated_at(&self) -> Option<SimTime> {
        self.terminated_at
    }

    /// The price history, oldest first.
    pub fn segments(&self) -> &[PriceSegment] {
        &self.segments
    }

    /// The price in force at launch (charged for any 60 s minimum top-up).
    pub fn launch_price(&self) -> Price {
        self.segments[0].price
    }

    /// The most recent price.
    pub fn latest_price(&self) -> Price {
        self.segments[self.segments.len() - 1].price
    }

    /// The price in force at `at`, or `None` if the node was not running then.
    pub fn price_at(&self, at: SimTime) -> Option<Price> {
        if at < self.launched_at || self.terminated_at.is_some_and(|end| at >= end) {
            return None;
        }
        self.segments
            .iter()
            .rev()
            .find(|segment| segment.from <= at)
            .map(|segment| segment.price)
    }

    /// The cost: final if terminated, otherwise as if terminated at `now`
    /// (including the 60 s minimum, which is owed from the moment of launch).
    pub fn cost(&self, now: SimTime) -> MicroUsd {
        let end = self.terminated_at.unwrap_or(now).max(self.launched_at);
        // Exact cost in micro-USD·ms per hour.
        let mut exact: i128 = 0;
        for (i, segment) in self.segments.iter().enumerate() {
            let segment_end = self
                .segments
                .get(i + 1)
                .map_or(end, |next| next.from)
                .min(end);
            let ms = segment_end
                .saturating_duration_since(segment.from)
                .as_millis();
            exact += i128::from(segment.price.micros()) * i128::from(ms);
        }
        let lifetime = end - self.launched_at;
        let top_up = MINIMUM_BILLED - lifetime;
        exact += i128::from(self.launch_price().micros()) * i128::from(top_up.as_millis());
        // Round half up; `exact` is never negative (prices are validated).
        let micros = (exact + MS_PER_HOUR / 2) / MS_PER_HOUR;
        MicroUsd(i64::try_from(micros).unwrap_or(i64::MAX))
    }
}

/// Cost broken down the ways reports need.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CostTotals {
    /// Sum of all records.
    pub total: MicroUsd,
    /// Per capacity type (types with no records are absent).
    pub by_capacity_type: BTreeMap<CapacityType, MicroUsd>,
    /// Per NodePool / node-group name.
    pub by_pool: BTreeMap<String, MicroUsd>,
}

impl CostTotals {
    fn add(&mut self, record: &BillingRecord, cost: MicroUsd) {
        self.total += cost;
        *self
            .by_capacity_type
            .entry(record.capacity_type)
            .or_default() += cost;
        *self.by_pool.entry(record.pool.clone()).or_default() += cost;
    }
}

/// A ledger operation that does not make sense.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LedgerError {
    /// The id does not belong to this ledger.
    #[error("no billing record with id {0:?}")]
    UnknownRecord(BillingId),
    /// Prices are never negative.
    #[error("node {node}: negative price {price}")]
    NegativePrice {
        /// Node name.
        node: String,
        /// The offending price.
        price: Price,
    },
    /// The node has already been terminated.
    #[error("node {node}: already terminated at {terminated_at}")]
    AlreadyTerminated {
        /// Node name.
        node: String,
        /// When it was terminated.
        terminated_at: SimTime,
    },
    /// A change dated before the record's latest change (or its launch).
    #[error("node {node}: change at {at} is before its previous change at {previous}")]
    OutOfOrder {
        /// Node name.
        node: String,
        /// Requested time.
        at: SimTime,
        /// The latest time already recorded.
        previous: SimTime,
    },
}

/// Handle to one fixed charge in a [`CostLedger`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ChargeId(usize);

/// A rate paid from `from` until `until` (or now), whatever runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FixedCharge {
    /// What it pays for (`capacity-reservation/cr-…`).
    pub label: String,
    /// Counted under this capacity type.
    pub capacity_type: CapacityType,
    /// When it starts.
    pub from: SimTime,
    /// When it ended, if it has.
    pub until: Option<SimTime>,
    /// Per hour.
    pub rate: Price,
}

impl FixedCharge {
    /// What it has cost by `now` (or its end), rounded half up.
    pub fn cost(&self, now: SimTime) -> MicroUsd {
        let end = self.until.unwrap_or(now).min(now).max(self.from);
        let ms = end.saturating_duration_since(self.from).as_millis();
        let exact = i128::from(self.rate.micros()) * i128::from(ms);
        let micros = (exact + MS_PER_HOUR / 2) / MS_PER_HOUR;
        MicroUsd(i64::try_from(micros).unwrap_or(i64::MAX))
    }

    fn in_force(&self, at: SimTime) -> bool {
        at >= self.from && self.until.is_none_or(|end| at < end)
    }
}

/// All billing records of one run, with running totals.
#[derive(Debug, Clone, Default)]
pub struct CostLedger {
    records: Vec<BillingRecord>,
    /// Fixed charges, in the order they were made.
    charges: Vec<FixedCharge>,
    /// Records not yet terminated, in launch order.
    open: BTreeSet<usize>,
    /// Totals over terminated records.
    closed: CostTotals,
    /// Sum of the latest prices of open records.
    current_rate: i64,
}

impl CostLedger {
    /// An empty ledger.
    pub fn new() -> Self {
        Self::default()
    }

    /// Starts billing a node.
    pub fn launch(&mut self, launch: NodeLaunch) -> Result<BillingId, LedgerError> {
        check_price(&launch.node_name, launch.price)?;
        let id = self.records.len();
        self.current_rate = self.current_rate.saturating_add(launch.price.micros());
        self.records.push(BillingRecord {
            segments: vec![PriceSegment {
                from: launch.launched_at,
                price: launch.price,
            }],
            node_name: launch.node_name,
            pool: launch.pool,
            capacity_type: launch.capacity_type,
            launched_at: launch.launched_at,
            terminated_at: None,
        });
        self.open.insert(id);
        Ok(BillingId(id))
    }

    /// Records a new price for a running node from `at` on. A change at the
    /// same instant as the previous one replaces it.
    pub fn change_price(
        &mut self,
        id: BillingId,
        at: SimTime,
        price: Price,
    ) -> Result<(), LedgerError> {
        let record = open_record(&mut self.records, id)?;
        check_price(&record.node_name, price)?;
        let last = record.segments.len() - 1;
        let previous = record.segments[last];
        if at < previous.from {
            return Err(out_of_order(record, at, previous.from));
        }
        if at == previous.from {
            record.segments[last].price = price;
        } else {
            record.segments.push(PriceSegment { from: at, price });
        }
        self.current_rate = self
            .current_rate
            .saturating_add(price.micros() - previous.price.micros());
        Ok(())
    }

    /// Stops billing a node at `at` and returns its final cost.
    pub fn terminate(&mut self, id: BillingId, at: SimTime) -> Result<MicroUsd, LedgerError> {
        let record = open_record(&mut self.records, id)?;
        let previous = record.segments[record.segments.len() - 1].from;
        if at < previous {
            return Err(out_of_order(record, at, previous));
        }
        record.terminated_at = Some(at);
        let cost = record.cost(at);
        self.current_rate = self
            .current_rate
            .saturating_sub(record.latest_price().micros());
        self.closed.add(record, cost);
        self.open.remove(&id.0);
        Ok(cost)
    }

    /// Starts a fixed charge of `rate` per hour at `from` (see the module
    /// doc).
    pub fn charge(
        &mut self,
        label: String,
        capacity_type: CapacityType,
        from: SimTime,
        rate: Price,
    ) -> Result<ChargeId, LedgerError> {
        check_price(&label, rate)?;
        self.current_rate = self.current_rate.saturating_add(rate.micros());
        self.charges.push(FixedCharge {
            label,
            capacity_type,
            from,
            until: None,
            rate,
        });
        Ok(ChargeId(self.charges.len() - 1))
    }

    /// Ends a fixed charge at `at`; ending it again changes nothing.
    pub fn end_charge(&mut self, id: ChargeId, at: SimTime) {
        if let Some(charge) = self.charges.get_mut(id.0)
            && charge.until.is_none()
        {
            charge.until = Some(at.max(charge.from));
            self.current_rate = self.current_rate.saturating_sub(charge.rate.micros());
        }
    }

    /// Every fixed charge, in the order made.
    pub fn charges(&self) -> &[FixedCharge] {
        &self.charges
    }

    /// One record.
    pub fn record(&self, id: BillingId) -> Option<&BillingRecord> {
        self.records.get(id.0)
    }

    /// All records in launch order.
    pub fn records(&self) -> &[BillingRecord] {
        &self.records
    }

    /// Number of nodes still being billed.
    pub fn open_count(&self) -> usize {
        self.open.len()
    }

    /// Totals over terminated nodes only.
    pub fn closed_totals(&self) -> &CostTotals {
        &self.closed
    }

    /// Totals as of `now`: terminated nodes plus running ones as if
    /// terminated at `now`, plus the fixed charges up to `now`.
    pub fn totals_at(&self, now: SimTime) -> CostTotals {
        let mut totals = self.closed.clone();
        for &index in &self.open {
            let record = &self.records[index];
            totals.add(record, record.cost(now));
        }
        for charge in &self.charges {
            let cost = charge.cost(now);
            totals.total += cost;
            *totals
                .by_capacity_type
                .entry(charge.capacity_type)
                .or_default() += cost;
        }
        totals
    }

    /// Sum of the latest prices of the running nodes and of the fixed
    /// charges in force: the fleet's $/h after every change recorded so
    /// far. O(1); sample it as the clock advances.
    pub fn current_hourly_rate(&self) -> Price {
        Price::from_micros(self.current_rate)
    }

    /// The fleet's $/h at instant `at`: the price in force for each node
    /// running at `at` (launched at or before it, not yet terminated). Scans
    /// every record; for sampling past instants.
    pub fn hourly_rate_at(&self, at: SimTime) -> Price {
        let charges = self
            .charges
            .iter()
            .filter(|c| c.in_force(at))
            .fold(0i64, |sum, c| sum.saturating_add(c.rate.micros()));
        Price::from_micros(
            self.hourly_rate_at_where(at, |_| true)
                .micros()
                .saturating_add(charges),
        )
    }

    /// Like [`Self::hourly_rate_at`] without the fixed charges, restricted
    /// to records `include` accepts (e.g. one capacity type or one pool).
    pub fn hourly_rate_at_where(
        &self,
        at: SimTime,
        mut include: impl FnMut(&BillingRecord) -> bool,
    ) -> Price {
        let total = self
            .records
            .iter()
            .filter(|record| include(record))
            .filter_map(|record| record.price_at(at))
            .fold(0i64, |sum, price| sum.saturating_add(price.micros()));
        Price::from_micros(total)
    }
}

fn check_price(node: &str, price: Price) -> Result<(), LedgerError> {
    if price.micros() < 0 {
        return Err(LedgerError::NegativePrice {
            node: node.to_string(),
            price,
        });
    }
    Ok(())
}

fn open_record(
    records: &mut [BillingRecord],
    id: BillingId,
) -> Result<&mut BillingRecord, LedgerError> {
    let record = records
        .get_mut(id.0)
        .ok_or(LedgerError::UnknownRecord(id))?;
    if let Some(terminated_at) = record.terminated_at {
        return Err(LedgerError::AlreadyTerminated {
            node: record.node_name.clone(),
            terminated_at,
        });
    }
    Ok(record)
}

fn out_of_order(record: &BillingRecord, at: SimTime, previous: SimTime) -> LedgerError {
    LedgerError::OutOfOrder {
        node: record.node_name.clone(),
        at,
        previous,
    }
}

#[cfg(test)]
mod tests;
