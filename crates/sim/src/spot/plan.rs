//! Interruption plans over a fleet known in advance: which spot nodes exist
//! when is given by a [`SpotFleet`], and the model's three sources are
//! played against it in time order. This is what the engine does step by
//! step (where the fleet reacts to the interruptions with replacements); a
//! plan over a fixed fleet serves tests, and replays in which the node
//! timeline is an input (e.g. nodes taken from a real cluster's history).

use std::collections::BTreeSet;

use rand::Rng;

use super::interruptions::{
    InterruptionModel, InterruptionNotice, OfferingOutage, SpotNode, Trigger,
};
use crate::cloud::InterruptionBand;
use crate::time::{SimDuration, SimTime};

/// Which spot nodes exist when.
pub trait SpotFleet {
    /// Every spot node launched during the run, in launch order (time, then
    /// name).
    fn launches(&self) -> Vec<SpotNode<'_>>;
    /// The spot nodes running at `at` (launched at or before it, not yet
    /// gone), in any order.
    fn running_at(&self, at: SimTime) -> Vec<SpotNode<'_>>;
}

/// One spot node's life, for a fleet given as a list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FleetNode {
    /// Node name.
    pub name: String,
    /// Instance type.
    pub instance_type: String,
    /// Zone name.
    pub zone: String,
    /// Spot Advisor band of its offering.
    pub band: Option<InterruptionBand>,
    /// Launch time.
    pub launched: SimTime,
    /// When it goes away on its own (`None`: it outlives the run).
    pub ended: Option<SimTime>,
}

impl FleetNode {
    fn as_spot_node(&self) -> SpotNode<'_> {
        SpotNode {
            name: &self.name,
            instance_type: &self.instance_type,
            zone: &self.zone,
            band: self.band,
            launched: self.launched,
        }
    }
}

impl SpotFleet for [FleetNode] {
    fn launches(&self) -> Vec<SpotNode<'_>> {
        let mut nodes: Vec<SpotNode<'_>> = self.iter().map(FleetNode::as_spot_node).collect();
        nodes.sort_by_key(|node| (node.launched, node.name));
        nodes
    }

    fn running_at(&self, at: SimTime) -> Vec<SpotNode<'_>> {
        self.iter()
            .filter(|node| node.launched <= at && node.ended.is_none_or(|end| at < end))
            .map(FleetNode::as_spot_node)
            .collect()
    }
}

/// Everything the interruption sources do to a fleet during a run.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct InterruptionPlan {
    /// Notices by notice time, then node name; at most one per node, and
    /// only for nodes still running at their notice.
    pub notices: Vec<InterruptionNotice>,
    /// Offering outages, by start.
    pub outages: Vec<OfferingOutage>,
    /// Trace rows that found no node, one line each.
    pub skipped: Vec<String>,
}

impl InterruptionModel {
    /// Plays the model against `fleet` over `[0, duration)`: hazard draws
    /// at each launch, in launch order, from `hazard_rng`; storms and trace
    /// rows at their times over the nodes running then and not yet noticed,
    /// victims from `victim_rng`. At equal times hazard notices come first,
    /// then triggers in [`triggers`](Self::triggers) order. The fleet does
    /// not react: a noticed node only stops being a candidate.
    pub fn plan<F, H, V>(
        &self,
        duration: SimDuration,
        fleet: &F,
        hazard_rng: &mut H,
        victim_rng: &mut V,
    ) -> InterruptionPlan
    where
        F: SpotFleet + ?Sized,
        H: Rng + ?Sized,
        V: Rng + ?Sized,
    {
        let end = SimTime::ZERO + duration;
        // Events: (time, 0 = hazard notice / 1 = trigger, sequence).
        let mut events: Vec<(SimTime, u8, usize)> = Vec::new();
        let mut hazards: Vec<InterruptionNotice> = Vec::new();
        for node in fleet.launches().iter().filter(|n| n.launched < end) {
            if let Some(notice) = self.on_spot_launch(node, hazard_rng)
                && notice.timeline.notice < end
            {
                events.push((notice.timeline.notice, 0, hazards.len()));
                hazards.push(notice);
            }
        }
        let triggers: Vec<Trigger> = self.triggers().into_iter().filter(|t| t.at < end).collect();
        events.extend(triggers.iter().enumerate().map(|(i, t)| (t.at, 1, i)));
        events.sort();

        let mut plan = InterruptionPlan::default();
        let mut noticed: BTreeSet<String> = BTreeSet::new();
        for (at, class, index) in events {
            let running: Vec<SpotNode<'_>> = fleet
                .running_at(at)
                .into_iter()
                .filter(|node| !noticed.contains(node.name))
                .collect();
            let mut accepted = Vec::new();
            if class == 0 {
                let notice = &hazards[index];
                if running.iter().any(|node| node.name == notice.node) {
                    accepted.push(notice.clone());
                }
            } else {
                let firing = self.fire(triggers[index], &running, victim_rng);
                accepted = firing.notices;
                plan.outages.extend(firing.outage);
                plan.skipped.extend(firing.skipped);
            }
            for notice in accepted {
                noticed.insert(notice.node.clone());
                plan.notices.push(notice);
            }
        }
        plan.notices
            .sort_by(|a, b| (a.timeline.notice, &a.node).cmp(&(b.timeline.notice, &b.node)));
        plan
    }
}
