//! The AWS side: the instance-type catalog (capacity, allocatable, labels,
//! offerings and prices per zone and capacity type) and the node-class
//! settings that shape a node's capacity.

pub mod allocatable;
pub mod catalog;
pub mod fake;
pub mod labels;
pub mod nodeclass;
pub mod offering;
pub mod overlay;
pub mod price;
pub mod requirements;
pub mod reservation;
pub mod spec;

pub use allocatable::{CapacityOptions, NodeResources, Overhead};
pub use catalog::{Catalog, CatalogError, InstanceType, Zone};
pub use offering::{CapacityType, InterruptionBand, Offering};
pub use price::Price;
pub use reservation::{CapacityReservation, ReservationSelectorTerm, ReservationType};
pub use spec::{Arch, InstanceSpec};
