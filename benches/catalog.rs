//! Benchmarks of loading one region's catalog from the embedded snapshot
//! (parse, allocatable for every type, labels, offerings and spot prices).

use karpsim_catalog::BundledCatalog;
use karpsim_model::cloud::Catalog;
use karpsim_model::cloud::nodeclass::NodeClassSettings;

fn main() {
    divan::main();
}

/// Loads a region's catalog with default EC2NodeClass settings.
#[divan::bench(args = ["us-east-1", "eu-west-1"])]
fn load_region(region: &str) -> Catalog {
    Catalog::load(divan::black_box(region), &NodeClassSettings::default())
        .expect("bundled region loads")
}
