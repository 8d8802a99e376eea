//! The controllers around the decision functions: the kube-scheduler pass,
//! Karpenter's batcher and requeue, turning a solve into NodeClaims, launch
//! (one CreateFleet request per NodeClaim, with insufficient-capacity
//! failures and the ICE cache); the node's start is [`super::lifecycle`]'s.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use super::{
    Batch, Engine, EngineError, Event, EventType, KarpenterState, OfferingKey,
    PROVISIONING_REQUEUE, UNAVAILABLE_OFFERING_TTL, recorders,
};
use crate::karpenter::disruption::NOMINATION_WINDOW;
use crate::karpenter::disruption::drift::{expiration_time, launch_lifecycle};
use crate::karpenter::provisioning::{
    FleetOverride, LaunchDecision, NewNodeClaim, ProvisioningInput,
};
use crate::kube::labels::{
    LABEL_CAPACITY_RESERVATION_ID, LABEL_CAPACITY_RESERVATION_TYPE, LABEL_CAPACITY_TYPE,
    LABEL_EC2_NODECLASS, LABEL_HOSTNAME, LABEL_NODEPOOL, LABEL_TOPOLOGY_ZONE,
    LABEL_TOPOLOGY_ZONE_ID, Labels,
};
use crate::scheduler::kube_scheduler::Decision;
use crate::scheduler::{Node, NodeClaimInfo, NodeId, PodId};

impl Engine<'_> {
    /// One kube-scheduler pass over every pending (non-DaemonSet) pod.
    pub(super) fn run_scheduler(&mut self) -> Result<(), EngineError> {
        self.scheduler.queued = false;
        let maybe_pending = self.cluster.pending_pods();
        let mut pending: Vec<PodId> = Vec::with_capacity(maybe_pending.size_hint().1.unwrap_or(0));
        pending.extend(
            maybe_pending
                .filter(|(_, p)| !p.is_daemonset())
                .map(|(id, _)| id),
        );
        if pending.is_empty() {
            return Ok(());
        }
        let decisions =
            (self.deciders.schedule)(&mut self.scheduler.kube_scheduler, &self.cluster, &pending);
        let mut newly_unschedulable = Vec::new();
        let mut bound_any = false;
        for decision in decisions {
            match decision {
                Decision::Bind(pod, node) => {
                    self.bind_pod(pod, node)?;
                    bound_any = true;
                }
                Decision::Unschedulable(pod, reason) => {
                    let Some(p) = self.cluster.pod(pod) else {
                        continue;
                    };
                    // Most are retries of pods already marked: the pod is
                    // written (which files it as maybe pending) only to mark.
                    if !p.unschedulable
                        && let Some(p) = self.cluster.pod_mut(pod)
                    {
                        p.unschedulable = true;
                        newly_unschedulable.push(pod);
                    }
                    self.note_pending_reason(pod, reason);
                }
            }
        }
        if bound_any {
            self.touch()?;
        }
        self.trigger_batch(&newly_unschedulable)
    }

    /// Records why kube-scheduler could not place a pod (its
    /// `PodScheduled` condition) and logs a `FailedScheduling` event
    /// unless the attempt only counts up the pod's open event series
    /// ([`super::recorders::opens_new_event`]).
    fn note_pending_reason(&mut self, pod: PodId, reason: Arc<str>) {
        let now = self.now();
        let attempts = self.attempts.entry(pod).or_default();
        let new_event = recorders::opens_new_event(attempts.failed_scheduling_observed, now);
        attempts.failed_scheduling_observed = Some(now);
        let logged = new_event.then(|| reason.clone());
        attempts.last_reason = Some(reason);
        if let Some(reason) = logged {
            self.log_failed_scheduling(pod, &reason);
        }
    }

    /// Records why Karpenter could not provision for a pod and logs a
    /// `FailedScheduling` event unless its recorder published one for the
    /// pod within the dedupe timeout
    /// ([`super::recorders::KARPENTER_FAILED_SCHEDULING_DEDUPE`]).
    fn note_unprovisionable(&mut self, pod: PodId, reason: String) {
        let now = self.now();
        let attempts = self.attempts.entry(pod).or_default();
        let publish = recorders::karpenter_publishes(
            attempts.karpenter_failed_published,
            recorders::KARPENTER_FAILED_SCHEDULING_DEDUPE,
            now,
        );
        if publish {
            attempts.karpenter_failed_published = Some(now);
        }
        let reason: Arc<str> = reason.into();
        let logged = publish.then(|| reason.clone());
        attempts.last_reason = Some(reason);
        if let Some(reason) = logged {
            self.log_failed_scheduling(pod, &reason);
        }
    }

    /// Logs a `FailedScheduling` event for the pod (its reason is kept by
    /// the caller, with the rest of its attempts, in one lookup).
    fn log_failed_scheduling(&mut self, pod: PodId, reason: &str) {
        let object = self.pod_object(pod);
        self.log(
            EventType::Warning,
            "FailedScheduling",
            object,
            reason.to_string(),
        );
    }

    /// Adds pods to Karpenter's batch window, opening one if needed. A pod
    /// new to the window extends the idle timer; the window never outlives
    /// its maximum.
    pub(super) fn trigger_batch(&mut self, pods: &[PodId]) -> Result<(), EngineError> {
        if pods.is_empty() {
            return Ok(());
        }
        let now = self.now();
        if self.autoscaler.ca().is_some() {
            // Cluster Autoscaler reacts to new unschedulable pods instead.
            return self.wake_ca(now);
        }
        let options = self.input.karpenter;
        let batch = self.autoscaler.kp_mut().batch.get_or_insert_with(|| Batch {
            opened: now,
            last_new: now,
            members: BTreeSet::new(),
            idle: options.batch_idle_duration,
            max: options.batch_max_duration,
        });
        let mut added = false;
        for pod in pods {
            added |= batch.members.insert(*pod);
        }
        if added {
            batch.last_new = now;
            let deadline = batch.deadline();
            self.schedule(deadline, Event::BatchCheck)?;
        }
        Ok(())
    }

    /// Closes the batch window if it is due and provisions.
    pub(super) fn check_batch(&mut self) -> Result<(), EngineError> {
        let due = self
            .autoscaler
            .kp()
            .batch
            .as_ref()
            .is_some_and(|b| b.deadline() <= self.now());
        if due {
            self.autoscaler.kp_mut().batch = None;
            self.provision()?;
        }
        Ok(())
    }

    /// Karpenter's 10 s requeue of still-provisionable pods.
    pub(super) fn requeue(&mut self) -> Result<(), EngineError> {
        self.autoscaler.kp_mut().requeue.armed = false;
        let pods = self.provisionable_pods();
        if pods.is_empty() {
            return Ok(());
        }
        if self.autoscaler.kp().requeue.last_solve_version == Some(self.version) {
            // Nothing changed since the last solve: it would answer the
            // same. Sleep until the cluster changes.
            self.autoscaler.kp_mut().requeue.waiting = true;
            return Ok(());
        }
        self.trigger_batch(&pods)
    }

    fn arm_requeue(&mut self) -> Result<(), EngineError> {
        if !self.autoscaler.kp().requeue.armed {
            self.autoscaler.kp_mut().requeue.armed = true;
            self.autoscaler.kp_mut().requeue.waiting = false;
            let at = self.now() + PROVISIONING_REQUEUE;
            self.schedule(at, Event::Requeue)?;
        }
        Ok(())
    }

    /// Pods Karpenter acts on: pending pods marked Unschedulable by
    /// kube-scheduler (not DaemonSet pods), then the pods of nodes being
    /// deleted that will need a new home (reference §1.1).
    fn provisionable_pods(&self) -> Vec<PodId> {
        let mut pods: Vec<PodId> = self
            .cluster
            .pending_pods()
            .filter(|(_, p)| p.unschedulable && !p.is_daemonset())
            .map(|(id, _)| id)
            .collect();
        pods.extend(self.deleting_node_pods());
        pods
    }

    /// Solve over every provisionable pod, then launch the new NodeClaims.
    fn provision(&mut self) -> Result<(), EngineError> {
        let pods = self.provisionable_pods();
        if pods.is_empty() {
            return Ok(());
        }
        let contexts = self.autoscaler.kp().contexts();
        let daemonsets = self.daemonset_templates();
        let karpenter = self.autoscaler.kp();
        let result = (self.deciders.solve)(
            &karpenter.provisioner,
            &ProvisioningInput {
                cluster: &self.cluster,
                nodepools: &contexts,
                daemonsets: &daemonsets,
                pods: &pods,
                node_count_resource: karpenter.node_count_resource,
                policies: self.input.karpenter.scheduling,
            },
        );
        drop(contexts);
        let nominated_until = self.now() + NOMINATION_WINDOW;
        for (pod, node) in result.existing {
            if let Some(claim) = self.cluster.node_mut(node).and_then(|n| n.claim.as_mut()) {
                claim.lifecycle.nominated_until = Some(nominated_until);
            }
            self.nominate(pod, node);
        }
        for (pod, reason) in result.errors {
            self.note_unprovisionable(pod, format!("Failed to schedule pod, {reason}"));
        }
        let mut retry = Vec::new();
        for claim in &result.new_nodeclaims {
            match self.launch(claim, "provisioning")? {
                Some(node) => {
                    for pod in &claim.pods {
                        self.nominate(*pod, node);
                    }
                }
                None => retry.extend(claim.pods.iter().copied()),
            }
        }
        // Pods deferred for reserved capacity are solved again at the next
        // requeue even if nothing else changed: the reservations this
        // solve's NodeClaims took are now launched or free again.
        self.autoscaler.kp_mut().requeue.last_solve_version =
            result.deferred.is_empty().then_some(self.version);
        self.autoscaler.kp_mut().requeue.last_solve_at = self.now();
        self.arm_requeue()?;
        // Pods of failed launches are re-provisioned in a new batch without
        // the offerings that just failed.
        self.trigger_batch(&retry)
    }

    /// Logs that Karpenter expects `pod` to land on `node`, if Karpenter's
    /// recorder lets the event through (at most one per pod in its dedupe timeout,
    /// whatever the node, then the shared rate limiter; core
    /// `scheduling.Results.Record` publishes one at every solve).
    fn nominate(&mut self, pod: PodId, node: NodeId) {
        let now = self.now();
        let attempts = self.attempts.entry(pod).or_default();
        if !recorders::karpenter_publishes(
            attempts.nominated_published,
            recorders::KARPENTER_NOMINATED_DEDUPE,
            now,
        ) {
            return;
        }
        attempts.nominated_published = Some(now);
        if !self.autoscaler.kp_mut().nomination_events.try_accept(now) {
            return;
        }
        let kind = match self.cluster.node(node) {
            Some(n) if !n.registered => "nodeclaim",
            _ => "node",
        };
        let message = format!("Pod should schedule on: {kind}/{}", self.node_name(node));
        let object = self.pod_object(pod);
        self.log(EventType::Normal, "Nominated", object, message);
    }

    /// Launches one NodeClaim for `reason` (`provisioning`, or the
    /// disruption reason it replaces nodes for): picks the offering, and
    /// either adds the node (unregistered, billed from now) or records an
    /// insufficient-capacity failure. Returns the node, or `None` when the
    /// launch failed.
    pub(super) fn launch(
        &mut self,
        claim: &NewNodeClaim,
        reason: &str,
    ) -> Result<Option<NodeId>, EngineError> {
        let pool_index = claim.nodepool;
        let Some(setup) = self.autoscaler.kp().pools.get(pool_index) else {
            return Ok(None);
        };
        let pool = &setup.pool;
        let decision = match (self.deciders.choose_offering)(
            claim,
            &self.autoscaler.kp().catalogs[pool_index],
        ) {
            Ok(decision) => decision,
            Err(error) => {
                self.record.launch_failures += 1;
                self.log(
                    EventType::Warning,
                    "LaunchFailed",
                    format!("nodepool/{}", pool.name),
                    format!("Launching NodeClaim: {error}"),
                );
                for pod in &claim.pods {
                    self.note_unprovisionable(*pod, format!("Failed to launch node: {error}"));
                }
                return Ok(None);
            }
        };
        let Some(decision) = self.create_fleet(pool_index, decision)? else {
            return Ok(None);
        };
        let node_id = self.add_node(claim, &decision, reason)?;
        Ok(Some(node_id))
    }

    /// One CreateFleet call (aws: pkg/providers/instance, CreateFleet with
    /// its overrides): EC2 answers for every override of the request at
    /// once. Each offering it has no capacity for is put in the
    /// unavailable-offerings cache for 3 minutes; the instance is the first
    /// override, in the provider's order, that it has capacity for. With
    /// none, the request fails once. Returns the launched decision.
    fn create_fleet(
        &mut self,
        pool: usize,
        mut decision: LaunchDecision,
    ) -> Result<Option<LaunchDecision>, EngineError> {
        if decision.overrides.is_empty() {
            // A decider that names one offering sends a one-override request.
            decision.overrides.push(FleetOverride {
                instance_type: decision.instance_type,
                zone: decision.zone,
                price: decision.price,
                reservation: decision.reservation,
            });
        }
        let now = self.now();
        self.end_outages(now);
        let catalog = &self.autoscaler.kp().catalogs[pool];
        let mut unavailable = Vec::new();
        let mut outage = false;
        let mut launched = None;
        if self.every_offering_has_capacity() {
            launched = decision.overrides.first().copied();
        } else {
            for o in &decision.overrides {
                let name = catalog.instance_types()[o.instance_type].name();
                match self.offering_short(now, name, o.zone, decision.capacity_type) {
                    Some(by_outage) => {
                        outage |= by_outage;
                        unavailable.push(OfferingKey {
                            instance_type: name.to_string(),
                            zone: o.zone.to_string(),
                            capacity_type: decision.capacity_type,
                        });
                    }
                    None => {
                        launched.get_or_insert(*o);
                    }
                }
            }
        }
        let total = decision.overrides.len();
        match launched {
            Some(o) => {
                if !unavailable.is_empty() {
                    let name = self.autoscaler.kp().catalogs[pool].instance_types()
                        [o.instance_type]
                        .name()
                        .to_string();
                    decision.explanation = format!(
                        "first of {total} CreateFleet overrides with capacity: {name} {} {} {}/h ({} offering(s) had insufficient capacity and are unavailable for {})",
                        decision.capacity_type,
                        o.zone,
                        o.price,
                        unavailable.len(),
                        UNAVAILABLE_OFFERING_TTL
                    );
                    self.mark_unavailable(&unavailable)?;
                }
                decision.instance_type = o.instance_type;
                decision.zone = o.zone;
                decision.price = o.price;
                decision.reservation = o.reservation;
                Ok(Some(decision))
            }
            None => {
                if outage {
                    self.spot.counts.outage_launch_failures += 1;
                }
                self.insufficient_capacity(pool, &unavailable)?;
                Ok(None)
            }
        }
    }

    /// EC2 had no capacity for any override of a CreateFleet request: one
    /// failed launch; every offering is cached as unavailable for 3 minutes.
    fn insufficient_capacity(
        &mut self,
        pool: usize,
        unavailable: &[OfferingKey],
    ) -> Result<(), EngineError> {
        self.record.launch_failures += 1;
        let pool_name = self.autoscaler.kp().pools[pool].pool.name.clone();
        let shown: Vec<String> = unavailable
            .iter()
            .take(3)
            .map(|k| format!("{} {} in {}", k.instance_type, k.capacity_type, k.zone))
            .collect();
        let more = match unavailable.len().saturating_sub(shown.len()) {
            0 => String::new(),
            n => format!(" and {n} more"),
        };
        self.log(
            EventType::Warning,
            "InsufficientCapacityError",
            format!("nodepool/{pool_name}"),
            format!(
                "NodeClaim launch failed: InsufficientInstanceCapacity for all {} CreateFleet override(s) ({}{more}); offerings unavailable for {}",
                unavailable.len(),
                shown.join(", "),
                UNAVAILABLE_OFFERING_TTL
            ),
        );
        self.mark_unavailable(unavailable)
    }

    /// Puts offerings EC2 reported without capacity in the ICE cache.
    fn mark_unavailable(&mut self, unavailable: &[OfferingKey]) -> Result<(), EngineError> {
        let expiry = self.now() + UNAVAILABLE_OFFERING_TTL;
        for key in unavailable {
            self.insert_ice(key, expiry);
            self.schedule(expiry, Event::IceExpired(key.clone()))?;
        }
        self.touch()
    }

    /// An offering leaves the ICE cache (unless a later failure renewed it).
    pub(super) fn ice_expired(&mut self, key: OfferingKey) -> Result<(), EngineError> {
        if self.ice.get(&key) != Some(&self.now()) {
            return Ok(());
        }
        self.ice.remove(&key);
        if let Some(karpenter) = self.autoscaler.karpenter_mut() {
            karpenter.provisioner.catalogs_changed();
            karpenter.catalogs_stale = true;
        }
        self.touch()
    }

    /// Puts an offering in the ICE cache until `expiry`. A new entry marks
    /// the offering unavailable in the catalogs in force, which is what a
    /// rebuild from the base catalogs would give, without copying them; a
    /// renewal changes no catalog.
    pub(super) fn insert_ice(&mut self, key: &OfferingKey, expiry: crate::time::SimTime) {
        if self
            .autoscaler
            .karpenter()
            .is_some_and(|k| k.catalogs_stale)
        {
            self.rebuild_catalogs();
        }
        if self.ice.insert(key.clone(), expiry).is_some() {
            return;
        }
        if let Some(karpenter) = self.autoscaler.karpenter_mut() {
            karpenter.provisioner.catalogs_changed();
            for catalog in &mut karpenter.catalogs {
                catalog.mark_unavailable(&key.instance_type, &key.zone, key.capacity_type);
            }
        }
    }

    pub(super) fn rebuild_catalogs(&mut self) {
        let Some(karpenter) = self.autoscaler.karpenter_mut() else {
            return;
        };
        karpenter.catalogs_stale = false;
        karpenter.catalogs = karpenter.base_catalogs.clone();
        karpenter.provisioner.catalogs_changed();
        for catalog in &mut karpenter.catalogs {
            for key in self.ice.keys() {
                catalog.mark_unavailable(&key.instance_type, &key.zone, key.capacity_type);
            }
        }
    }

    /// Adds the launched node, starts billing and schedules its start.
    fn add_node(
        &mut self,
        claim: &NewNodeClaim,
        decision: &LaunchDecision,
        reason: &str,
    ) -> Result<NodeId, EngineError> {
        let now = self.now();
        let pool_index = claim.nodepool;
        let KarpenterState {
            pools,
            catalogs,
            nodes_per_pool,
            pool_names,
            ..
        } = self.autoscaler.kp_mut();
        let pool = &pools[pool_index].pool;
        let instance_type = &catalogs[pool_index].instance_types()[decision.instance_type];
        let counter = nodes_per_pool.entry(pool.name.clone()).or_default();
        *counter += 1;
        let name = format!("{}-{:05}", pool.name, *counter);
        let mut labels: Labels = instance_type
            .labels
            .iter()
            .map(|(k, v)| (*k, v.as_str()))
            .collect();
        labels.extend_from(&claim.requirements.custom_labels());
        for (key, value) in &pool.labels {
            labels.insert(key.as_str(), value.as_str());
        }
        labels.insert(LABEL_TOPOLOGY_ZONE, decision.zone);
        if let Some(offering) = instance_type
            .offerings
            .iter()
            .find(|o| o.zone == decision.zone)
        {
            labels.insert(LABEL_TOPOLOGY_ZONE_ID, offering.zone_id);
        }
        labels.insert(LABEL_CAPACITY_TYPE, decision.capacity_type.label());
        let reservation = decision.reservation.and_then(|id| {
            let offering = instance_type
                .offerings
                .iter()
                .find_map(|o| o.reservation.filter(|r| r.id == id))?;
            Some((id, offering.reservation_type))
        });
        if let Some((id, reservation_type)) = reservation {
            labels.insert(LABEL_CAPACITY_RESERVATION_ID, id);
            labels.insert(LABEL_CAPACITY_RESERVATION_TYPE, reservation_type.label());
        }
        labels.insert(LABEL_NODEPOOL, pool.name.as_str());
        labels.insert(LABEL_EC2_NODECLASS, pool.node_class_ref.name.as_str());
        labels.insert(LABEL_HOSTNAME, name.as_str());
        let mut taints = pool.taints.clone();
        taints.extend(pool.startup_taints.iter().cloned());
        let node = Node {
            name: name.clone(),
            labels,
            taints,
            capacity: instance_type.capacity,
            allocatable: instance_type.allocatable,
            requested: Default::default(),
            pods: Vec::new(),
            registered: false,
            initialized: false,
            marked_for_deletion: false,
            claim: Some(NodeClaimInfo {
                lifecycle: launch_lifecycle(pool),
                nodepool: shared_name(pool_names, &pool.name),
                instance_type: instance_type.name().to_string(),
                capacity_type: decision.capacity_type,
                zone: decision.zone.to_string(),
                price: decision.price,
                startup_taints: pool.startup_taints.clone(),
            }),
            created_at: now,
        };
        let type_name = instance_type.name().to_string();
        let nodepool = pool.name.clone();
        let node_id = self.add_launched_node(
            node,
            &nodepool,
            (decision.capacity_type, decision.price),
            (&type_name, decision.zone),
            reason,
        )?;
        let mut message = format!(
            "Launched {type_name} {} in {} at ${}/h for {} pod(s); {} compatible instance type(s); {}",
            decision.capacity_type,
            decision.zone,
            decision.price.decimal(),
            claim.pods.len(),
            claim.instance_types.len(),
            decision.explanation
        );
        if claim.min_values_relaxed == Some(true) {
            message.push_str(
                "; minValues relaxed to what the options reach (karpenter.sh/nodeclaim-min-values-relaxed: \"true\")",
            );
        }
        self.log(
            EventType::Normal,
            "Launched",
            format!("nodeclaim/{name}"),
            message,
        );
        self.spot_node_launched(node_id, pool_index, decision)?;
        if let Some(index) = decision
            .reservation
            .and_then(|id| self.autoscaler.kp().reservations.index(id))
        {
            self.reserved_node_launched(node_id, index)?;
        }
        self.node_meta[node_id.0 as usize].hangs = self.launch_hangs(&nodepool);
        self.schedule_node_startup(node_id, now, now)?;
        if let Some(at) = self.cluster.node(node_id).and_then(expiration_time) {
            self.schedule(at, Event::Expire(node_id))?;
        }
        if self.is_static_node(node_id) {
            self.static_reconcile_soon()?;
        }
        self.mark_unconsolidated();
        self.touch()?;
        Ok(node_id)
    }
}

/// The shared copy of NodePool name `name`.
pub(super) fn shared_name(names: &mut BTreeMap<String, Arc<str>>, name: &str) -> Arc<str> {
    if let Some(shared) = names.get(name) {
        return shared.clone();
    }
    let shared: Arc<str> = Arc::from(name);
    names.insert(name.to_string(), shared.clone());
    shared
}
