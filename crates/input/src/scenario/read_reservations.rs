//! The top-level `capacityReservations` list: the account's On-Demand
//! Capacity Reservations and capacity blocks, which EC2NodeClasses select
//! with `capacityReservationSelectorTerms`. Instance types are checked
//! against the catalog when the scenario is prepared (like node groups').

use std::collections::BTreeMap;

use super::super::error::Problem;
use super::super::{ReservationSpec, WrittenName};
use super::{Keys, Node, Reader, ScenarioError, Value, index};
use crate::cloud::Price;
use crate::cloud::reservation::ReservationType;
use crate::nodepools::ec2nodeclass::is_reservation_id;
use crate::sim::SimTime;

const RESERVATION_KEYS: Keys = Keys {
    valid: &[
        "id",
        "instanceType",
        "zone",
        "count",
        "type",
        "end",
        "tags",
        "ownerID",
        "price",
    ],
    reserved: &[],
};

/// The most instances one reservation may hold (as many as one workload's
/// replicas).
const MAX_RESERVATION_COUNT: u64 = super::super::limits::MAX_REPLICAS;

impl Reader<'_> {
    /// Reads `capacityReservations`; `zones` are the scenario's.
    pub(super) fn capacity_reservations(
        &self,
        node: &Node,
        region: &str,
        region_zones: &[String],
        zones: &[String],
    ) -> Result<Vec<ReservationSpec>, ScenarioError> {
        const FIELD: &str = "capacityReservations";
        let Value::Seq(items) = &node.value else {
            return Err(self.wrong_type(node, FIELD, "a list of capacity reservations"));
        };
        if items.is_empty() {
            return Err(self.invalid(node.position, FIELD, Problem::EmptyList));
        }
        let mut out: Vec<ReservationSpec> = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let field = index(FIELD, i);
            let map = self.mapping(item, &field, &RESERVATION_KEYS)?;
            let id_node = self.required(&map, "id")?;
            let id_field = map.field("id");
            let id = self.string(id_node, &id_field)?;
            if !is_reservation_id(id) {
                let problem = Problem::InvalidName {
                    name: id.to_string(),
                    reason: "a capacity reservation id is cr- followed by lower-case letters and digits",
                };
                return Err(self.invalid(id_node.position, &id_field, problem));
            }
            if out.iter().any(|r| r.id == id) {
                let problem = Problem::Repeated {
                    name: id.to_string(),
                };
                return Err(self.invalid(id_node.position, &id_field, problem));
            }
            let type_node = self.required(&map, "instanceType")?;
            let type_field = map.field("instanceType");
            let instance_type = WrittenName {
                name: self.string(type_node, &type_field)?.to_string(),
                field: type_field,
                position: type_node.position,
            };
            let zone_node = self.required(&map, "zone")?;
            let zone_field = map.field("zone");
            let zone = self.string(zone_node, &zone_field)?;
            if !region_zones.iter().any(|z| z == zone) {
                let problem = Problem::UnknownZone {
                    zone: zone.to_string(),
                    region: region.to_string(),
                    known: region_zones.to_vec(),
                };
                return Err(self.invalid(zone_node.position, &zone_field, problem));
            }
            if !zones.iter().any(|z| z == zone) {
                let problem = Problem::ZoneNotUsed {
                    zone: zone.to_string(),
                    zones: zones.to_vec(),
                };
                return Err(self.invalid(zone_node.position, &zone_field, problem));
            }
            let count_node = self.required(&map, "count")?;
            let count_field = map.field("count");
            let count = self.unsigned(count_node, &count_field, MAX_RESERVATION_COUNT)?;
            if count == 0 {
                return Err(self.invalid(count_node.position, &count_field, Problem::ZeroCount));
            }
            let reservation_type = match map.get("type") {
                None => ReservationType::Default,
                Some(node) => {
                    let field = map.field("type");
                    match self.string(node, &field)? {
                        "default" => ReservationType::Default,
                        "capacity-block" => ReservationType::CapacityBlock,
                        other => {
                            let problem = Problem::NotOneOf {
                                found: other.to_string(),
                                valid: &["default", "capacity-block"],
                            };
                            return Err(self.invalid(node.position, &field, problem));
                        }
                    }
                }
            };
            let end = match map.get("end") {
                Some(node) => {
                    let field = map.field("end");
                    if reservation_type == ReservationType::Default {
                        return Err(self.invalid(node.position, &field, Problem::OdcrEnd));
                    }
                    let end = self.duration(node, &field)?;
                    if end.is_zero() {
                        return Err(self.invalid(node.position, &field, Problem::NotPositive));
                    }
                    Some(SimTime::from_millis(end.as_millis()))
                }
                None if reservation_type == ReservationType::CapacityBlock => {
                    return Err(self.invalid(
                        map.node.position,
                        &field,
                        Problem::MissingKey { key: "end" },
                    ));
                }
                None => None,
            };
            let tags = match map.get("tags") {
                Some(node) => self.tags(node, &map.field("tags"))?,
                None => BTreeMap::new(),
            };
            let owner_id = match map.get("ownerID") {
                Some(node) => {
                    let field = map.field("ownerID");
                    let owner = self.written(node);
                    if owner.len() != 12 || !owner.bytes().all(|b| b.is_ascii_digit()) {
                        let problem = Problem::InvalidName {
                            name: owner,
                            reason: "an owner id is 12 digits",
                        };
                        return Err(self.invalid(node.position, &field, problem));
                    }
                    Some(owner)
                }
                None => None,
            };
            let price = match map.get("price") {
                Some(node) => {
                    let field = map.field("price");
                    let text = match &node.value {
                        Value::Str(_) | Value::Int(_) | Value::Float(_) => self.written(node),
                        _ => return Err(self.wrong_type(node, &field, "a price in dollars")),
                    };
                    let Some(price) = Price::parse_dollars(text.trim_start_matches('$')) else {
                        let problem = Problem::InvalidPrice { text };
                        return Err(self.invalid(node.position, &field, problem));
                    };
                    Some(price)
                }
                None => None,
            };
            out.push(ReservationSpec {
                // Reservation ids live as long as the program, as the
                // catalog's zone names do, so offerings stay `Copy`; a
                // scenario is read once per command.
                id: Box::leak(id.to_string().into_boxed_str()),
                instance_type,
                zone: zone.to_string(),
                count: count as u32,
                reservation_type,
                end,
                tags,
                owner_id,
                price,
            });
        }
        Ok(out)
    }

    /// A mapping of non-empty strings to non-empty strings.
    fn tags(&self, node: &Node, field: &str) -> Result<BTreeMap<String, String>, ScenarioError> {
        let Value::Map(pairs) = &node.value else {
            return Err(self.wrong_type(node, field, "a mapping of tag keys to values"));
        };
        let mut tags = BTreeMap::new();
        for (key, value) in pairs {
            let key = self.string(key, field)?;
            let value_field = format!("{field}.{key}");
            let position = value.position;
            let value = self.written(value);
            if value.is_empty() {
                return Err(self.invalid(position, &value_field, Problem::EmptyString));
            }
            if tags.insert(key.to_string(), value).is_some() {
                let problem = Problem::Repeated {
                    name: key.to_string(),
                };
                return Err(self.invalid(position, &value_field, problem));
            }
        }
        Ok(tags)
    }
}
