//! The AWS side: the instance-type catalog (capacity, allocatable, labels,
//! offerings and prices per zone and capacity type) and the node-class
//! settings that shape a node's capacity.

pub mod nodeclass;
