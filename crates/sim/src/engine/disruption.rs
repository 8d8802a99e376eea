//! Karpenter's disruption controller around its decision function
//! ([`crate::karpenter::disruption::controller::next_command`]), its
//! orchestration queue (core: pkg/controllers/disruption/controller.go,
//! queue.go), NodeClaim expiration (nodeclaim/expiration) and the reaction
//! to a NodePool change (drift; nodeclaim/disruption/drift.go).
//!
//! Cadence: a pass every [`POLLING_PERIOD`] (10 s), and at once after a
//! pass that started a command. A command that needs validation holds the
//! controller for [`COMMAND_VALIDATION_DELAY`] (15 s, as upstream's pass
//! blocks), is then re-checked with `validate` and dropped (with an event)
//! if it fails; the next pass comes 10 s later then.
//!
//! The controller keeps the cluster's consolidation state (core:
//! state/cluster.go `MarkUnconsolidated`, `ConsolidationState`): the last
//! time the cluster changed in one of the ways upstream's cluster state
//! marks — a pod bound or deleted, a NodeClaim launched, initialized,
//! deleted or starting to terminate, the NodePools replaced — renewed
//! when a pass reads it [`CONSOLIDATION_STATE_RESET`] (5 min) later. A
//! pending pod created, a pod that finished or began terminating, a node
//! registering, a `consolidateAfter` window or nomination running out, an
//! offering going unavailable or a spot price change do not mark it, as
//! upstream's do not. Each consolidation method skips the passes that see
//! the state it last found nothing at (see
//! `karpenter::disruption::controller::Disruption::mark_consolidated`).
//!
//! Executing a command (reference §4.8): taint the candidates
//! `karpenter.sh/disrupted:NoSchedule`, launch the replacements (a failure
//! aborts and un-taints), mark the candidates for deletion, wait until
//! every replacement is initialized (at most [`REPLACEMENT_TIMEOUT`], then
//! the command fails and the candidates are un-tainted), then delete the
//! candidates (see [`super::termination`]). A replacement that fails to
//! launch is not cleaned up (it is an empty node the next passes remove).
//!
//! Drift: a `NodePools` step replaces the NodePools at once, and every
//! node is checked against its pool then (upstream's NodeClaim disruption
//! controller watches NodePools, so a change is evaluated immediately; its
//! 5-minute requeue matters only for cloud-provider drift, which karpsim
//! does not model). NodeClaims of a NodePool that is gone are deleted, as
//! Kubernetes garbage collection does through their owner reference.

use std::collections::{BTreeMap, BTreeSet};

use super::{Engine, EngineError, Event, EventType, PoolSetup, restrict_zones};
use crate::cluster::DriftedCondition;
use crate::karpenter::disruption::controller::{
    Command, Disruption, DisruptionInput, DisruptionOptions,
};
use crate::karpenter::disruption::drift::{drift_reason, expiration_time};
use crate::karpenter::disruption::reasons::Unconsolidatable;
use crate::karpenter::disruption::{
    COMMAND_VALIDATION_DELAY, CONSOLIDATION_STATE_RESET, POLLING_PERIOD,
};
use crate::karpenter::provisioning::Provisioner;
use crate::kube::resources::ResourceKind;
use crate::nodepool::DisruptionReason;
use crate::pdb::ControllerScales;
use crate::scheduler::{NodeId, OwnerKind};
use crate::time::{SimDuration, SimTime};

/// How long a command waits for its replacements to initialize (upstream's
/// retry window is clamp(80 ms × commands, 10 min, 1 h); karpsim keeps the
/// floor).
pub const REPLACEMENT_TIMEOUT: SimDuration = SimDuration::from_mins(10);

/// A command whose replacements are starting.
#[derive(Debug, Clone)]
struct Running {
    command: Command,
    replacements: Vec<NodeId>,
}

/// The disruption controller's state.
#[derive(Debug, Default)]
pub(crate) struct DisruptionState {
    /// The next pass, if one is scheduled.
    next_pass: Option<SimTime>,
    /// The command waiting for its validation.
    validating: Option<Command>,
    /// Commands waiting for their replacements, by id.
    running: BTreeMap<u64, Running>,
    next_id: u64,
    /// Candidates of started commands not yet deleted.
    pub in_flight: BTreeSet<NodeId>,
    /// The cluster's consolidation state: when it last changed in a way
    /// upstream's cluster state marks (see the module docs).
    consolidation_state: SimTime,
    /// Per node: the last reason it was not disrupted that an event
    /// published, with its time (what `kubectl describe node` would show).
    pub notes: BTreeMap<NodeId, (SimTime, String)>,
    /// The disruption controller (its options, candidate facts and event
    /// recorder memory).
    decider: Disruption,
}

impl DisruptionState {
    /// A controller that decides with `options`.
    pub(crate) fn new(options: DisruptionOptions) -> DisruptionState {
        DisruptionState {
            decider: Disruption::new(options),
            ..DisruptionState::default()
        }
    }
}

impl Engine<'_> {
    /// Desired replicas of the scalable workloads (for PDB percentages;
    /// none when there is no PDB).
    pub(super) fn controller_scales(&self) -> ControllerScales {
        let mut scales = ControllerScales::default();
        // Only PDBs read them (often, on every eviction and pass).
        if self.cluster.pdbs.is_empty() {
            return scales;
        }
        let scalable = self
            .owners
            .scalable_workloads
            .iter()
            .map(|&w| &self.owners.workloads[w]);
        for w in scalable.filter(|w| !w.deleted) {
            let kind = match w.kind() {
                super::TargetKind::Deployment => OwnerKind::Deployment,
                super::TargetKind::ReplicaSet => OwnerKind::ReplicaSet,
                super::TargetKind::StatefulSet => OwnerKind::StatefulSet,
                _ => continue,
            };
            scales.insert(w.namespace(), kind, w.name(), w.desired);
        }
        scales
    }

    /// Schedules a pass at `at` unless one is due earlier.
    pub(super) fn schedule_pass(&mut self, at: SimTime) -> Result<(), EngineError> {
        if self
            .autoscaler
            .kp()
            .disruption
            .next_pass
            .is_some_and(|t| t <= at)
        {
            return Ok(());
        }
        self.autoscaler.kp_mut().disruption.next_pass = Some(at);
        self.schedule(at, Event::DisruptionPass)
    }

    /// Calls `f` with the decision input of this instant, the disruption
    /// controller and the provisioner.
    pub(super) fn with_input<T>(
        &self,
        f: impl FnOnce(&DisruptionInput<'_>, &Disruption, &Provisioner) -> T,
    ) -> T {
        let contexts = self.autoscaler.kp().contexts();
        let daemonsets = self.daemonset_templates();
        let scales = self.controller_scales();
        let pending: Vec<crate::scheduler::PodId> = self
            .cluster
            .pending_pods()
            .filter(|(_, p)| !p.is_daemonset())
            .map(|(id, _)| id)
            .collect();
        let input = DisruptionInput {
            cluster: &self.cluster,
            nodepools: &contexts,
            daemonsets: &daemonsets,
            scales: &scales,
            pending: &pending,
            in_flight: &self.autoscaler.kp().disruption.in_flight,
            node_count_resource: self.autoscaler.kp().node_count_resource,
            now: self.now(),
            consolidation_state: Some(self.autoscaler.kp().disruption.consolidation_state),
        };
        let karpenter = self.autoscaler.kp();
        f(
            &input,
            &karpenter.disruption.decider,
            &karpenter.provisioner,
        )
    }

    /// Something changed that may let a node be consolidated (upstream
    /// `MarkUnconsolidated`).
    pub(super) fn mark_unconsolidated(&mut self) {
        let now = self.now();
        if let Some(karpenter) = self.autoscaler.karpenter_mut() {
            karpenter.disruption.consolidation_state = now;
        }
    }

    /// The consolidation state a pass sees now, renewed if it is
    /// [`CONSOLIDATION_STATE_RESET`] old (upstream `ConsolidationState`).
    fn read_consolidation_state(&mut self) -> SimTime {
        let now = self.now();
        let state = &mut self.autoscaler.kp_mut().disruption.consolidation_state;
        if now.saturating_duration_since(*state) >= CONSOLIDATION_STATE_RESET {
            *state = now;
        }
        *state
    }

    /// One pass of the disruption controller.
    pub(super) fn disruption_pass(&mut self) -> Result<(), EngineError> {
        let now = self.now();
        if self.autoscaler.kp().disruption.next_pass != Some(now) {
            return Ok(());
        }
        self.autoscaler.kp_mut().disruption.next_pass = None;
        if self.autoscaler.kp().disruption.validating.is_some() {
            return Ok(());
        }
        let state = self.read_consolidation_state();
        let next_command = self.deciders.next_command;
        let outcome = self
            .with_input(|input, decider, provisioner| next_command(decider, input, provisioner));
        // The controller's recorder says which messages are news.
        let karpenter = self.autoscaler.kp_mut();
        karpenter
            .disruption
            .decider
            .mark_consolidated(&outcome.consolidated, state);
        let published = karpenter.disruption.decider.publish(
            &self.cluster,
            &karpenter.disruption.in_flight,
            now,
            outcome.unconsolidatable,
        );
        for (node, reason) in published {
            self.note_unconsolidatable(node, reason);
        }
        match outcome.command {
            Some(command) if command.needs_validation => {
                self.autoscaler.kp_mut().disruption.validating = Some(command);
                self.schedule(now + COMMAND_VALIDATION_DELAY, Event::ValidateCommand)
            }
            Some(command) => {
                let started = self.start_command(command)?;
                let next = if started { now } else { now + POLLING_PERIOD };
                self.schedule_pass(next)
            }
            None => self.schedule_pass(now + POLLING_PERIOD),
        }
    }

    /// Records why a node was not disrupted (for `disruption.csv`) and logs
    /// an event when the reason differs from the last one published for
    /// the node.
    pub(super) fn note(&mut self, node: NodeId, event: &str, reason: String) {
        let now = self.now();
        let changed = self
            .autoscaler
            .kp()
            .disruption
            .notes
            .get(&node)
            .is_none_or(|(_, last)| *last != reason);
        if changed {
            let name = self.node_name(node);
            self.log(
                EventType::Normal,
                event,
                format!("node/{name}"),
                reason.clone(),
            );
        }
        self.autoscaler
            .kp_mut()
            .disruption
            .notes
            .insert(node, (now, reason));
    }

    /// Logs an `Unconsolidatable` event the disruption controller's
    /// recorder published, and keeps it for `disruption.csv` (a dropped
    /// reason is never seen).
    fn note_unconsolidatable(&mut self, node: NodeId, reason: Unconsolidatable) {
        let now = self.now();
        let reason = reason.to_string();
        let name = self.node_name(node);
        self.log(
            EventType::Normal,
            "Unconsolidatable",
            format!("node/{name}"),
            reason.clone(),
        );
        self.autoscaler
            .kp_mut()
            .disruption
            .notes
            .insert(node, (now, reason));
    }

    /// The validation delay is over: re-check the waiting command.
    pub(super) fn validate_command(&mut self) -> Result<(), EngineError> {
        let now = self.now();
        let Some(command) = self.autoscaler.kp_mut().disruption.validating.take() else {
            return Ok(());
        };
        let validate = self.deciders.validate;
        match self.with_input(|input, decider, provisioner| {
            validate(decider, input, provisioner, &command)
        }) {
            Ok(()) => {
                let started = self.start_command(command)?;
                let next = if started { now } else { now + POLLING_PERIOD };
                self.schedule_pass(next)
            }
            Err(reason) => {
                for &node in &command.candidates {
                    if self.cluster.node(node).is_some() {
                        self.note(
                            node,
                            "DisruptionBlocked",
                            format!("command abandoned after validation: {reason}"),
                        );
                    }
                }
                self.record.churn.commands_failed += 1;
                self.schedule_pass(now + POLLING_PERIOD)
            }
        }
    }

    /// Starts a command; `false` if it could not start.
    pub(super) fn start_command(&mut self, command: Command) -> Result<bool, EngineError> {
        let reason = command.reason.name();
        let candidates: Vec<NodeId> = command
            .candidates
            .iter()
            .copied()
            .filter(|&n| {
                self.cluster.node(n).is_some_and(|n| !n.marked_for_deletion)
                    && !self.autoscaler.kp().disruption.in_flight.contains(&n)
            })
            .collect();
        if candidates.is_empty() {
            return Ok(false);
        }
        for &node in &candidates {
            self.taint_disrupted(node);
        }
        let mut replacements = Vec::new();
        for claim in &command.replacements {
            match self.launch(claim, reason)? {
                Some(node) => {
                    let name = self.node_name(node);
                    self.log(
                        EventType::Normal,
                        "DisruptionLaunching",
                        format!("nodeclaim/{name}"),
                        format!("Launching NodeClaim: {}", command.explanation),
                    );
                    replacements.push(node);
                }
                None => {
                    for &node in &candidates {
                        self.untaint_disrupted(node);
                        self.note(
                            node,
                            "DisruptionBlocked",
                            "command aborted: a replacement NodeClaim failed to launch".to_string(),
                        );
                    }
                    self.record.churn.commands_failed += 1;
                    return Ok(false);
                }
            }
        }
        let nominated_until = self.now() + crate::karpenter::disruption::NOMINATION_WINDOW;
        for &node in &replacements {
            if let Some(claim) = self.cluster.node_mut(node).and_then(|n| n.claim.as_mut()) {
                claim.lifecycle.nominated_until = Some(nominated_until);
            }
        }
        for &node in &candidates {
            if let Some(n) = self.cluster.node_mut(node) {
                n.marked_for_deletion = true;
            }
            self.autoscaler.kp_mut().disruption.in_flight.insert(node);
            let name = self.node_name(node);
            self.log(
                EventType::Normal,
                "DisruptionTerminating",
                format!("node/{name}"),
                format!("Disrupting Node: {}", command.explanation),
            );
        }
        *self
            .record
            .churn
            .commands_by_method
            .entry(command.method.name().to_string())
            .or_default() += 1;
        let id = self.autoscaler.kp().disruption.next_id;
        self.autoscaler.kp_mut().disruption.next_id += 1;
        let mut command = command;
        command.candidates = candidates;
        let waiting = !replacements.is_empty();
        self.autoscaler.kp_mut().disruption.running.insert(
            id,
            Running {
                command,
                replacements,
            },
        );
        let pods = self.deleting_node_pods();
        self.touch()?;
        self.trigger_batch(&pods)?;
        if waiting {
            let at = self.now() + REPLACEMENT_TIMEOUT;
            self.schedule(at, Event::CommandTimeout(id))?;
        } else {
            self.finish_command(id)?;
        }
        Ok(true)
    }

    /// A node initialized: commands waiting only for it may proceed.
    pub(super) fn replacement_initialized(&mut self, node: NodeId) -> Result<(), EngineError> {
        let Some(karpenter) = self.autoscaler.karpenter() else {
            return Ok(());
        };
        let ready: Vec<u64> = karpenter
            .disruption
            .running
            .iter()
            .filter(|(_, r)| r.replacements.contains(&node))
            .filter(|(_, r)| {
                r.replacements
                    .iter()
                    .all(|&n| self.cluster.node(n).is_some_and(|n| n.initialized))
            })
            .map(|(id, _)| *id)
            .collect();
        for id in ready {
            self.finish_command(id)?;
        }
        Ok(())
    }

    /// A node was terminated: commands waiting for it as a replacement fail.
    pub(super) fn replacement_lost(&mut self, node: NodeId) -> Result<(), EngineError> {
        let Some(karpenter) = self.autoscaler.karpenter() else {
            return Ok(());
        };
        let lost: Vec<u64> = karpenter
            .disruption
            .running
            .iter()
            .filter(|(_, r)| r.replacements.contains(&node))
            .map(|(id, _)| *id)
            .collect();
        for id in lost {
            self.fail_command(id, "a replacement node was deleted before it initialized")?;
        }
        Ok(())
    }

    /// Every replacement is initialized: delete the candidates.
    fn finish_command(&mut self, id: u64) -> Result<(), EngineError> {
        let Some(running) = self.autoscaler.kp_mut().disruption.running.remove(&id) else {
            return Ok(());
        };
        let command = running.command;
        let reason = command.reason.name();
        for &node in &command.candidates {
            self.autoscaler.kp_mut().disruption.in_flight.remove(&node);
            self.start_termination(node, reason)?;
        }
        if matches!(
            command.reason,
            DisruptionReason::Empty | DisruptionReason::Underutilized
        ) {
            let rate = command.estimated_savings;
            self.record.churn.consolidation_savings_per_hour += rate;
            let left = (SimTime::ZERO + self.input.duration).saturating_duration_since(self.now());
            let micros = i128::from(rate.micros()) * i128::from(left.as_millis()) / 3_600_000;
            self.record.churn.consolidation_savings.0 += i64::try_from(micros).unwrap_or(i64::MAX);
        }
        Ok(())
    }

    /// The command's replacements did not initialize in time.
    pub(super) fn command_timeout(&mut self, id: u64) -> Result<(), EngineError> {
        self.fail_command(id, "replacement nodes did not initialize within 10m0s")
    }

    fn fail_command(&mut self, id: u64, why: &str) -> Result<(), EngineError> {
        let Some(running) = self.autoscaler.kp_mut().disruption.running.remove(&id) else {
            return Ok(());
        };
        self.record.churn.commands_failed += 1;
        for &node in &running.command.candidates {
            self.autoscaler.kp_mut().disruption.in_flight.remove(&node);
            if self.cluster.node(node).is_some() {
                self.untaint_disrupted(node);
                self.note(node, "DisruptionBlocked", format!("command failed: {why}"));
                if self.is_static_node(node) {
                    // Active again: the pool may be over its replicas.
                    self.static_reconcile_soon()?;
                }
            }
        }
        self.touch()
    }

    /// `expireAfter` reached: the NodeClaim is deleted, whatever the
    /// budgets say.
    pub(super) fn expire(&mut self, node: NodeId) -> Result<(), EngineError> {
        let now = self.now();
        let due = self
            .cluster
            .node(node)
            .and_then(expiration_time)
            .is_some_and(|t| t <= now);
        if due {
            self.start_termination(node, "expired")?;
        }
        Ok(())
    }

    /// A NodePool change: new pools and catalogs from now on; nodes whose
    /// pool changed get (or lose) the Drifted condition; NodeClaims of
    /// removed pools are deleted.
    pub(super) fn replace_nodepools(
        &mut self,
        nodepools: &[PoolSetup],
        node_count_resource: Option<ResourceKind>,
    ) -> Result<(), EngineError> {
        let now = self.now();
        // NodePools are Karpenter's: a Cluster Autoscaler variant keeps its
        // node groups.
        let Some(karpenter) = self.autoscaler.karpenter_mut() else {
            return Ok(());
        };
        karpenter.pools = nodepools.to_vec();
        karpenter.node_count_resource = node_count_resource;
        karpenter.base_catalogs = karpenter
            .pools
            .iter()
            .map(|setup| restrict_zones(&setup.catalog, &self.input.zones))
            .collect();
        self.apply_spot_prices_in_force();
        self.apply_reservations_in_force();
        self.rebuild_catalogs();
        self.record
            .bound
            .set_launchable(crate::lower_bound::nodepool_types(
                &self.autoscaler.kp().pools,
                &self.autoscaler.kp().base_catalogs,
            ));
        self.refresh_reservable();
        let names: Vec<String> = self
            .autoscaler
            .kp()
            .pools
            .iter()
            .map(|p| p.pool.name.clone())
            .collect();
        self.log(
            EventType::Normal,
            "NodePoolsReplaced",
            "nodepools".to_string(),
            format!("NodePools now: {}", names.join(", ")),
        );
        let nodes: Vec<NodeId> = self.cluster.nodes().map(|(id, _)| id).collect();
        let mut orphaned = Vec::new();
        for id in nodes {
            let Some(node) = self.cluster.node(id) else {
                continue;
            };
            let Some(pool_name) = node.nodepool() else {
                continue;
            };
            let Some(setup) = self
                .autoscaler
                .kp()
                .pools
                .iter()
                .find(|p| p.pool.name == pool_name)
            else {
                orphaned.push(id);
                continue;
            };
            let reason = drift_reason(&setup.pool, node);
            let name = node.name.clone();
            let Some(claim) = self.cluster.node_mut(id).and_then(|n| n.claim.as_mut()) else {
                continue;
            };
            match reason {
                Some(reason) if claim.lifecycle.drifted.is_none() => {
                    claim.lifecycle.drifted = Some(DriftedCondition {
                        reason: reason.as_str().to_string(),
                        since: now,
                    });
                    self.log(
                        EventType::Normal,
                        "Drifted",
                        format!("nodeclaim/{name}"),
                        format!("Status condition transitioned, Type: Drifted, Status: True, Reason: {}", reason.as_str()),
                    );
                }
                None => claim.lifecycle.drifted = None,
                Some(_) => {}
            }
        }
        for id in orphaned {
            self.start_termination(id, "nodepool-deleted")?;
        }
        self.static_reconcile_soon()?;
        self.mark_unconsolidated();
        self.touch()
    }
}
