//! The spot interruption model: when spot nodes receive EC2's interruption
//! notice, from three seeded, reproducible sources, plus the timeline around
//! each notice.
//!
//! # Sources
//!
//! - **Advisor hazard.** Each spot node may be interrupted at a constant rate
//!   set by the Spot Advisor band of its (region, type) offering; see
//!   [`band_hazard_per_hour`]. At each spot launch the engine calls
//!   [`InterruptionModel::on_spot_launch`] (or [`draw_node_interruption`]),
//!   which draws one exponential time-to-interruption. Draws come from the
//!   `interruptions` stream in launch order, so they depend only on the
//!   sequence of spot launches.
//! - **Storms** ([`Storm`]): at a given time, a fraction of the running spot
//!   nodes matching (instance types, zones) get a notice, and the matching
//!   spot offerings may stay unavailable for a while ([`OfferingOutage`]).
//! - **Trace** ([`TraceNotice`]): notices replayed from a file, each for one
//!   node named in the file, or for one running spot node of the given type
//!   and zone, chosen like a storm victim.
//!
//! Victims of storms and trace rows are chosen by [`select_storm_victims`]
//! over the nodes running at that instant, sorted by name. The engine draws
//! them from a stream of its own (`interruptions/victims` is the suggested
//! name), so adding a storm does not reshuffle the hazard draws.
//!
//! # Timeline of one interruption
//!
//! An optional *rebalance recommendation* ([`DEFAULT_REBALANCE_LEAD`] before
//! the notice by default, never before the node's launch), the 2-minute
//! *interruption notice*, then the *reclaim* [`NOTICE_TO_RECLAIM`] later,
//! when EC2 stops the instance whatever the cluster has done. How each
//! autoscaler reacts (Karpenter deletes the NodeClaim at the notice and
//! marks the offering unavailable for 3 min; Cluster Autoscaler without a
//! termination handler only sees the node vanish at reclaim) is the
//! engine's business; the model only says what EC2 does and when.

use std::collections::BTreeSet;

use rand::{Rng, RngExt};

use super::trace::TraceNotice;
use crate::cloud::{CapacityType, InterruptionBand};
use crate::time::{SimDuration, SimTime};

/// From the interruption notice to EC2 reclaiming the instance: the
/// documented two minutes.
pub const NOTICE_TO_RECLAIM: SimDuration = SimDuration::from_secs(120);

/// Default time from a rebalance recommendation to the notice.
///
/// EC2 gives no fixed lead: a recommendation "can arrive sooner than the
/// two-minute Spot Instance interruption notice", sometimes together with
/// it, and is not guaranteed (AWS EC2 user guide, "EC2 instance rebalance
/// recommendations"). Ten minutes is a round figure within what users
/// report (a few minutes to tens of minutes); it is long enough that a
/// controller reacting to the recommendation has a replacement Ready
/// (~30–60 s launch) well before the notice.
pub const DEFAULT_REBALANCE_LEAD: SimDuration = SimDuration::from_mins(10);

/// Hours in an average month (365 × 24 / 12), the Spot Advisor's period.
pub const HOURS_PER_MONTH: f64 = 730.0;

/// The monthly interruption probability used for a Spot Advisor band: the
/// midpoint of the band's label, `(5 × index + 2.5) %`, i.e. 2.5 %, 7.5 %,
/// 12.5 %, 17.5 % and 22.5 %.
///
/// The advisor gives a range ("<5%", "5-10%", ... ">20%"), the share of a
/// type's spot capacity interrupted over the trailing month. The midpoint
/// is the unbiased choice when nothing is known within the range. The feed's
/// own `ranges` carry upper bounds 5, 11, 16, 22 and 100; those ranges'
/// midpoints differ from the labels' by at most half a point for the
/// first four bands, and the last range (22–100 %) has no useful midpoint,
/// so the open-ended top band is taken as the next 5-point band, 20–25 %:
/// a lower-end estimate rather than an invented large one. Scenarios
/// wanting harsher conditions add storms or a trace.
pub fn band_monthly_probability(band: InterruptionBand) -> f64 {
    (5.0 * f64::from(band.index()) + 2.5) / 100.0
}

/// The constant hazard λ (interruptions per node-hour) of a band:
/// `λ = −ln(1 − p) / 730 h` with `p` from [`band_monthly_probability`].
///
/// With a constant hazard, a node's time to interruption is exponential and
/// `P(interrupted within a month) = 1 − e^(−730 λ) = p`, so a node running a
/// whole month is interrupted with the advisor's probability. (`p / 730`
/// would understate that by ~1 % relative at 2.5 % and ~12 % at 22.5 %.) A
/// constant rate is a simplification: real interruptions cluster in capacity
/// events, which storms model.
pub fn band_hazard_per_hour(band: InterruptionBand) -> f64 {
    -(-band_monthly_probability(band)).ln_1p() / HOURS_PER_MONTH
}

const MS_PER_HOUR: f64 = 3_600_000.0;

/// Draws when a spot node launched at `launch` in an offering of `band`
/// gets its interruption notice: `launch + T`, T exponential with rate
/// [`band_hazard_per_hour`], rounded to the millisecond. Uses exactly one
/// draw from `rng`. `None` only when the time does not fit the clock.
///
/// The engine calls this at each spot launch with the `interruptions`
/// stream, in launch order; times after the run's end, or after the node is
/// gone, are ignored by the caller.
pub fn draw_node_interruption<R: Rng + ?Sized>(
    band: InterruptionBand,
    launch: SimTime,
    rng: &mut R,
) -> Option<SimTime> {
    let uniform: f64 = rng.random();
    // 1 − u lies in (0, 1], so the logarithm is finite and ≤ 0.
    let hours = -(-uniform).ln_1p() / band_hazard_per_hour(band);
    let millis = (hours * MS_PER_HOUR).round();
    if !millis.is_finite() || millis >= u64::MAX as f64 {
        return None;
    }
    // The check above keeps the value in range; `as` saturates anyway.
    launch.checked_add(SimDuration::from_millis(millis as u64))
}

/// A fraction in (0, 1], held exactly in millionths so that victim counts
/// never suffer from binary rounding (0.3 × 10 is exactly 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Fraction(u32);

const MILLIONTHS: u32 = 1_000_000;

impl Fraction {
    /// All of them.
    pub const ONE: Fraction = Fraction(MILLIONTHS);

    /// `millionths / 1 000 000`, if that is in (0, 1].
    pub const fn from_millionths(millionths: u32) -> Option<Fraction> {
        if millionths > 0 && millionths <= MILLIONTHS {
            Some(Fraction(millionths))
        } else {
            None
        }
    }

    /// The value in millionths.
    pub const fn millionths(self) -> u32 {
        self.0
    }

    /// Reads a decimal such as `0.3`, `1`, `1.0`, `.25` or `5e-1`, with at
    /// most six decimals, greater than 0 and at most 1.
    pub fn parse(text: &str) -> Result<Fraction, String> {
        let invalid = || format!("expected a number greater than 0 and at most 1, found {text}");
        let expanded = crate::cloud::price::plain_decimal(text).ok_or_else(invalid)?;
        let (whole, decimals) = expanded.split_once('.').unwrap_or((&expanded, ""));
        let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
        if (whole.is_empty() && decimals.is_empty()) || !all_digits(whole) || !all_digits(decimals)
        {
            return Err(invalid());
        }
        if decimals.len() > 6 {
            return Err(format!("{text} has more than six decimals"));
        }
        let whole: u32 = match whole.trim_start_matches('0') {
            "" => 0,
            "1" => 1,
            _ => return Err(invalid()),
        };
        let mut millionths = whole * MILLIONTHS;
        let mut scale = MILLIONTHS / 10;
        for digit in decimals.bytes() {
            millionths += u32::from(digit - b'0') * scale;
            scale /= 10;
        }
        Fraction::from_millionths(millionths).ok_or_else(invalid)
    }

    /// How many of `count` items the fraction selects: `⌈count × f⌉`.
    ///
    /// Rounding up means a storm with any positive fraction interrupts at
    /// least one node when any match (a 10 % storm over 4 nodes hits one
    /// rather than none), and `f × count` exact is never rounded
    /// (10 × 0.3 → 3).
    pub fn of(self, count: usize) -> usize {
        let product = count as u128 * u128::from(self.0);
        product.div_ceil(u128::from(MILLIONTHS)) as usize
    }
}

impl std::fmt::Display for Fraction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let whole = self.0 / MILLIONTHS;
        let decimals = format!("{:06}", self.0 % MILLIONTHS);
        let decimals = decimals.trim_end_matches('0');
        if decimals.is_empty() {
            write!(f, "{whole}")
        } else {
            write!(f, "{whole}.{decimals}")
        }
    }
}

/// Chooses [`Fraction::of`] the candidates, uniformly at random without
/// replacement (a partial Fisher–Yates shuffle), and returns them in name
/// order. Candidates are sorted and deduplicated first, so the result does
/// not depend on the order the caller lists them in; one draw per chosen
/// node.
pub fn select_storm_victims<'a, R: Rng + ?Sized>(
    candidates: &[&'a str],
    fraction: Fraction,
    rng: &mut R,
) -> Vec<&'a str> {
    let mut pool: Vec<&'a str> = candidates.to_vec();
    pool.sort_unstable();
    pool.dedup();
    let count = fraction.of(pool.len());
    choose(pool, count, rng)
}

/// `count` of the sorted `pool`, uniformly, in name order.
fn choose<'a, R: Rng + ?Sized>(mut pool: Vec<&'a str>, count: usize, rng: &mut R) -> Vec<&'a str> {
    let count = count.min(pool.len());
    for i in 0..count {
        let j = rng.random_range(i..pool.len());
        pool.swap(i, j);
    }
    pool.truncate(count);
    pool.sort_unstable();
    pool
}

/// Which names an event applies to: all, or those listed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum NameFilter {
    /// Every name (the key was omitted).
    #[default]
    All,
    /// Only these names.
    Only(BTreeSet<String>),
}

impl NameFilter {
    /// Whether `name` passes.
    pub fn matches(&self, name: &str) -> bool {
        match self {
            NameFilter::All => true,
            NameFilter::Only(names) => names.contains(name),
        }
    }
}

/// A capacity storm: at `at`, reclaim `fraction` of the running spot nodes
/// whose instance type and zone match (when spot is among its capacity
/// types), and keep the matching offerings of its capacity types
/// unavailable for `unavailable_for`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Storm {
    /// When the notices are given.
    pub at: SimTime,
    /// Instance types hit.
    pub instance_types: NameFilter,
    /// Zones hit.
    pub zones: NameFilter,
    /// Share of the matching nodes that get a notice.
    pub fraction: Fraction,
    /// How long the matching offerings cannot be launched, from `at`;
    /// zero for no outage.
    pub unavailable_for: SimDuration,
    /// Capacity types short (`capacityType`, default spot): an on-demand
    /// shortage makes on-demand offerings unavailable too; only spot nodes
    /// get notices, and only when spot is listed.
    pub capacity_types: BTreeSet<CapacityType>,
}

impl Storm {
    /// Whether a spot node of this type and zone is hit.
    pub fn matches(&self, instance_type: &str, zone: &str) -> bool {
        self.capacity_types.contains(&CapacityType::Spot)
            && self.instance_types.matches(instance_type)
            && self.zones.matches(zone)
    }

    /// The default capacity types of a storm: spot only.
    pub fn spot_only() -> BTreeSet<CapacityType> {
        BTreeSet::from([CapacityType::Spot])
    }
}

/// A window in which matching offerings cannot be launched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OfferingOutage {
    /// Instance types affected.
    pub instance_types: NameFilter,
    /// Zones affected.
    pub zones: NameFilter,
    /// Start (inclusive).
    pub from: SimTime,
    /// End (exclusive): the offerings are available again from here.
    pub until: SimTime,
    /// Index of the storm that caused it.
    pub storm: usize,
    /// Capacity types affected.
    pub capacity_types: BTreeSet<CapacityType>,
}

impl OfferingOutage {
    /// Whether the offering (type, zone, capacity type) is unavailable at
    /// `at`.
    pub fn covers(
        &self,
        instance_type: &str,
        zone: &str,
        capacity_type: CapacityType,
        at: SimTime,
    ) -> bool {
        self.from <= at
            && at < self.until
            && self.capacity_types.contains(&capacity_type)
            && self.instance_types.matches(instance_type)
            && self.zones.matches(zone)
    }
}

/// The instants of one interruption.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct InterruptionTimeline {
    /// The rebalance recommendation, when recommendations are enabled.
    pub rebalance: Option<SimTime>,
    /// The 2-minute interruption notice.
    pub notice: SimTime,
    /// When EC2 reclaims the instance: `notice + 120 s`.
    pub reclaim: SimTime,
}

/// The timeline of an interruption noticed at `notice` on a node launched
/// at `launched`: the recommendation `rebalance_lead` before the notice
/// (`None`: no recommendations), but not before the launch; the reclaim
/// [`NOTICE_TO_RECLAIM`] after the notice.
pub fn interruption_timeline(
    notice: SimTime,
    launched: SimTime,
    rebalance_lead: Option<SimDuration>,
) -> InterruptionTimeline {
    InterruptionTimeline {
        rebalance: rebalance_lead.map(|lead| (notice - lead).max(launched)),
        notice,
        reclaim: notice + NOTICE_TO_RECLAIM,
    }
}

/// A running spot node, as the engine describes it to the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SpotNode<'a> {
    /// Node name (unique in the run).
    pub name: &'a str,
    /// Instance type.
    pub instance_type: &'a str,
    /// Zone name.
    pub zone: &'a str,
    /// The Spot Advisor band of its offering (`None`: no advisor data).
    pub band: Option<InterruptionBand>,
    /// When it was launched.
    pub launched: SimTime,
}

/// Why a node is interrupted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum InterruptionCause {
    /// Drawn from the Spot Advisor band's hazard.
    AdvisorHazard(InterruptionBand),
    /// Storm number `index` of the scenario (from 0).
    Storm(usize),
    /// The trace row at this position of the trace file.
    Trace(super::files::RowRef),
}

/// An interruption of one node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InterruptionNotice {
    /// The node.
    pub node: String,
    /// Why.
    pub cause: InterruptionCause,
    /// When the recommendation, notice and reclaim happen.
    pub timeline: InterruptionTimeline,
}

/// A storm or trace row due at a fixed time; the engine schedules these and
/// calls [`InterruptionModel::fire`] when each comes due.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Trigger {
    /// When.
    pub at: SimTime,
    /// What.
    pub kind: TriggerKind,
}

/// What a [`Trigger`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TriggerKind {
    /// Storm number `index`.
    Storm(usize),
    /// Trace row number `index` (in the settings' time-ordered list).
    Trace(usize),
}

/// What a trigger did.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Firing {
    /// The interrupted nodes, in name order.
    pub notices: Vec<InterruptionNotice>,
    /// The offering outage a storm starts, if any.
    pub outage: Option<OfferingOutage>,
    /// Why a trace row interrupted nothing, for the run's event log.
    pub skipped: Option<String>,
}

/// The interruption inputs of a run (from the scenario).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct InterruptionSettings {
    /// Whether spot nodes draw hazard interruptions from their band.
    pub advisor_hazard: bool,
    /// Rebalance recommendations this long before each notice; `None`: off.
    pub rebalance_lead: Option<SimDuration>,
    /// Capacity storms, in time order.
    pub storms: Vec<Storm>,
    /// Trace notices, in time order.
    pub trace: Vec<TraceNotice>,
}

/// The interruption model of one run.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct InterruptionModel {
    settings: InterruptionSettings,
}

impl InterruptionModel {
    /// A model for these settings.
    pub fn new(settings: InterruptionSettings) -> InterruptionModel {
        InterruptionModel { settings }
    }

    /// The settings.
    pub fn settings(&self) -> &InterruptionSettings {
        &self.settings
    }

    /// Every storm and trace row, by time; at equal times storms first, then
    /// trace rows, each in list order.
    pub fn triggers(&self) -> Vec<Trigger> {
        let storms = self.settings.storms.iter().enumerate();
        let trace = self.settings.trace.iter().enumerate();
        let mut triggers: Vec<Trigger> = storms
            .map(|(i, storm)| Trigger {
                at: storm.at,
                kind: TriggerKind::Storm(i),
            })
            .chain(trace.map(|(i, row)| Trigger {
                at: row.at,
                kind: TriggerKind::Trace(i),
            }))
            .collect();
        triggers.sort();
        triggers
    }

    /// The hazard interruption of a node being launched, when the advisor
    /// hazard is on and the node's offering has a band. Call at every spot
    /// launch, in launch order, with the hazard stream; one draw per node
    /// with a band, none otherwise. The caller schedules the notice and
    /// drops it if by then the node is gone or already under a notice.
    pub fn on_spot_launch<R: Rng + ?Sized>(
        &self,
        node: &SpotNode<'_>,
        rng: &mut R,
    ) -> Option<InterruptionNotice> {
        if !self.settings.advisor_hazard {
            return None;
        }
        let band = node.band?;
        let notice = draw_node_interruption(band, node.launched, rng)?;
        Some(self.notice(node, InterruptionCause::AdvisorHazard(band), notice))
    }

    /// Applies a trigger to the spot nodes running at its time that are not
    /// already under a notice (`running`, any order). Draws victims from
    /// `rng` (the victims stream).
    pub fn fire<R: Rng + ?Sized>(
        &self,
        trigger: Trigger,
        running: &[SpotNode<'_>],
        rng: &mut R,
    ) -> Firing {
        let mut nodes = running.to_vec();
        nodes.sort_by_key(|node| node.name);
        match trigger.kind {
            TriggerKind::Storm(index) => {
                let Some(storm) = self.settings.storms.get(index) else {
                    return Firing::default();
                };
                let candidates: Vec<&str> = nodes
                    .iter()
                    .filter(|n| storm.matches(n.instance_type, n.zone))
                    .map(|n| n.name)
                    .collect();
                let victims = select_storm_victims(&candidates, storm.fraction, rng);
                let outage = (!storm.unavailable_for.is_zero()).then(|| OfferingOutage {
                    instance_types: storm.instance_types.clone(),
                    zones: storm.zones.clone(),
                    from: trigger.at,
                    until: trigger.at + storm.unavailable_for,
                    storm: index,
                    capacity_types: storm.capacity_types.clone(),
                });
                Firing {
                    notices: self.notices_for(
                        &nodes,
                        &victims,
                        InterruptionCause::Storm(index),
                        trigger.at,
                    ),
                    outage,
                    skipped: None,
                }
            }
            TriggerKind::Trace(index) => {
                let Some(row) = self.settings.trace.get(index) else {
                    return Firing::default();
                };
                let matching =
                    |n: &&SpotNode<'_>| n.instance_type == row.instance_type && n.zone == row.zone;
                let cause = InterruptionCause::Trace(row.row);
                let victims: Vec<&str> = match &row.node {
                    Some(name) => nodes
                        .iter()
                        .filter(matching)
                        .filter(|n| n.name == name)
                        .map(|n| n.name)
                        .collect(),
                    None => {
                        let candidates = nodes.iter().filter(matching).map(|n| n.name).collect();
                        choose(candidates, 1, rng)
                    }
                };
                let skipped = victims.is_empty().then(|| match &row.node {
                    Some(name) => format!(
                        "trace {}: no running spot node {name} of {} in {} at {}",
                        row.row, row.instance_type, row.zone, row.at
                    ),
                    None => format!(
                        "trace {}: no running spot node of {} in {} at {}",
                        row.row, row.instance_type, row.zone, row.at
                    ),
                });
                Firing {
                    notices: self.notices_for(&nodes, &victims, cause, trigger.at),
                    outage: None,
                    skipped,
                }
            }
        }
    }

    fn notices_for(
        &self,
        nodes: &[SpotNode<'_>],
        victims: &[&str],
        cause: InterruptionCause,
        at: SimTime,
    ) -> Vec<InterruptionNotice> {
        nodes
            .iter()
            .filter(|node| victims.contains(&node.name))
            .map(|node| self.notice(node, cause, at))
            .collect()
    }

    fn notice(
        &self,
        node: &SpotNode<'_>,
        cause: InterruptionCause,
        at: SimTime,
    ) -> InterruptionNotice {
        InterruptionNotice {
            node: node.name.to_string(),
            cause,
            timeline: interruption_timeline(at, node.launched, self.settings.rebalance_lead),
        }
    }
}

#[cfg(test)]
#[path = "interruptions_tests.rs"]
mod tests;
