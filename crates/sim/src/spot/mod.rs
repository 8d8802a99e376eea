//! The spot market as simulation inputs: spot price histories replayed as
//! price changes ([`history`]), interruption traces ([`trace`]), and the
//! interruption model ([`interruptions`]: Spot Advisor hazard, capacity
//! storms, trace notices, and the rebalance → notice → reclaim timeline),
//! with a planner over a fleet known in advance ([`plan`]).
//!
//! Everything here is pure and seeded: readers take text and return values
//! or errors that name the file, row and field; random choices take the
//! caller's generator. The engine owns the event queue and decides what
//! Karpenter or Cluster Autoscaler does about each interruption.

pub mod files;
pub mod history;
pub mod interruptions;
pub mod plan;
pub mod timestamp;
pub mod trace;

pub use files::{RowRef, SpotFileError};
pub use history::{PriceChange, PriceHistory, PricePoint};
pub use interruptions::{
    DEFAULT_REBALANCE_LEAD, Firing, Fraction, InterruptionCause, InterruptionModel,
    InterruptionNotice, InterruptionSettings, InterruptionTimeline, NOTICE_TO_RECLAIM, NameFilter,
    OfferingOutage, SpotNode, Storm, Trigger, TriggerKind, band_hazard_per_hour,
    band_monthly_probability, draw_node_interruption, interruption_timeline, select_storm_victims,
};
pub use plan::{FleetNode, InterruptionPlan, SpotFleet};
pub use timestamp::{RowTime, Timestamp, TimestampError};
pub use trace::{TraceNotice, parse_trace};
