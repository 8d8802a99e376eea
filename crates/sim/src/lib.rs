//! The discrete-event engine's building blocks: simulated time, the event
//! queue that orders everything that happens, seeded random streams, the
//! node launch-latency model, the cost ledger, the cost lower bound, and
//! exact percentiles for reports.
//!
//! Everything here is deterministic: integer time and money, ties broken by
//! insertion order, random numbers only from named streams derived from the
//! scenario seed.

pub mod engine;
pub mod latency;
pub mod ledger;
pub mod lower_bound;
pub mod percentile;
pub mod queue;
pub mod rng;
pub mod spot;

pub use karpsim_model::time;

use karpsim_deciders::{autoscaler, fast_hash, karpenter, scheduler};
use karpsim_model::{chunked, cloud, cluster, kube, nodepool, pdb, pods};

pub use latency::{LatencyError, LaunchLatency, LogNormalLatency};
pub use ledger::{
    BillingId, BillingRecord, CapacityType, CostLedger, CostTotals, LedgerError, MicroUsd,
    NodeLaunch,
};
pub use percentile::{Percentile, SortedSamples, Summary};
pub use queue::{EventId, EventQueue, Generation, GenerationTable, ScheduleError, Stamp};
pub use rng::{RngStreams, SimRng, Stream};
pub use time::{DurationParseError, SimDuration, SimTime, parse_duration};
