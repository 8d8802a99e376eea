//! An instance type as a set of requirements, the form Karpenter compares
//! NodePools and pods against (aws: pkg/providers/instancetype/types.go
//! `computeRequirements`).
//!
//! Every single-valued label becomes `In [value]`; zone, zone id and capacity
//! type list the values of the type's *available* offerings; and the AWS keys
//! upstream always defines but this type lacks (a CPU-only type's GPU labels,
//! for instance) become `DoesNotExist`, so a NodePool that asks for
//! `instance-gpu-name In [t4]` excludes it rather than ignoring the key.

use super::catalog::InstanceType;
use super::offering::Offering;
use crate::kube::labels::*;
use crate::kube::requirements::{Requirement, Requirements};

/// Keys upstream defines on every instance type, `DoesNotExist` until the
/// type's data gives them a value.
const DEFINED_KEYS: [&str; 17] = [
    LABEL_WINDOWS_BUILD,
    LABEL_INSTANCE_CPU_MANUFACTURER,
    LABEL_INSTANCE_EBS_BANDWIDTH,
    LABEL_INSTANCE_NETWORK_BANDWIDTH,
    LABEL_INSTANCE_CATEGORY,
    LABEL_INSTANCE_FAMILY,
    LABEL_INSTANCE_GENERATION,
    LABEL_INSTANCE_LOCAL_NVME,
    LABEL_INSTANCE_SIZE,
    LABEL_INSTANCE_GPU_NAME,
    LABEL_INSTANCE_GPU_MANUFACTURER,
    LABEL_INSTANCE_GPU_COUNT,
    LABEL_INSTANCE_GPU_MEMORY,
    LABEL_INSTANCE_ACCELERATOR_NAME,
    LABEL_INSTANCE_ACCELERATOR_MANUFACTURER,
    LABEL_INSTANCE_ACCELERATOR_COUNT,
    LABEL_INSTANCE_CPU_SUSTAINED_CLOCK_SPEED_MHZ,
];

impl InstanceType {
    /// The type's requirements over its available offerings.
    pub fn requirements(&self) -> Requirements {
        let mut reqs: Requirements = self
            .labels
            .iter()
            .map(|(key, value)| Requirement::in_values(key, [value.as_str()]))
            .collect();
        for key in DEFINED_KEYS {
            if !reqs.has(key) {
                reqs.add(Requirement::does_not_exist(key));
            }
        }
        for requirement in self.availability_requirements() {
            reqs.add(requirement);
        }
        // The reservations of the type's reserved offerings, used up or
        // not (aws types.go `computeRequirements` lists every reservation
        // of the NodeClass for the type); none: the keys do not exist.
        let reservations: Vec<_> = self
            .offerings
            .iter()
            .filter_map(|o| o.reservation)
            .collect();
        if reservations.is_empty() {
            for key in [
                LABEL_CAPACITY_RESERVATION_ID,
                LABEL_CAPACITY_RESERVATION_TYPE,
                LABEL_CAPACITY_RESERVATION_INTERRUPTIBLE,
            ] {
                reqs.add(Requirement::does_not_exist(key));
            }
        } else {
            reqs.add(Requirement::in_values(
                LABEL_CAPACITY_RESERVATION_ID,
                reservations.iter().map(|r| r.id),
            ));
            reqs.add(Requirement::in_values(
                LABEL_CAPACITY_RESERVATION_TYPE,
                reservations.iter().map(|r| r.reservation_type.label()),
            ));
            reqs.add(Requirement::in_values(
                LABEL_CAPACITY_RESERVATION_INTERRUPTIBLE,
                ["false"],
            ));
        }
        reqs
    }

    /// [`Self::requirements`] after a change of which offerings are
    /// available, from `kept`, the requirements before it: only the zone,
    /// zone id and capacity type read availability, so only those are
    /// made again.
    pub fn requirements_after_availability_change(&self, kept: &Requirements) -> Requirements {
        let mut reqs = kept.clone();
        for requirement in self.availability_requirements() {
            reqs.remove(requirement.key());
            reqs.add(requirement);
        }
        reqs
    }

    /// The zone, zone id and capacity type of the available offerings: the
    /// requirements that availability decides (no label or defined key
    /// names them).
    fn availability_requirements(&self) -> [Requirement; 3] {
        let available: Vec<&Offering> = self.offerings.iter().filter(|o| o.available).collect();
        [
            Requirement::in_values(LABEL_TOPOLOGY_ZONE, available.iter().map(|o| o.zone)),
            Requirement::in_values(LABEL_TOPOLOGY_ZONE_ID, available.iter().map(|o| o.zone_id)),
            Requirement::in_values(
                LABEL_CAPACITY_TYPE,
                available.iter().map(|o| o.capacity_type.label()),
            ),
        ]
    }
}

impl Offering {
    /// Whether the offering's zone, zone id and capacity type are allowed by
    /// `requirements` (keys it does not mention allow everything).
    pub fn is_compatible(&self, requirements: &Requirements) -> bool {
        let allows = |key: &str, value: &str| requirements.get(key).is_none_or(|r| r.has(value));
        allows(LABEL_TOPOLOGY_ZONE, self.zone)
            && allows(LABEL_TOPOLOGY_ZONE_ID, self.zone_id)
            && allows(LABEL_CAPACITY_TYPE, self.capacity_type.label())
            && self.reservation.is_none_or(|r| {
                allows(LABEL_CAPACITY_RESERVATION_ID, r.id)
                    && allows(LABEL_CAPACITY_RESERVATION_TYPE, r.reservation_type.label())
            })
    }
}
