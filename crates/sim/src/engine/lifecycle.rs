//! The node lifecycle of a Karpenter NodeClaim (core:
//! pkg/controllers/nodeclaim/lifecycle, `launch.go`, `registration.go`,
//! `initialization.go`, `liveness.go`): launched, then registered, then
//! initialized.
//!
//! - **Registered**: the kubelet has joined, so the Node exists, but it is
//!   not Ready yet: it reports `Ready=False` and carries the node lifecycle
//!   controller's `node.kubernetes.io/not-ready:NoSchedule` taint, and the
//!   NodePool's startup taints are still on it. kube-scheduler binds only
//!   pods that tolerate all of them (as DaemonSets that tolerate every taint
//!   do); Karpenter's own scheduler ignores both kinds of taint on a node it
//!   manages that is not initialized, so it keeps nominating pods to it.
//! - **Initialized**: the node turns Ready (the taint goes) and the startup
//!   taints are removed; Karpenter labels it `karpenter.sh/initialized`.
//!   Its recorded `ready_at` is this instant. Only now is it a disruption
//!   candidate or a destination consolidation may move pods to.
//! - **Liveness**: a NodeClaim whose node has not registered
//!   [`REGISTRATION_TIMEOUT`] after launch is deleted
//!   ([`REGISTRATION_TIMEOUT_REASON`]); its pods are provisioned again on a
//!   new NodeClaim. Launches never hang half-way here (a CreateFleet call
//!   answers at once), so upstream's launch timeout has nothing to act on.
//!
//! Timing: one draw of the run's launch latency is the time from launch to
//! initialized (as it always was); the run's initialization delay is its
//! last part, so the node registers that long before it initializes (at
//! launch, when the draw is shorter than the delay). With no delay both
//! happen at one instant, as they do for Cluster Autoscaler nodes, whose
//! autoscaler counts a node as upcoming until it is Ready either way.
//!
//! A NodePool's launches may hang over a window of the run (the scenario's
//! `startupFailures`): the node never registers (the liveness timeout
//! deletes it), or registers and never turns Ready (it stays uninitialized
//! until node repair, with its gate on, replaces it).

use super::{Engine, EngineError, Event, EventType, StartupFailure, StartupFailureKind};
use crate::karpenter::node_repair::ConditionStatus;
use crate::kube::labels::{LABEL_NODE_INITIALIZED, LABEL_NODE_REGISTERED};
use crate::scheduler::NodeId;
use crate::time::{SimDuration, SimTime};

/// How long a launched NodeClaim may take to register its node before
/// Karpenter deletes it (core liveness.go `registrationTimeout`, 15 min
/// since v1.0; counted from the `Registered` condition's transition, which
/// is set when the NodeClaim is created, here its launch).
pub const REGISTRATION_TIMEOUT: SimDuration = SimDuration::from_mins(15);

/// The deletion reason of a NodeClaim that timed out before registering
/// (core liveness.go `registrationTimeoutReason`).
pub const REGISTRATION_TIMEOUT_REASON: &str = "registration_timeout";

/// The part of the launch latency between registration and
/// initialization when a scenario does not say (`nodeLaunchLatency`'s
/// `initialization`): the time the node takes to turn Ready once its
/// kubelet has joined (the CNI's DaemonSet starting) and its startup taints
/// to go. Karpenter has no such setting; this is karpsim's assumption.
pub const DEFAULT_NODE_INITIALIZATION: SimDuration = SimDuration::from_secs(10);

/// Launches of a NodePool that hang (a broken AMI, user data or bootstrap
/// script in its EC2NodeClass), over a window of the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodePoolStartupFailure {
    /// The NodePool whose launches hang; `None`: every NodePool.
    pub nodepool: Option<String>,
    /// When, and how the nodes hang.
    pub failure: StartupFailure,
}

impl Engine<'_> {
    /// How a launch of NodePool `pool` now hangs, if it does (the first
    /// listed failure that covers it).
    pub(super) fn launch_hangs(&self, pool: &str) -> Option<StartupFailureKind> {
        let now = self.now();
        self.input
            .startup_failures
            .iter()
            .find(|f| f.nodepool.as_deref().is_none_or(|p| p == pool) && f.failure.covers(now))
            .map(|f| f.failure.kind)
    }

    /// Schedules a Karpenter node's registration and initialization: one
    /// launch-latency draw from `from` to initialized, registration the
    /// initialization delay before; and the liveness check when the node
    /// would not register within [`REGISTRATION_TIMEOUT`] of `created_at`
    /// (a check of a node that registered in time finds nothing to do, so
    /// it is left out).
    pub(super) fn schedule_node_startup(
        &mut self,
        node: NodeId,
        from: SimTime,
        created_at: SimTime,
    ) -> Result<(), EngineError> {
        let hang = self.node_meta[node.0 as usize].hangs;
        let latency = self.input.launch_latency.sample(&mut self.latency_rng);
        let initialization = self.input.node_initialization.min(latency);
        let initialized_at = from + latency;
        let registered_at = from + (latency - initialization);
        match hang {
            Some(StartupFailureKind::Unregistered) => {}
            Some(StartupFailureKind::NotReady) => {
                self.schedule(registered_at, Event::NodeRegistered(node))?;
            }
            None if initialization.is_zero() => {
                self.schedule(initialized_at, Event::NodeReady(node))?;
            }
            None => {
                self.schedule(registered_at, Event::NodeRegistered(node))?;
                self.schedule(initialized_at, Event::NodeInitialized(node))?;
            }
        }
        let deadline = created_at + REGISTRATION_TIMEOUT;
        let registers = hang != Some(StartupFailureKind::Unregistered);
        if !registers || registered_at >= deadline {
            let at = deadline.max(self.now());
            self.schedule(at, Event::RegistrationTimeout(node))?;
        }
        Ok(())
    }

    /// The node registers: it exists, NotReady, its startup taints still
    /// on; DaemonSet pods that tolerate that bind.
    pub(super) fn node_registered(&mut self, node: NodeId) -> Result<(), EngineError> {
        if self.cluster.node(node).is_none_or(|n| n.registered) {
            return Ok(());
        }
        self.mark_registered(node);
        self.update_node_condition(node, "Ready", ConditionStatus::False)?;
        if self.node_meta[node.0 as usize].hangs == Some(StartupFailureKind::NotReady) {
            self.log_never_ready(node);
        }
        self.place_daemon_pods(node)?;
        self.wake_scheduler()?;
        self.touch()
    }

    /// The node initializes: Ready, startup taints removed; pods may bind.
    pub(super) fn node_initialized(&mut self, node: NodeId) -> Result<(), EngineError> {
        if self
            .cluster
            .node(node)
            .is_none_or(|n| !n.registered || n.initialized)
        {
            return Ok(());
        }
        self.update_node_condition(node, "Ready", ConditionStatus::True)?;
        self.mark_initialized(node);
        self.place_daemon_pods(node)?;
        self.wake_scheduler()?;
        self.touch()?;
        self.replacement_initialized(node)
    }

    /// The node registers and initializes at one instant (no
    /// initialization delay, and every Cluster Autoscaler node); a
    /// Cluster Autoscaler instance that hangs NotReady only registers.
    pub(super) fn node_ready(&mut self, node: NodeId) -> Result<(), EngineError> {
        if self.cluster.node(node).is_none_or(|n| n.registered) {
            return Ok(());
        }
        if self.ca_registers_not_ready(node) {
            return self.touch();
        }
        self.mark_registered(node);
        self.mark_initialized(node);
        self.place_daemon_pods(node)?;
        self.wake_scheduler()?;
        self.touch()?;
        self.replacement_initialized(node)
    }

    /// Karpenter's liveness check: a NodeClaim whose node has not
    /// registered by now is deleted, and its pods go back to provisioning.
    pub(super) fn registration_timeout(&mut self, node: NodeId) -> Result<(), EngineError> {
        let Some(n) = self.cluster.node(node) else {
            return Ok(());
        };
        if n.registered || self.node_meta[node.0 as usize].deleting.is_some() {
            return Ok(());
        }
        let name = n.name.clone();
        self.log(
            EventType::Warning,
            "RegistrationTimeout",
            format!("nodeclaim/{name}"),
            format!(
                "Node did not register within {REGISTRATION_TIMEOUT} of launch; terminating due to timeout ({REGISTRATION_TIMEOUT_REASON})"
            ),
        );
        self.start_termination(node, REGISTRATION_TIMEOUT_REASON)
    }

    /// The Node object joins: `Registered` and its label.
    /// The event of a node that registered but whose kubelet never reports
    /// Ready (a hanging launch, Karpenter's or the Cluster Autoscaler's).
    pub(super) fn log_never_ready(&mut self, node: NodeId) {
        let name = self.node_name(node);
        self.log(
            EventType::Warning,
            "NodeNotReady",
            format!("node/{name}"),
            "Node registered but its kubelet never reports Ready".to_string(),
        );
    }

    fn mark_registered(&mut self, node: NodeId) {
        let now = self.now();
        let Some(n) = self.cluster.node_mut(node) else {
            return;
        };
        n.registered = true;
        n.labels.insert(LABEL_NODE_REGISTERED, "true");
        let name = n.name.clone();
        let latency = now.saturating_duration_since(n.created_at);
        self.log(
            EventType::Normal,
            "Registered",
            format!("nodeclaim/{name}"),
            format!("Status condition transitioned, Type: Registered, Status: True ({latency} after launch)"),
        );
    }

    /// `Initialized`: startup taints gone, labelled, `ready_at` recorded.
    fn mark_initialized(&mut self, node: NodeId) {
        self.mark_unconsolidated();
        let now = self.now();
        let Some(n) = self.cluster.node_mut(node) else {
            return;
        };
        n.initialized = true;
        if let Some(claim) = &n.claim {
            let startup = &claim.startup_taints;
            n.taints.retain(|t| !startup.iter().any(|s| s.matches(t)));
        }
        n.labels.insert(LABEL_NODE_INITIALIZED, "true");
        if let Some(claim) = n.claim.as_mut() {
            claim.lifecycle.initialized_at = Some(now);
        }
        let name = n.name.clone();
        self.node_meta[node.0 as usize].ready_at = Some(now);
        self.log(
            EventType::Normal,
            "Initialized",
            format!("nodeclaim/{name}"),
            "Status condition transitioned, Type: Initialized, Status: True".to_string(),
        );
    }
}
