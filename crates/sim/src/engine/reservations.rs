//! The account's capacity reservations during a Karpenter run: how many of
//! each one's instances are in use, what that leaves the `reserved`
//! offerings of the catalogs in force (the AWS provider's capacity
//! reservation provider counts launches and terminations the same way:
//! aws pkg/providers/capacityreservation `MarkLaunched`/`MarkTerminated`),
//! the fixed charge each one costs while it lasts, and the end of capacity
//! blocks: from 40 minutes before the end the block is expiring (its
//! offerings are gone and Karpenter deletes the NodeClaims on it, aws
//! pkg/controllers/capacityreservation/expiration); at the end EC2
//! terminates whatever still runs there.

use super::{Engine, EngineError, Event, EventType};
use crate::cloud::CapacityType;
use crate::cloud::reservation::{CapacityReservation, ReservationType};
use crate::ledger::ChargeId;
use crate::scheduler::NodeId;
use crate::time::SimTime;

/// Why Karpenter deletes a NodeClaim on an expiring capacity block.
pub const CAPACITY_BLOCK_EXPIRING: &str = "capacity-block-expiring";

/// One reservation of the run and what is known of it.
#[derive(Debug, Clone)]
pub(super) struct Held {
    pub reservation: CapacityReservation,
    /// Instances launched into it and not yet terminated.
    pub used: u32,
    /// Expiring (a capacity block near its end) or ended.
    pub expiring: bool,
    charge: Option<ChargeId>,
}

impl Held {
    fn left(&self) -> u32 {
        self.reservation.count.saturating_sub(self.used)
    }
}

/// Every reservation of the run, by position in the input's list.
#[derive(Debug, Clone, Default)]
pub(super) struct Reservations {
    pub held: Vec<Held>,
}

impl Reservations {
    pub fn new(list: &[CapacityReservation]) -> Reservations {
        Reservations {
            held: list
                .iter()
                .map(|r| Held {
                    reservation: r.clone(),
                    used: 0,
                    expiring: false,
                    charge: None,
                })
                .collect(),
        }
    }

    /// The position of reservation `id`.
    pub fn index(&self, id: &str) -> Option<usize> {
        self.held.iter().position(|h| h.reservation.id == id)
    }
}

impl Engine<'_> {
    /// At the start of a Karpenter run: each reservation's fixed charge
    /// begins, the bound learns of them, and the ends of capacity blocks
    /// within the run are scheduled.
    pub(super) fn start_reservations(&mut self) -> Result<(), EngineError> {
        let end_of_run = SimTime::ZERO + self.input.duration;
        let Some(karpenter) = self.autoscaler.karpenter_mut() else {
            return Ok(());
        };
        let mut fixed = 0i64;
        let mut events = Vec::new();
        for (i, held) in karpenter.reservations.held.iter_mut().enumerate() {
            let r = &held.reservation;
            let charge = self
                .ledger
                .charge(
                    format!("capacity-reservation/{}", r.id),
                    CapacityType::Reserved,
                    SimTime::ZERO,
                    r.hourly_charge(),
                )
                .map_err(|source| EngineError::Ledger {
                    variant: self.input.variant.clone(),
                    source,
                })?;
            held.charge = Some(charge);
            fixed = fixed.saturating_add(r.hourly_charge().micros());
            if let Some(at) = r.expiring_at().filter(|&at| at <= end_of_run) {
                events.push((at, Event::ReservationExpiring(i)));
            }
            if let Some(at) = r.end.filter(|&at| at <= end_of_run) {
                events.push((at, Event::ReservationEnd(i)));
            }
        }
        let list: Vec<(&'static str, u32)> = karpenter
            .reservations
            .held
            .iter()
            .map(|h| (h.reservation.id, h.reservation.count))
            .collect();
        self.record.bound.set_reservations(list);
        self.record
            .bound
            .set_fixed_rate(crate::cloud::Price::from_micros(fixed));
        self.refresh_reservable();
        for (at, event) in events {
            self.schedule(at, event)?;
        }
        Ok(())
    }

    /// Tells the bound which reservations the NodePools in force may
    /// launch into.
    pub(super) fn refresh_reservable(&mut self) {
        let Some(karpenter) = self.autoscaler.karpenter() else {
            return;
        };
        if karpenter.reservations.held.is_empty() {
            return;
        }
        let reservable = crate::lower_bound::reservable(&karpenter.pools, &karpenter.base_catalogs);
        self.record.bound.set_reservable(&reservable);
    }

    /// Sets the reserved offerings of the catalogs in force (and of the
    /// base catalogs they are rebuilt from) to what each reservation has
    /// left; the provisioner's kept setup, which priced them, is dropped.
    pub(super) fn apply_reservations_in_force(&mut self) {
        let Some(karpenter) = self.autoscaler.karpenter_mut() else {
            return;
        };
        if karpenter.reservations.held.is_empty() {
            return;
        }
        let mut changed = false;
        for catalog in karpenter
            .base_catalogs
            .iter_mut()
            .chain(karpenter.catalogs.iter_mut())
        {
            for held in &karpenter.reservations.held {
                changed |= catalog.set_reservation(held.reservation.id, held.left(), held.expiring);
            }
        }
        if changed {
            karpenter.provisioner.catalogs_changed();
        }
    }

    /// A node was launched into reservation `index`.
    pub(super) fn reserved_node_launched(
        &mut self,
        node: NodeId,
        index: usize,
    ) -> Result<(), EngineError> {
        let Some(karpenter) = self.autoscaler.karpenter_mut() else {
            return Ok(());
        };
        let Some(held) = karpenter.reservations.held.get_mut(index) else {
            return Ok(());
        };
        held.used += 1;
        let id = held.reservation.id;
        self.node_meta[node.0 as usize].reservation = Some(index);
        if let Some(n) = self.cluster.node(node) {
            let (cpu, memory) = (n.allocatable.cpu_millis(), n.allocatable.memory_bytes());
            self.record.bound.reserved_node_added(node, id, cpu, memory);
        }
        self.apply_reservations_in_force();
        self.touch()
    }

    /// A node of reservation `index` was terminated: its slot is free
    /// again.
    pub(super) fn reserved_node_terminated(&mut self, index: usize) -> Result<(), EngineError> {
        let Some(karpenter) = self.autoscaler.karpenter_mut() else {
            return Ok(());
        };
        let Some(held) = karpenter.reservations.held.get_mut(index) else {
            return Ok(());
        };
        held.used = held.used.saturating_sub(1);
        self.apply_reservations_in_force();
        self.touch()
    }

    /// The nodes running on reservation `index`, in id order.
    fn nodes_on_reservation(&self, index: usize) -> Vec<NodeId> {
        self.cluster
            .nodes()
            .map(|(id, _)| id)
            .filter(|id| self.node_meta[id.0 as usize].reservation == Some(index))
            .collect()
    }

    /// A capacity block begins expiring: its offerings disappear and every
    /// NodeClaim on it is deleted (drained, its pods provisioned elsewhere).
    pub(super) fn reservation_expiring(&mut self, index: usize) -> Result<(), EngineError> {
        let Some(karpenter) = self.autoscaler.karpenter_mut() else {
            return Ok(());
        };
        let Some(held) = karpenter.reservations.held.get_mut(index) else {
            return Ok(());
        };
        held.expiring = true;
        let r = held.reservation.clone();
        self.record.bound.reservation_expiring(r.id);
        self.apply_reservations_in_force();
        let nodes = self.nodes_on_reservation(index);
        let end = r.end.map_or_else(String::new, |end| format!(" at {end}"));
        self.log(
            EventType::Normal,
            "CapacityReservationExpiring",
            format!("capacityreservation/{}", r.id),
            format!(
                "{} {} ends{end}; its offerings are gone and {} NodeClaim(s) on it are deleted",
                r.reservation_type,
                r.id,
                nodes.len()
            ),
        );
        for node in nodes {
            if self.node_meta[node.0 as usize].deleting.is_none() {
                self.start_termination(node, CAPACITY_BLOCK_EXPIRING)?;
            }
        }
        self.touch()
    }

    /// A reservation ends: its charge stops; a capacity block's instances
    /// still running are terminated by EC2, with the pods still on them.
    pub(super) fn reservation_end(&mut self, index: usize) -> Result<(), EngineError> {
        let now = self.now();
        let Some(karpenter) = self.autoscaler.karpenter_mut() else {
            return Ok(());
        };
        let Some(held) = karpenter.reservations.held.get_mut(index) else {
            return Ok(());
        };
        held.expiring = true;
        if let Some(charge) = held.charge {
            self.ledger.end_charge(charge, now);
        }
        let r = held.reservation.clone();
        let fixed: i64 = karpenter
            .reservations
            .held
            .iter()
            .filter(|h| !h.expiring || h.reservation.end.is_none_or(|end| end > now))
            .map(|h| h.reservation.hourly_charge().micros())
            .sum();
        self.record
            .bound
            .set_fixed_rate(crate::cloud::Price::from_micros(fixed));
        self.record.bound.reservation_expiring(r.id);
        self.apply_reservations_in_force();
        if r.reservation_type != ReservationType::CapacityBlock {
            return Ok(());
        }
        let nodes = self.nodes_on_reservation(index);
        for node in nodes {
            if self.node_meta[node.0 as usize].deleting.is_none() {
                self.start_termination(node, CAPACITY_BLOCK_EXPIRING)?;
            }
            self.terminate_instance(node, "capacity block ended; instance terminated by EC2")?;
        }
        self.touch()
    }
}
