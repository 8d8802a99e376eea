//! Where a run's wall time goes, per engine component (`karpsim run
//! --profile`). Time is measured around each event the engine handles and
//! charged to the component that event belongs to; the run's decisions and
//! outputs never see it. A run without profiling takes no clock readings.

use std::time::{Duration, Instant};

use super::Event;

/// The engine's components, as reported by `--profile`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Component {
    /// Workload steps, generators, traces, pods finishing and owner
    /// controllers re-creating pods.
    Workload,
    /// kube-scheduler binding pending pods to nodes.
    Scheduler,
    /// Karpenter's batcher, solve and launches, nodes registering, the ICE
    /// cache.
    Provisioning,
    /// Karpenter's disruption controller, expiry and the termination
    /// controller's drains and evictions.
    Disruption,
    /// Spot prices, interruption signals and reclaims.
    Spot,
    /// Cluster Autoscaler loops.
    ClusterAutoscaler,
    /// Per-minute samples and utilization integrals.
    Sampling,
}

impl Component {
    /// Every component, in report order.
    pub const ALL: [Component; 7] = [
        Component::Workload,
        Component::Scheduler,
        Component::Provisioning,
        Component::Disruption,
        Component::Spot,
        Component::ClusterAutoscaler,
        Component::Sampling,
    ];

    /// Name shown in the profile table.
    pub fn name(self) -> &'static str {
        match self {
            Component::Workload => "workload",
            Component::Scheduler => "scheduler",
            Component::Provisioning => "provisioning",
            Component::Disruption => "disruption",
            Component::Spot => "spot",
            Component::ClusterAutoscaler => "cluster-autoscaler",
            Component::Sampling => "sampling",
        }
    }

    pub(super) fn of(event: &Event) -> Component {
        match event {
            Event::Step(_) | Event::SourceStep(_) | Event::PodDone(_) | Event::JobDeadline(_) => {
                Component::Workload
            }
            Event::SchedulerRun => Component::Scheduler,
            Event::BatchCheck
            | Event::Requeue
            | Event::NodeReady(_)
            | Event::NodeRegistered(_)
            | Event::NodeInitialized(_)
            | Event::RegistrationTimeout(_)
            | Event::IceExpired(_)
            | Event::ReservationExpiring(_)
            | Event::ReservationEnd(_)
            | Event::StaticReconcile => Component::Provisioning,
            Event::DisruptionPass
            | Event::ValidateCommand
            | Event::CommandTimeout(_)
            | Event::Expire(_)
            | Event::DrainTick(_)
            | Event::Evict(_)
            | Event::PodGone(_)
            | Event::RepairCheck(_) => Component::Disruption,
            Event::SpotPrices(_)
            | Event::SpotTrigger(_)
            | Event::Spot(_)
            | Event::SpotReclaim(_) => Component::Spot,
            Event::CaLoop => Component::ClusterAutoscaler,
            Event::Export => Component::Sampling,
        }
    }
}

/// Wall time and event count per component of one run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Profile {
    /// Indexed like [`Component::ALL`].
    time: [Duration; 7],
    events: [u64; 7],
}

impl Profile {
    /// Charges `elapsed` (and one event) to `component`.
    pub fn charge(&mut self, component: Component, elapsed: Duration) {
        let slot = component as usize;
        self.time[slot] += elapsed;
        self.events[slot] += 1;
    }

    /// Wall time spent in `component`.
    pub fn time(&self, component: Component) -> Duration {
        self.time[component as usize]
    }

    /// Events (or sampling steps) handled by `component`.
    pub fn events(&self, component: Component) -> u64 {
        self.events[component as usize]
    }

    /// Adds another run's profile to this one.
    pub fn merge(&mut self, other: &Profile) {
        for slot in 0..self.time.len() {
            self.time[slot] += other.time[slot];
            self.events[slot] += other.events[slot];
        }
    }
}

/// Measures one piece of work when profiling is on: `None` takes no clock
/// reading.
pub(super) fn start(profile: &Option<Profile>) -> Option<Instant> {
    profile.as_ref().map(|_| Instant::now())
}

/// Charges the time since `started` to `component`.
pub(super) fn stop(profile: &mut Option<Profile>, component: Component, started: Option<Instant>) {
    if let (Some(profile), Some(started)) = (profile.as_mut(), started) {
        profile.charge(component, started.elapsed());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Charges land in their component's slot and merge adds slot by slot.
    #[test]
    fn charges_and_merges_per_component() {
        let mut a = Profile::default();
        a.charge(Component::Scheduler, Duration::from_millis(3));
        a.charge(Component::Scheduler, Duration::from_millis(2));
        a.charge(Component::Spot, Duration::from_millis(7));
        assert_eq!(a.time(Component::Scheduler), Duration::from_millis(5));
        assert_eq!(a.events(Component::Scheduler), 2);
        assert_eq!(a.events(Component::Disruption), 0);
        let mut b = Profile::default();
        b.charge(Component::Spot, Duration::from_millis(1));
        b.merge(&a);
        assert_eq!(b.time(Component::Spot), Duration::from_millis(8));
        assert_eq!(b.events(Component::Spot), 2);
        assert_eq!(b.time(Component::Scheduler), Duration::from_millis(5));
    }

    /// Without a profile no clock is read and nothing is charged.
    #[test]
    fn off_takes_no_reading() {
        let mut off: Option<Profile> = None;
        let started = start(&off);
        assert!(started.is_none());
        stop(&mut off, Component::Workload, started);
        assert!(off.is_none());
    }
}
