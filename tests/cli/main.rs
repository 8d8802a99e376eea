//! End-to-end tests of the `karpsim` binary: what a user types and sees.

mod chart;
mod compare;
mod explain;
mod golden;
mod instance_types;
mod manifests;
mod parallel;
mod plan;
mod pricing;
mod report;
mod run;
mod signals;
mod sweep;
mod trace;
mod util;
