//! Invariants the engine keeps, checked after every event when a run asks
//! for it ([`super::run_checked`]): every pod ever created is exactly one
//! of pending, running (terminating included), completed, deleted by its
//! owner or a step, or lost; node request totals match their pods; bound
//! pods point at live nodes that list them; the cost lower bound's rate is
//! at most the fleet's billed rate.

use super::Engine;
use crate::kube::resources::Resources;
use crate::scheduler::{PodId, PodPhase};

impl Engine<'_> {
    /// Appends every broken invariant to the violations (when checking).
    pub(super) fn check_invariants(&mut self) {
        if self.record.violations.is_none() {
            return;
        }
        let now = self.now();
        let mut found = Vec::new();
        for (index, meta) in self.pod_meta.iter().enumerate() {
            let id = PodId(index as u32);
            let pod = self.cluster.pod(id);
            let state = match (pod, meta.removed) {
                (Some(p), false) => match (p.phase, p.node) {
                    (PodPhase::Pending, None) => "pending",
                    (PodPhase::Running, Some(_)) => "running",
                    (PodPhase::Succeeded | PodPhase::Failed, _) => "completed",
                    (phase, node) => {
                        found.push(format!(
                            "{now}: pod {} is {phase:?} with node {node:?}",
                            self.pod_name(id)
                        ));
                        continue;
                    }
                },
                (None, true) => {
                    if meta.lost {
                        "lost"
                    } else {
                        "deleted"
                    }
                }
                (Some(_), true) => {
                    found.push(format!(
                        "{now}: pod {} removed but still in the cluster",
                        self.pod_name(id)
                    ));
                    continue;
                }
                (None, false) => {
                    found.push(format!(
                        "{now}: pod {} vanished unaccounted",
                        self.pod_name(id)
                    ));
                    continue;
                }
            };
            if meta.lost && state != "lost" && state != "running" {
                found.push(format!(
                    "{now}: pod {} is lost and {state}",
                    self.pod_name(id)
                ));
            }
            if let Some(p) = pod
                && let Some(node) = p.node
            {
                match self.cluster.node(node) {
                    Some(n) if n.pods.contains(&id) => {}
                    _ => found.push(format!(
                        "{now}: pod {} bound to node {} that does not list it",
                        self.pod_name(id),
                        node.0
                    )),
                }
            }
        }
        let mut demand = Resources::ZERO;
        for (id, node) in self.cluster.nodes() {
            demand += node.requested;
            let mut requested = Resources::ZERO;
            for &pod in &node.pods {
                match self.cluster.pod(pod) {
                    Some(p) if p.node == Some(id) => {
                        if !p.phase.is_terminal() {
                            requested += p.spec.requests;
                        }
                    }
                    _ => found.push(format!(
                        "{now}: node {} lists pod {} that is not bound to it",
                        node.name, pod.0
                    )),
                }
            }
            if requested != node.requested {
                found.push(format!(
                    "{now}: node {} requested {:?} but its pods request {:?}",
                    node.name, node.requested, requested
                ));
            }
        }
        // The running nodes cover the bound pods, so the bound's rate can
        // never exceed what they are billed.
        let bound = self
            .record
            .bound
            .rate(demand.cpu_millis(), demand.memory_bytes());
        let billed = self.ledger.current_hourly_rate().micros();
        if bound > billed {
            found.push(format!(
                "{now}: cost lower bound {bound} µ$/h above the billed {billed} µ$/h"
            ));
        }
        if let Some(v) = self.record.violations.as_mut() {
            v.extend(found);
        }
    }
}
