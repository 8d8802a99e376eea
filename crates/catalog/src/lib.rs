//! The bundled AWS data (`pricing-snapshots/`, embedded in the binary) and
//! pinned snapshot files, and the region catalogs built from them:
//! `Catalog::load` and friends through [`BundledCatalog`].

mod load;
pub mod snapshot;
mod table;

pub use load::{BundledCatalog, bundled_on_demand, zones_of};
pub use table::parse_instance_table;

use karpsim_model::cloud;
#[cfg(test)]
use karpsim_model::kube;

#[cfg(test)]
mod docs_tests;
#[cfg(test)]
mod requirements_tests;
