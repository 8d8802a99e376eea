//! End-to-end tests of the `karpsim` binary: what a user types and sees.

mod instance_types;
mod pricing;
mod run;
mod util;
