//! The spot market during a run: spot price changes, EC2's interruption
//! signals (rebalance recommendation, 2-minute notice, reclaim) from the
//! three sources of [`crate::spot`] (advisor hazard, storms, trace),
//! storm outages, and Karpenter's native interruption handling.
//!
//! # The cloud's side and the provisioner's side
//!
//! What EC2 does is the same whoever manages the nodes: it changes prices,
//! sends signals ([`SpotSignal`]) and reclaims the instance
//! [`NOTICE_TO_RECLAIM`](crate::spot::NOTICE_TO_RECLAIM) after the
//! notice, killing whatever still runs there and ending its bill. Those
//! parts live in the engine. What the provisioner does about a signal is
//! routed through [`Engine::on_spot_signal`]: today that is Karpenter
//! (reference §5, aws: pkg/controllers/interruption): a rebalance
//! recommendation is only an event (NoAction); a notice deletes the
//! NodeClaim at once (CordonAndDrain: the termination controller taints and
//! drains it while the provisioner launches replacement capacity for its
//! pods in parallel) and puts the (spot, type, zone) offering in the ICE
//! cache for 3 minutes. A Cluster Autoscaler model plugs its own reaction
//! in at the same place (for instance nothing until the node vanishes at
//! reclaim, or a termination handler's drain).
//!
//! # Sources
//!
//! - Advisor hazard: at each spot launch one draw from the `interruptions`
//!   stream, in launch order ([`InterruptionModel::on_spot_launch`]); the
//!   notice is dropped if by then the node is gone or already noticed.
//! - Storms and trace rows: at their time, victims among the spot nodes in
//!   the cluster not yet noticed (nodes being drained for another reason
//!   included: EC2 does not know), drawn from the separate
//!   [`VICTIM_STREAM`]. A storm's outage makes launches of matching spot
//!   offerings fail with insufficient capacity until it ends; Karpenter
//!   only learns that by trying (the ICE path of the launch).
//! - A rebalance recommendation of a storm or trace notice would lie before
//!   the trigger, which is when victims are known; it is given at the
//!   notice instant instead (EC2 may send both together).
//!
//! # Prices
//!
//! Price changes at one instant are applied together: the spot offering's
//! price in every catalog (so launches and consolidation see the price in
//! force), and for each running node on that offering its bill
//! ([`CostLedger::change_price`](crate::ledger::CostLedger::change_price))
//! and its NodeClaim's price.

use std::collections::{BTreeMap, VecDeque};

use super::{Engine, EngineError, Event, EventType, OfferingKey, UNAVAILABLE_OFFERING_TTL};
use crate::cloud::{CapacityType, InterruptionBand, Price};
use crate::karpenter::provisioning::LaunchDecision;
use crate::rng::{RngStreams, SimRng, Stream};
use crate::scheduler::{NodeId, PodId};
use crate::spot::{
    InterruptionCause, InterruptionModel, OfferingOutage, PriceChange, SpotNode, Trigger,
    TriggerKind,
};
use crate::time::SimTime;

/// The random stream storm and trace victims are drawn from, apart from the
/// hazard draws so that adding a storm does not move them.
pub const VICTIM_STREAM: &str = "interruptions/victims";

/// Reason of a NodeClaim deleted for a spot interruption, and of the
/// evictions from it.
pub const INTERRUPTED: &str = "interrupted";

/// What EC2 tells about one spot instance, whoever manages it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum SpotSignal {
    /// A rebalance recommendation: elevated risk of interruption.
    Rebalance {
        /// The node.
        node: NodeId,
    },
    /// The 2-minute interruption notice.
    Notice {
        /// The node.
        node: NodeId,
        /// When the instance is reclaimed.
        reclaim_at: SimTime,
        /// Which source interrupted it.
        cause: InterruptionCause,
    },
}

/// A source of interruptions, as reports name it.
pub fn source_name(cause: InterruptionCause) -> &'static str {
    match cause {
        InterruptionCause::AdvisorHazard(_) => "advisor-hazard",
        InterruptionCause::Storm(_) => "storm",
        InterruptionCause::Trace(_) => "trace",
    }
}

/// What the engine keeps about a spot node from its launch.
#[derive(Debug, Clone)]
pub(super) struct SpotNodeFacts {
    pub instance_type: String,
    pub zone: String,
    pub band: Option<InterruptionBand>,
    pub on_demand_price: Price,
    pub launched: SimTime,
}

/// A node that received a notice.
#[derive(Debug, Clone)]
pub(super) struct Interrupted {
    pub notice: SimTime,
    /// Non-DaemonSet pods running (not terminating) on it at the notice.
    pub pods: Vec<PodId>,
}

/// One workload pod that had to leave an interrupted node, and its
/// replacement (see [`super::spot_metrics`] for the measures).
#[derive(Debug, Clone)]
pub(super) struct PodGap {
    pub workload: usize,
    /// The interrupted node it was on.
    pub node: NodeId,
    /// Notice of its node.
    pub notice: SimTime,
    /// When it stopped running (grace over, or killed at reclaim).
    pub stopped: Option<SimTime>,
    /// The pod its owner created to replace it.
    pub replacement: Option<PodId>,
    /// When the replacement first ran, and where.
    pub running: Option<(SimTime, NodeId)>,
    /// When the replacement was no longer wanted (removed before running).
    pub dropped: Option<SimTime>,
}

/// What the spot market did, for the summary.
#[derive(Debug, Clone, Default)]
pub(super) struct SpotCounts {
    /// Notices by source name.
    pub interruptions_by_source: BTreeMap<String, u64>,
    pub rebalance_recommendations: u64,
    /// Workload pods still running on the node when it was reclaimed.
    pub pods_killed_at_reclaim: u64,
    /// Trace rows that found no node.
    pub trace_rows_skipped: u64,
    /// Price changes applied.
    pub price_changes: u64,
    /// Launches that failed because a storm outage covered the offering.
    pub outage_launch_failures: u64,
}

/// The engine's spot state.
#[derive(Debug, Clone)]
pub(super) struct SpotState {
    pub model: InterruptionModel,
    hazard_rng: SimRng,
    victim_rng: SimRng,
    /// Every spot node launched.
    pub nodes: BTreeMap<NodeId, SpotNodeFacts>,
    /// Nodes that received a notice.
    pub interrupted: BTreeMap<NodeId, Interrupted>,
    /// What the summary counts.
    pub counts: SpotCounts,
    outages: Vec<OfferingOutage>,
    /// Spot prices set by the price history, per (type, zone).
    prices: BTreeMap<(String, String), Price>,
    pub gaps: Vec<PodGap>,
    gap_of_pod: BTreeMap<PodId, usize>,
    gap_of_replacement: BTreeMap<PodId, usize>,
    awaiting_replacement: BTreeMap<usize, VecDeque<usize>>,
}

impl SpotState {
    pub(super) fn new(model: InterruptionModel, seed: u64) -> SpotState {
        let streams = RngStreams::new(seed);
        SpotState {
            model,
            hazard_rng: streams.get(Stream::Interruptions),
            victim_rng: streams.named(VICTIM_STREAM),
            nodes: BTreeMap::new(),
            interrupted: BTreeMap::new(),
            counts: SpotCounts::default(),
            outages: Vec::new(),
            prices: BTreeMap::new(),
            gaps: Vec::new(),
            gap_of_pod: BTreeMap::new(),
            gap_of_replacement: BTreeMap::new(),
            awaiting_replacement: BTreeMap::new(),
        }
    }
}

impl Engine<'_> {
    /// Schedules the price changes (one event per instant) and the storm
    /// and trace triggers.
    pub(super) fn schedule_spot_inputs(&mut self) -> Result<(), EngineError> {
        let changes = &self.input.spot_price_changes;
        let starts: Vec<(SimTime, usize)> = (0..changes.len())
            .filter(|&i| i == 0 || changes[i - 1].at != changes[i].at)
            .map(|i| (changes[i].at, i))
            .collect();
        for (at, index) in starts {
            self.schedule(at, Event::SpotPrices(index))?;
        }
        for trigger in self.spot.model.triggers() {
            self.schedule(trigger.at, Event::SpotTrigger(trigger))?;
        }
        Ok(())
    }

    /// Applies the price changes due now, from `first` on.
    pub(super) fn apply_spot_prices(&mut self, first: usize) -> Result<(), EngineError> {
        let now = self.now();
        let changes: Vec<PriceChange> = self.input.spot_price_changes[first..]
            .iter()
            .take_while(|c| c.at == now)
            .cloned()
            .collect();
        for change in changes {
            self.spot.counts.price_changes += 1;
            self.spot.prices.insert(
                (change.instance_type.clone(), change.zone.clone()),
                change.price,
            );
            if let Some(karpenter) = self.autoscaler.karpenter_mut() {
                for catalog in karpenter
                    .base_catalogs
                    .iter_mut()
                    .chain(karpenter.catalogs.iter_mut())
                {
                    catalog.set_offering_price(
                        &change.instance_type,
                        &change.zone,
                        CapacityType::Spot,
                        change.price,
                    );
                }
                // The prepared solve setup caches price tables and cannot
                // see an in-place price change.
                karpenter.provisioner.catalogs_changed();
            }
            self.record
                .bound
                .spot_price_changed(&change.instance_type, &change.zone, change.price);
            let running: Vec<NodeId> = self
                .spot
                .nodes
                .iter()
                .filter(|(_, f)| f.instance_type == change.instance_type && f.zone == change.zone)
                .map(|(id, _)| *id)
                .filter(|id| self.cluster.node(*id).is_some())
                .collect();
            for node in &running {
                let billing = self.node_meta[node.0 as usize].billing;
                self.ledger
                    .change_price(billing, now, change.price)
                    .map_err(|e| self.ledger_error(e))?;
                self.record.bound.node_price_changed(*node, change.price);
                if let Some(claim) = self.cluster.node_mut(*node).and_then(|n| n.claim.as_mut()) {
                    claim.price = change.price;
                }
            }
            self.log(
                EventType::Normal,
                "SpotPriceChanged",
                format!("offering/{}/{}/spot", change.instance_type, change.zone),
                format!(
                    "spot price now ${}/h ({}); {} running node(s) billed at it",
                    change.price.decimal(),
                    change.row,
                    running.len()
                ),
            );
        }
        self.touch()
    }

    /// Sets the spot prices of the price history in force on the base
    /// catalogs (after a NodePool change rebuilt them).
    pub(super) fn apply_spot_prices_in_force(&mut self) {
        let Some(karpenter) = self.autoscaler.karpenter_mut() else {
            return;
        };
        for ((instance_type, zone), price) in &self.spot.prices {
            for catalog in &mut karpenter.base_catalogs {
                catalog.set_offering_price(instance_type, zone, CapacityType::Spot, *price);
            }
        }
        karpenter.provisioner.catalogs_changed();
    }

    /// Whether EC2 has no capacity for `key` now: `Some(false)` for a test
    /// shortage, `Some(true)` for a storm outage over the offering's
    /// capacity type, `None` when it has capacity.
    pub(super) fn capacity_short(&mut self, key: &OfferingKey) -> Option<bool> {
        let now = self.now();
        self.end_outages(now);
        self.offering_short(now, &key.instance_type, &key.zone, key.capacity_type)
    }

    /// Whether EC2 has capacity for every offering (no test shortage, no
    /// storm outage left once [`Self::end_outages`] has run).
    pub(super) fn every_offering_has_capacity(&self) -> bool {
        self.input.capacity_shortages.is_empty() && self.spot.outages.is_empty()
    }

    /// Forgets the storm outages over by `now`.
    pub(super) fn end_outages(&mut self, now: SimTime) {
        self.spot.outages.retain(|o| o.until > now);
    }

    /// [`Self::capacity_short`] of the offering (type, zone, capacity
    /// type) at `now`, once [`Self::end_outages`] has run for `now`; no
    /// key is made unless a test shortage must be looked up.
    pub(super) fn offering_short(
        &self,
        now: SimTime,
        instance_type: &str,
        zone: &str,
        capacity_type: CapacityType,
    ) -> Option<bool> {
        let shortages = &self.input.capacity_shortages;
        if !shortages.is_empty()
            && shortages.contains(&OfferingKey {
                instance_type: instance_type.to_string(),
                zone: zone.to_string(),
                capacity_type,
            })
        {
            return Some(false);
        }
        self.spot
            .outages
            .iter()
            .any(|o| o.covers(instance_type, zone, capacity_type, now))
            .then_some(true)
    }

    /// A node was launched: for a spot node, keep its facts and draw its
    /// hazard interruption.
    pub(super) fn spot_node_launched(
        &mut self,
        node: NodeId,
        pool_index: usize,
        decision: &LaunchDecision,
    ) -> Result<(), EngineError> {
        if decision.capacity_type != CapacityType::Spot {
            return Ok(());
        }
        let now = self.now();
        let instance_type =
            &self.autoscaler.kp().catalogs[pool_index].instance_types()[decision.instance_type];
        let band = instance_type
            .offerings
            .iter()
            .find(|o| o.zone == decision.zone && o.capacity_type == CapacityType::Spot)
            .and_then(|o| o.interruption_band);
        let facts = SpotNodeFacts {
            instance_type: instance_type.name().to_string(),
            zone: decision.zone.to_string(),
            band,
            on_demand_price: instance_type.on_demand_price,
            launched: now,
        };
        self.track_spot_node(node, facts)
    }

    /// A spot node was launched (by any provisioner): keep its facts and
    /// draw its hazard interruption.
    pub(super) fn track_spot_node(
        &mut self,
        node: NodeId,
        facts: SpotNodeFacts,
    ) -> Result<(), EngineError> {
        let now = self.now();
        let band = facts.band;
        let name = self.node_name(node);
        let drawn = self.spot.model.on_spot_launch(
            &SpotNode {
                name: &name,
                instance_type: &facts.instance_type,
                zone: &facts.zone,
                band,
                launched: now,
            },
            &mut self.spot.hazard_rng,
        );
        self.spot.nodes.insert(node, facts);
        let end = SimTime::ZERO + self.input.duration;
        if let Some(notice) = drawn
            && notice.timeline.notice <= end
        {
            if let Some(at) = notice.timeline.rebalance {
                self.schedule(at, Event::Spot(SpotSignal::Rebalance { node }))?;
            }
            self.schedule(
                notice.timeline.notice,
                Event::Spot(SpotSignal::Notice {
                    node,
                    reclaim_at: notice.timeline.reclaim,
                    cause: notice.cause,
                }),
            )?;
        }
        Ok(())
    }

    /// A storm or trace row comes due: victims get their signals now.
    pub(super) fn spot_trigger(&mut self, trigger: Trigger) -> Result<(), EngineError> {
        let now = self.now();
        let candidates: Vec<(NodeId, String)> = self
            .spot
            .nodes
            .keys()
            .filter(|id| !self.spot.interrupted.contains_key(id))
            .filter_map(|&id| self.cluster.node(id).map(|n| (id, n.name.clone())))
            .collect();
        let running: Vec<SpotNode<'_>> = candidates
            .iter()
            .map(|(id, name)| {
                let facts = &self.spot.nodes[id];
                SpotNode {
                    name,
                    instance_type: &facts.instance_type,
                    zone: &facts.zone,
                    band: facts.band,
                    launched: facts.launched,
                }
            })
            .collect();
        let firing = self
            .spot
            .model
            .fire(trigger, &running, &mut self.spot.victim_rng);
        drop(running);
        let (what, object) = match trigger.kind {
            TriggerKind::Storm(i) => ("storm", format!("interruptions/events[{i}]")),
            TriggerKind::Trace(i) => ("trace row", format!("interruptions/trace[{i}]")),
        };
        if let Some(skipped) = &firing.skipped {
            self.spot.counts.trace_rows_skipped += 1;
            self.log(
                EventType::Warning,
                "InterruptionSkipped",
                object.clone(),
                skipped.clone(),
            );
        }
        if let TriggerKind::Storm(_) = trigger.kind {
            let outage = firing.outage.as_ref().map_or(String::new(), |o| {
                format!("; matching spot offerings unavailable until {}", o.until)
            });
            self.log(
                EventType::Warning,
                "SpotCapacityStorm",
                object,
                format!(
                    "{what}: {} of {} running spot node(s) interrupted{outage}",
                    firing.notices.len(),
                    candidates.len()
                ),
            );
        }
        self.spot.outages.extend(firing.outage);
        let lead = self.spot.model.settings().rebalance_lead;
        for notice in firing.notices {
            let Some(&(node, _)) = candidates.iter().find(|(_, n)| *n == notice.node) else {
                continue;
            };
            if lead.is_some() {
                self.schedule(now, Event::Spot(SpotSignal::Rebalance { node }))?;
            }
            self.schedule(
                now,
                Event::Spot(SpotSignal::Notice {
                    node,
                    reclaim_at: notice.timeline.reclaim,
                    cause: notice.cause,
                }),
            )?;
        }
        Ok(())
    }

    /// EC2 sends a signal about a spot instance: the engine records what
    /// the cloud does, then the provisioner reacts.
    pub(super) fn spot_signal(&mut self, signal: SpotSignal) -> Result<(), EngineError> {
        match signal {
            SpotSignal::Rebalance { node } => {
                if self.cluster.node(node).is_none() || self.spot.interrupted.contains_key(&node) {
                    return Ok(());
                }
                self.spot.counts.rebalance_recommendations += 1;
            }
            SpotSignal::Notice {
                node,
                reclaim_at,
                cause,
            } => {
                if self.cluster.node(node).is_none() {
                    return Ok(());
                }
                if self.spot.interrupted.contains_key(&node) {
                    return Ok(());
                }
                let pods = self.running_workload_pods(node);
                let now = self.now();
                self.spot
                    .interrupted
                    .insert(node, Interrupted { notice: now, pods });
                *self
                    .spot
                    .counts
                    .interruptions_by_source
                    .entry(source_name(cause).to_string())
                    .or_default() += 1;
                self.schedule(reclaim_at, Event::SpotReclaim(node))?;
            }
        }
        self.on_spot_signal(signal)
    }

    /// The provisioner's reaction to a spot signal. Karpenter's native
    /// interruption handling (aws: pkg/controllers/interruption
    /// `actionForMessage`): rebalance recommendation → NoAction (an event);
    /// spot interruption warning → CordonAndDrain now, and the offering
    /// goes into the ICE cache for 3 minutes.
    pub(super) fn on_spot_signal(&mut self, signal: SpotSignal) -> Result<(), EngineError> {
        if self.autoscaler.ca().is_some() {
            return self.ca_on_spot_signal(signal);
        }
        match signal {
            SpotSignal::Rebalance { node } => {
                let name = self.node_name(node);
                self.log(
                    EventType::Normal,
                    "RebalanceRecommendation",
                    format!("nodeclaim/{name}"),
                    "EC2 rebalance recommendation; no action".to_string(),
                );
                Ok(())
            }
            SpotSignal::Notice {
                node,
                reclaim_at,
                cause,
            } => {
                let name = self.node_name(node);
                let source = match cause {
                    InterruptionCause::AdvisorHazard(band) => {
                        format!("advisor hazard, band {}", band.label())
                    }
                    InterruptionCause::Storm(i) => format!("storm interruptions.events[{i}]"),
                    InterruptionCause::Trace(row) => format!("trace {row}"),
                };
                self.log(
                    EventType::Warning,
                    "SpotInterrupted",
                    format!("nodeclaim/{name}"),
                    format!(
                        "Spot interruption warning ({source}); the instance is reclaimed at {reclaim_at}; deleting the NodeClaim"
                    ),
                );
                if let Some(facts) = self.spot.nodes.get(&node) {
                    let key = OfferingKey {
                        instance_type: facts.instance_type.clone(),
                        zone: facts.zone.clone(),
                        capacity_type: CapacityType::Spot,
                    };
                    self.cache_unavailable(key)?;
                }
                self.start_termination(node, INTERRUPTED)
            }
        }
    }

    /// Puts an offering in the ICE cache for 3 minutes (renewing it).
    fn cache_unavailable(&mut self, key: OfferingKey) -> Result<(), EngineError> {
        let expiry = self.now() + UNAVAILABLE_OFFERING_TTL;
        self.insert_ice(&key, expiry);
        self.schedule(expiry, Event::IceExpired(key))?;
        self.touch()
    }

    /// The non-DaemonSet pods on `node` that still run and are not being
    /// deleted: what an interruption disrupts.
    fn running_workload_pods(&self, node: NodeId) -> Vec<PodId> {
        self.cluster.node(node).map_or_else(Vec::new, |n| {
            n.pods
                .iter()
                .copied()
                .filter(|&p| {
                    self.cluster.pod(p).is_some_and(|p| {
                        !p.is_daemonset()
                            && !p.phase.is_terminal()
                            && p.lifecycle.deleting_since.is_none()
                    })
                })
                .collect()
        })
    }

    /// EC2 reclaims the instance: pods still running there are killed
    /// (their owners re-create them), billing stops, the node goes.
    pub(super) fn spot_reclaim(&mut self, node: NodeId) -> Result<(), EngineError> {
        let Some(n) = self.cluster.node(node) else {
            return Ok(());
        };
        let name = n.name.clone();
        let killed = self.running_workload_pods(node);
        for &pod in &killed {
            self.spot_pod_leaving(pod);
        }
        self.spot.counts.pods_killed_at_reclaim += killed.len() as u64;
        self.log(
            EventType::Warning,
            "SpotReclaimed",
            format!("nodeclaim/{name}"),
            format!(
                "EC2 reclaimed the spot instance; {} pod(s) still running were killed",
                killed.len()
            ),
        );
        if self.node_meta[node.0 as usize].deleting.is_none() {
            // A provisioner that ignored the notice: the NodeClaim goes
            // with its instance.
            self.start_termination(node, INTERRUPTED)?;
        }
        self.terminate_instance(node, "instance reclaimed by EC2")
    }

    /// A pod leaves a node (evicted, force-deleted or killed): if it was on
    /// an interrupted node at the notice, start measuring until its
    /// replacement runs.
    pub(super) fn spot_pod_leaving(&mut self, pod: PodId) {
        if self.spot.gap_of_pod.contains_key(&pod) {
            return;
        }
        let Some(node) = self.cluster.pod(pod).and_then(|p| p.node) else {
            return;
        };
        let Some(interrupted) = self.spot.interrupted.get(&node) else {
            return;
        };
        if !interrupted.pods.contains(&pod) {
            return;
        }
        let notice = interrupted.notice;
        let w = self.pod_meta[pod.0 as usize].workload;
        if self.owners.workloads[w].kind() == super::TargetKind::Pod {
            return;
        }
        let index = self.spot.gaps.len();
        self.spot.gaps.push(PodGap {
            workload: w,
            node,
            notice,
            stopped: None,
            replacement: None,
            running: None,
            dropped: None,
        });
        self.spot.gap_of_pod.insert(pod, index);
        self.spot
            .awaiting_replacement
            .entry(w)
            .or_default()
            .push_back(index);
    }

    /// A workload pod was created: the first one after an interrupted pod
    /// of the same owner left is its replacement.
    pub(super) fn spot_pod_created(&mut self, pod: PodId, w: usize) {
        let Some(queue) = self.spot.awaiting_replacement.get_mut(&w) else {
            return;
        };
        let Some(index) = queue.pop_front() else {
            return;
        };
        self.spot.gaps[index].replacement = Some(pod);
        self.spot.gap_of_replacement.insert(pod, index);
    }

    /// A pod was bound: a replacement runs.
    pub(super) fn spot_pod_bound(&mut self, pod: PodId, node: NodeId) {
        if let Some(&index) = self.spot.gap_of_replacement.get(&pod) {
            let gap = &mut self.spot.gaps[index];
            if gap.running.is_none() && gap.dropped.is_none() {
                gap.running = Some((self.queue.now(), node));
            }
        }
    }

    /// A pod left the cluster: an interrupted pod stopped running, or a
    /// replacement was removed before it ran (no longer wanted).
    pub(super) fn spot_pod_removed(&mut self, pod: PodId) {
        let now = self.now();
        if let Some(&index) = self.spot.gap_of_pod.get(&pod) {
            self.spot.gaps[index].stopped.get_or_insert(now);
        }
        if let Some(&index) = self.spot.gap_of_replacement.get(&pod) {
            let gap = &mut self.spot.gaps[index];
            if gap.running.is_none() {
                gap.dropped.get_or_insert(now);
            }
        }
    }
}
