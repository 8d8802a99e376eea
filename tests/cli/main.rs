//! End-to-end tests of the `karpsim` binary: what a user types and sees.

mod chart;
mod instance_types;
mod run;
mod util;
