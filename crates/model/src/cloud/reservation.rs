//! Capacity reservations: the account's On-Demand Capacity Reservations
//! (ODCRs) and capacity blocks, the EC2NodeClass selector terms that pick
//! which of them a NodeClass may launch into, and the `reserved` offerings
//! they become in a catalog (aws: pkg/providers/capacityreservation,
//! pkg/providers/instancetype/offering/reserved_capacity_resolver.go).
//!
//! A reservation is for one instance type in one zone and holds `count`
//! instances. Each selected reservation adds one offering of capacity type
//! `reserved` to its type in the catalog, carrying how many instances it
//! has left; the offering is available while that is above zero and the
//! reservation is not expiring (a capacity block is "expiring" from
//! [`CAPACITY_BLOCK_EXPIRATION_LEAD`] before its end on).
//!
//! Upstream prices a reserved offering at its type's On-Demand price
//! divided by 10⁷, so it is "free" yet keeps the types' relative order.
//! Prices here are whole micro-dollars, where that quotient is below one:
//! reserved offerings are priced 0 and carry the On-Demand price as
//! [`OfferingReservation::rank`], the tie-break that keeps upstream's order
//! where reserved offerings are compared with each other.

use std::collections::BTreeMap;

use super::price::Price;
use crate::time::{SimDuration, SimTime};

/// How long before its end a capacity block counts as expiring: its
/// offerings are gone and Karpenter deletes the NodeClaims on it (aws:
/// pkg/apis/v1/ec2nodeclass_status.go `capacityReservationExpirationPeriod`,
/// pkg/controllers/capacityreservation/expiration), 10 minutes before EC2
/// begins reclaiming the instances.
pub const CAPACITY_BLOCK_EXPIRATION_LEAD: SimDuration = SimDuration::from_mins(40);

/// `karpenter.k8s.aws/capacity-reservation-type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ReservationType {
    /// `default`: an On-Demand Capacity Reservation.
    Default,
    /// `capacity-block`: a capacity block for ML, which ends at a fixed time.
    CapacityBlock,
}

impl ReservationType {
    /// The label value.
    pub const fn label(self) -> &'static str {
        match self {
            ReservationType::Default => "default",
            ReservationType::CapacityBlock => "capacity-block",
        }
    }

    /// The order the AWS provider prefers types in when reserved offerings
    /// tie on price (aws: instance/filter/filter.go
    /// `CapacityReservationTypeFilter`: default before capacity-block).
    pub const fn priority(self) -> u8 {
        match self {
            ReservationType::Default => 0,
            ReservationType::CapacityBlock => 1,
        }
    }
}

impl std::fmt::Display for ReservationType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.label())
    }
}

/// One reservation of the account, as a scenario declares it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CapacityReservation {
    /// `cr-…`; lives as long as the program (like the catalog's zone names)
    /// so that offerings stay `Copy`.
    pub id: &'static str,
    /// The instance type it reserves.
    pub instance_type: String,
    /// Its zone.
    pub zone: String,
    /// Instances it holds (at least 1).
    pub count: u32,
    /// ODCR or capacity block.
    pub reservation_type: ReservationType,
    /// When it ends, if it does.
    pub end: Option<SimTime>,
    /// Its tags (what selector terms match).
    pub tags: BTreeMap<String, String>,
    /// The account that owns it (12 digits), if given.
    pub owner_id: Option<String>,
    /// What one reserved instance-hour costs, paid whether it is used or
    /// not (an ODCR is billed at the On-Demand rate).
    pub price: Price,
}

impl CapacityReservation {
    /// When its offerings disappear: a capacity block's end less the
    /// expiration lead, or its end.
    pub fn expiring_at(&self) -> Option<SimTime> {
        let end = self.end?;
        Some(match self.reservation_type {
            ReservationType::CapacityBlock => SimTime::from_millis(
                end.as_millis()
                    .saturating_sub(CAPACITY_BLOCK_EXPIRATION_LEAD.as_millis()),
            ),
            ReservationType::Default => end,
        })
    }

    /// What the reservation costs per hour while it lasts: `count ×
    /// price`.
    pub fn hourly_charge(&self) -> Price {
        Price::from_micros(self.price.micros().saturating_mul(i64::from(self.count)))
    }
}

/// One `spec.capacityReservationSelectorTerms` entry of an EC2NodeClass.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ReservationSelectorTerm {
    /// `id`: exactly this reservation.
    pub id: Option<String>,
    /// `tags`: every tag must match; the value `*` matches any value.
    pub tags: BTreeMap<String, String>,
    /// `ownerID`: only reservations of this account.
    pub owner_id: Option<String>,
}

impl ReservationSelectorTerm {
    /// Whether the term selects `reservation` (aws:
    /// pkg/providers/capacityreservation/types.go, the EC2 filters a term
    /// becomes: `capacity-reservation-id`, `tag:<key>` or `tag-key` for
    /// `*`, `owner-id`).
    pub fn selects(&self, reservation: &CapacityReservation) -> bool {
        if let Some(id) = &self.id
            && id != reservation.id
        {
            return false;
        }
        if let Some(owner) = &self.owner_id
            && reservation.owner_id.as_deref() != Some(owner.as_str())
        {
            return false;
        }
        self.tags
            .iter()
            .all(|(key, value)| match reservation.tags.get(key) {
                Some(found) => value == "*" || found == value,
                None => false,
            })
    }
}

/// The reservations any of `terms` selects (terms are ORed), in
/// `reservations` order.
pub fn select<'r>(
    terms: &[ReservationSelectorTerm],
    reservations: &'r [CapacityReservation],
) -> Vec<&'r CapacityReservation> {
    reservations
        .iter()
        .filter(|r| terms.iter().any(|t| t.selects(r)))
        .collect()
}

/// What makes an offering a reserved one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OfferingReservation {
    /// The reservation's id (`karpenter.k8s.aws/capacity-reservation-id`).
    pub id: &'static str,
    /// `karpenter.k8s.aws/capacity-reservation-type`.
    pub reservation_type: ReservationType,
    /// Instances it has left (upstream `ReservationCapacity`).
    pub capacity: u32,
    /// The type's On-Demand price: orders reserved offerings among
    /// themselves as upstream's `price / 10⁷` does.
    pub rank: Price,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reservation(id: &'static str, tags: &[(&str, &str)]) -> CapacityReservation {
        CapacityReservation {
            id,
            instance_type: "m6i.xlarge".to_string(),
            zone: "us-east-1a".to_string(),
            count: 2,
            reservation_type: ReservationType::Default,
            end: None,
            tags: tags
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            owner_id: Some("123456789012".to_string()),
            price: Price::from_micros(192_000),
        }
    }

    /// aws: pkg/providers/capacityreservation/suite_test.go — reservations
    /// are selected by id, by tags (`*` for any value) and narrowed by
    /// owner; terms are ORed.
    #[test]
    fn capacity_reservation_selector_terms_by_id_tags_and_owner() {
        let all = [
            reservation("cr-a", &[("team", "ml")]),
            reservation("cr-b", &[("team", "web"), ("env", "prod")]),
            reservation("cr-c", &[]),
        ];
        let ids = |terms: &[ReservationSelectorTerm]| -> Vec<&str> {
            select(terms, &all).iter().map(|r| r.id).collect()
        };
        let by_id = ReservationSelectorTerm {
            id: Some("cr-c".to_string()),
            ..Default::default()
        };
        assert_eq!(ids(std::slice::from_ref(&by_id)), ["cr-c"]);
        let any_team = ReservationSelectorTerm {
            tags: [("team".to_string(), "*".to_string())].into(),
            ..Default::default()
        };
        assert_eq!(ids(std::slice::from_ref(&any_team)), ["cr-a", "cr-b"]);
        let web_prod = ReservationSelectorTerm {
            tags: [
                ("team".to_string(), "web".to_string()),
                ("env".to_string(), "prod".to_string()),
            ]
            .into(),
            ..Default::default()
        };
        assert_eq!(ids(&[web_prod, by_id.clone()]), ["cr-b", "cr-c"]);
        let other_owner = ReservationSelectorTerm {
            tags: [("team".to_string(), "*".to_string())].into(),
            owner_id: Some("210987654321".to_string()),
            ..Default::default()
        };
        assert!(ids(&[other_owner]).is_empty());
    }

    #[test]
    fn capacity_blocks_expire_forty_minutes_before_their_end() {
        let mut block = reservation("cr-a", &[]);
        block.reservation_type = ReservationType::CapacityBlock;
        block.end = Some(SimTime::from_millis(3_600_000));
        assert_eq!(block.expiring_at(), Some(SimTime::from_millis(1_200_000)));
        assert_eq!(block.hourly_charge(), Price::from_micros(384_000));
    }

    /// aws instancetype suite_test.go reserved offerings and
    /// reserved_capacity_resolver.go: one reserved offering per selected
    /// reservation, in its zone, priced as free, available while
    /// instances are left; the type's requirements gain `reserved` and the
    /// reservation id, and types without one say the keys do not exist.
    #[test]
    fn reserved_offerings_are_generated_per_reservation() {
        use crate::cloud::CapacityType;
        use crate::kube::labels::{LABEL_CAPACITY_RESERVATION_ID, LABEL_CAPACITY_TYPE};
        let mut catalog = crate::cloud::fake::instance_types(3);
        let mut r = reservation("cr-a", &[]);
        r.instance_type = "fake-it-1".to_string();
        r.zone = "test-zone-2".to_string();
        catalog.add_reservations([&r]);
        let it = catalog.get("fake-it-1").unwrap();
        let reserved: Vec<_> = it
            .offerings
            .iter()
            .filter(|o| o.capacity_type == CapacityType::Reserved)
            .collect();
        assert_eq!(reserved.len(), 1);
        assert_eq!(reserved[0].zone, "test-zone-2");
        assert_eq!(reserved[0].price, Price::ZERO);
        assert!(reserved[0].available);
        assert_eq!(reserved[0].reservation.unwrap().capacity, 2);
        assert_eq!(reserved[0].reservation.unwrap().rank, it.on_demand_price);
        let index = catalog
            .instance_types()
            .iter()
            .position(|t| t.name() == "fake-it-1")
            .unwrap();
        let reqs = &catalog.type_requirements()[index];
        assert!(reqs.get(LABEL_CAPACITY_TYPE).unwrap().has("reserved"));
        assert!(reqs.get(LABEL_CAPACITY_RESERVATION_ID).unwrap().has("cr-a"));
        let other = &catalog.type_requirements()[(index + 1) % 3];
        assert!(
            !other
                .get(LABEL_CAPACITY_RESERVATION_ID)
                .unwrap()
                .has("cr-a")
        );
        assert_eq!(
            catalog.cheapest_price(index, CapacityType::Reserved),
            Some(Price::ZERO)
        );
        // Used up: unavailable, and no longer a capacity type the type offers.
        assert!(catalog.set_reservation("cr-a", 0, false));
        let reqs = &catalog.type_requirements()[index];
        assert!(!reqs.get(LABEL_CAPACITY_TYPE).unwrap().has("reserved"));
        assert_eq!(catalog.cheapest_price(index, CapacityType::Reserved), None);
        // A slot released: available again; expiring: gone for good.
        assert!(catalog.set_reservation("cr-a", 1, false));
        assert_eq!(
            catalog.cheapest_price(index, CapacityType::Reserved),
            Some(Price::ZERO)
        );
        assert!(catalog.set_reservation("cr-a", 1, true));
        assert_eq!(catalog.cheapest_price(index, CapacityType::Reserved), None);
    }
}
