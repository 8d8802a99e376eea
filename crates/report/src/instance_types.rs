//! The `karpsim instance-types` report: a region's catalog, or the types a
//! set of NodePools allows, with allocatable, prices and — for NodePools —
//! how many types each requirement excluded.

use karpsim_catalog::BundledCatalog;
use std::collections::BTreeMap;
use std::io::{self, Write};

use serde::Serialize;

use super::table::{Align, write_table};
use crate::cloud::nodeclass::NodeClassSettings;
use crate::cloud::{CapacityType, Catalog, CatalogError, InstanceType, Price};
use crate::karpenter::instance_types::{
    ExclusionCount, MinValuesShortfall, filter_instance_types, template_requirements,
};
use crate::kube::requirements::Requirements;
use crate::kube::resources::{MIB, ResourceKind};
use crate::nodepools::Manifests;

/// The leading CSV columns, a stable contract for scripts.
pub const CSV_HEADER: [&str; 9] = [
    "instance_type",
    "vcpu",
    "memory_mib",
    "arch",
    "allocatable_cpu_millicores",
    "allocatable_memory_mib",
    "max_pods",
    "on_demand_usd_per_hour",
    "spot_usd_per_hour_min",
];

/// Further CSV columns, after [`CSV_HEADER`].
const CSV_EXTRA: [&str; 9] = [
    "allocatable_ephemeral_storage_mib",
    "gpu_count",
    "gpu_name",
    "category",
    "family",
    "generation",
    "spot_interruption_band",
    "zones",
    "nodepool",
];

/// One listed instance type: one field per column of the listing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Row {
    /// e.g. `m5.large`.
    pub instance_type: String,
    /// vCPUs.
    pub vcpu: u32,
    /// Memory in MiB.
    pub memory_mib: u64,
    /// `amd64` or `arm64`.
    pub arch: &'static str,
    /// Allocatable CPU.
    pub allocatable_cpu_millicores: i64,
    /// Allocatable memory, whole MiB (rounded down).
    pub allocatable_memory_mib: i64,
    /// Allocatable ephemeral storage, whole MiB (rounded down).
    pub allocatable_ephemeral_storage_mib: i64,
    /// Pod capacity.
    pub max_pods: i64,
    /// NVIDIA/AMD GPUs.
    pub gpu_count: i64,
    /// GPU model label, if any.
    pub gpu_name: Option<String>,
    /// e.g. `m`.
    pub category: String,
    /// e.g. `m5`.
    pub family: String,
    /// e.g. 5.
    pub generation: u32,
    /// On-demand price (absent when the NodePool does not allow on-demand).
    pub on_demand_usd_per_hour: Option<String>,
    /// Cheapest spot price over the allowed zones (absent when not sold or
    /// not allowed).
    pub spot_usd_per_hour_min: Option<String>,
    /// Spot Advisor interruption band.
    pub spot_interruption_band: Option<&'static str>,
    /// Zones with an allowed, available offering.
    pub zones: Vec<&'static str>,
    /// The NodePool that allows the type (NodePool listings only).
    pub nodepool: Option<String>,
    #[serde(skip)]
    on_demand: Option<Price>,
}

/// One NodePool's filter outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NodePoolSummary {
    /// NodePool name.
    pub name: String,
    /// Referenced EC2NodeClass.
    pub node_class: String,
    /// Whether that EC2NodeClass was in the given files (else defaults apply).
    pub node_class_found: bool,
    /// Types in the region's catalog for the node class.
    pub catalog_types: usize,
    /// Types compatible with the requirements.
    pub compatible: usize,
    /// Types the NodePool can launch (0 when minValues cannot be met).
    pub allowed: usize,
    /// What excluded the others.
    pub exclusions: Vec<Exclusion>,
    /// Unmet minValues.
    pub min_values_shortfalls: Vec<Shortfall>,
}

/// Serializable [`ExclusionCount`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Exclusion {
    /// The failing requirement or check.
    pub cause: String,
    /// Types for which it was the first failing check.
    pub first: usize,
    /// Types that fail it.
    pub total: usize,
}

/// Serializable [`MinValuesShortfall`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Shortfall {
    /// Label key.
    pub key: String,
    /// minValues.
    pub required: u32,
    /// Distinct values available.
    pub available: usize,
}

/// A full listing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Listing {
    /// Region code.
    pub region: String,
    /// Per-NodePool summaries (empty for a plain catalog listing).
    pub nodepools: Vec<NodePoolSummary>,
    /// The listed types.
    pub instance_types: Vec<Row>,
    /// Notes for the user (e.g. a missing EC2NodeClass).
    #[serde(skip)]
    pub notes: Vec<String>,
}

/// Row order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SortBy {
    /// By instance-type name.
    #[default]
    Name,
    /// By on-demand price, then name.
    Price,
}

/// Lists the whole catalog of `region` (default node-class settings).
pub fn catalog_listing(region: &str, sort: SortBy) -> Result<Listing, CatalogError> {
    let catalog = Catalog::load(region, &NodeClassSettings::default())?;
    let everything = Requirements::new();
    let mut rows: Vec<Row> = catalog
        .instance_types()
        .iter()
        .map(|t| row(t, &everything, None))
        .collect();
    sort_rows(&mut rows, sort);
    Ok(Listing {
        region: catalog.region().to_string(),
        nodepools: Vec::new(),
        instance_types: rows,
        notes: Vec::new(),
    })
}

/// Lists the types each NodePool in `manifests` allows in `region`, with
/// allocatable shaped by the NodePool's EC2NodeClass.
pub fn nodepool_listing(
    region: &str,
    manifests: &Manifests,
    sort: SortBy,
) -> Result<Listing, CatalogError> {
    let mut catalogs: BTreeMap<String, Catalog> = BTreeMap::new();
    let mut listing = Listing {
        region: region.to_string(),
        nodepools: Vec::new(),
        instance_types: Vec::new(),
        notes: Vec::new(),
    };
    for pool in &manifests.nodepools {
        let class_name = &pool.node_class_ref.name;
        let class = manifests.nodeclasses.iter().find(|c| &c.name == class_name);
        if class.is_none() {
            listing.notes.push(format!(
                "NodePool {}: EC2NodeClass {class_name:?} is not in the given files; using EC2NodeClass defaults (AL2023, no kubelet overrides)",
                pool.name
            ));
        }
        let key = class.map_or_else(String::new, |c| c.name.clone());
        if !catalogs.contains_key(&key) {
            let settings = class.map(|c| c.settings).unwrap_or_default();
            catalogs.insert(key.clone(), Catalog::load(region, &settings)?);
        }
        let catalog = &catalogs[&key];
        listing.region = catalog.region().to_string();
        let result = filter_instance_types(pool, catalog);
        let template = template_requirements(pool);
        listing.instance_types.extend(
            result
                .allowed
                .iter()
                .map(|&i| row(&catalog.instance_types()[i], &template, Some(&pool.name))),
        );
        listing.nodepools.push(NodePoolSummary {
            name: pool.name.clone(),
            node_class: class_name.clone(),
            node_class_found: class.is_some(),
            catalog_types: catalog.len(),
            compatible: result.compatible,
            allowed: result.allowed.len(),
            exclusions: result.exclusions.iter().map(exclusion).collect(),
            min_values_shortfalls: result.min_values_shortfalls.iter().map(shortfall).collect(),
        });
    }
    sort_rows(&mut listing.instance_types, sort);
    Ok(listing)
}

fn exclusion(e: &ExclusionCount) -> Exclusion {
    Exclusion {
        cause: e.cause.clone(),
        first: e.first,
        total: e.total,
    }
}

fn shortfall(s: &MinValuesShortfall) -> Shortfall {
    Shortfall {
        key: s.key.clone(),
        required: s.required,
        available: s.available,
    }
}

fn sort_rows(rows: &mut [Row], sort: SortBy) {
    match sort {
        SortBy::Name => rows
            .sort_by(|a, b| (&a.instance_type, &a.nodepool).cmp(&(&b.instance_type, &b.nodepool))),
        SortBy::Price => rows.sort_by(|a, b| {
            (
                a.on_demand.is_none(),
                a.on_demand,
                &a.instance_type,
                &a.nodepool,
            )
                .cmp(&(
                    b.on_demand.is_none(),
                    b.on_demand,
                    &b.instance_type,
                    &b.nodepool,
                ))
        }),
    }
}

/// A row for `instance_type`, with prices over the offerings `allowed`
/// permits.
fn row(instance_type: &InstanceType, allowed: &Requirements, nodepool: Option<&str>) -> Row {
    let offerings: Vec<_> = instance_type
        .offerings
        .iter()
        .filter(|o| o.available && o.is_compatible(allowed))
        .collect();
    let cheapest = |ct: CapacityType| {
        offerings
            .iter()
            .filter(|o| o.capacity_type == ct)
            .min_by_key(|o| o.price)
    };
    let on_demand = cheapest(CapacityType::OnDemand).map(|o| o.price);
    let spot = cheapest(CapacityType::Spot);
    let mut zones: Vec<&'static str> = offerings.iter().map(|o| o.zone).collect();
    zones.sort_unstable();
    zones.dedup();
    let alloc = &instance_type.allocatable;
    Row {
        instance_type: instance_type.name().to_string(),
        vcpu: instance_type.vcpu(),
        memory_mib: instance_type.memory_mib(),
        arch: instance_type.arch().label(),
        allocatable_cpu_millicores: alloc.cpu_millis(),
        allocatable_memory_mib: alloc.memory_bytes().div_euclid(MIB),
        allocatable_ephemeral_storage_mib: alloc.ephemeral_bytes().div_euclid(MIB),
        max_pods: instance_type.capacity.pods(),
        gpu_count: instance_type.capacity.get(ResourceKind::NvidiaGpu)
            + instance_type.capacity.get(ResourceKind::AmdGpu),
        gpu_name: instance_type.spec.gpu.as_ref().map(|g| g.name.clone()),
        category: instance_type.category().to_string(),
        family: instance_type.family().to_string(),
        generation: instance_type.generation(),
        on_demand_usd_per_hour: on_demand.map(Price::decimal),
        spot_usd_per_hour_min: spot.map(|o| o.price.decimal()),
        spot_interruption_band: spot.and_then(|o| o.interruption_band).map(|b| b.label()),
        zones,
        nodepool: nodepool.map(str::to_string),
        on_demand,
    }
}

/// Writes the listing as CSV.
pub fn write_csv(listing: &Listing, out: &mut impl Write) -> io::Result<()> {
    let mut writer = csv::Writer::from_writer(out);
    let header: Vec<&str> = CSV_HEADER.iter().chain(&CSV_EXTRA).copied().collect();
    writer.write_record(&header).map_err(csv_io)?;
    for r in &listing.instance_types {
        writer
            .write_record([
                r.instance_type.clone(),
                r.vcpu.to_string(),
                r.memory_mib.to_string(),
                r.arch.to_string(),
                r.allocatable_cpu_millicores.to_string(),
                r.allocatable_memory_mib.to_string(),
                r.max_pods.to_string(),
                r.on_demand_usd_per_hour.clone().unwrap_or_default(),
                r.spot_usd_per_hour_min.clone().unwrap_or_default(),
                r.allocatable_ephemeral_storage_mib.to_string(),
                r.gpu_count.to_string(),
                r.gpu_name.clone().unwrap_or_default(),
                r.category.clone(),
                r.family.clone(),
                r.generation.to_string(),
                r.spot_interruption_band.unwrap_or_default().to_string(),
                r.zones.join(";"),
                r.nodepool.clone().unwrap_or_default(),
            ])
            .map_err(csv_io)?;
    }
    writer.flush()
}

/// Keeps the kind of an I/O error the CSV writer wraps (a closed pipe must
/// stay recognisable as one).
fn csv_io(error: csv::Error) -> io::Error {
    match error.into_kind() {
        csv::ErrorKind::Io(error) => error,
        other => io::Error::other(format!("{other:?}")),
    }
}

/// Writes the listing as pretty JSON.
pub fn write_json(listing: &Listing, out: &mut impl Write) -> io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, listing)?;
    writeln!(out)
}

/// Writes the listing as an aligned table.
pub fn write_table_text(listing: &Listing, out: &mut impl Write) -> io::Result<()> {
    let with_pool = !listing.nodepools.is_empty();
    let mut header = vec![
        ("INSTANCE TYPE", Align::Left),
        ("VCPU", Align::Right),
        ("MEMORY", Align::Right),
        ("ARCH", Align::Left),
        ("ALLOC CPU", Align::Right),
        ("ALLOC MEMORY", Align::Right),
        ("PODS", Align::Right),
        ("GPU", Align::Right),
        ("ON-DEMAND $/H", Align::Right),
        ("SPOT $/H (MIN)", Align::Right),
        ("SPOT INTERRUPT", Align::Left),
        ("ZONES", Align::Right),
    ];
    if with_pool {
        header.push(("NODEPOOL", Align::Left));
    }
    let rows: Vec<Vec<String>> = listing
        .instance_types
        .iter()
        .map(|r| {
            let mut cells = vec![
                r.instance_type.clone(),
                r.vcpu.to_string(),
                format!("{}Mi", r.memory_mib),
                r.arch.to_string(),
                format!("{}m", r.allocatable_cpu_millicores),
                format!("{}Mi", r.allocatable_memory_mib),
                r.max_pods.to_string(),
                if r.gpu_count > 0 {
                    format!("{} {}", r.gpu_count, r.gpu_name.as_deref().unwrap_or(""))
                } else {
                    "-".to_string()
                },
                r.on_demand_usd_per_hour
                    .clone()
                    .unwrap_or_else(|| "-".into()),
                r.spot_usd_per_hour_min
                    .clone()
                    .unwrap_or_else(|| "-".into()),
                r.spot_interruption_band.unwrap_or("-").to_string(),
                r.zones.len().to_string(),
            ];
            if with_pool {
                cells.push(r.nodepool.clone().unwrap_or_default());
            }
            cells
        })
        .collect();
    write_table(out, &header, &rows)
}

/// The human summary of each NodePool's filter (for stderr).
pub fn write_nodepool_summaries(listing: &Listing, out: &mut impl Write) -> io::Result<()> {
    for note in &listing.notes {
        writeln!(out, "note: {note}")?;
    }
    for pool in &listing.nodepools {
        writeln!(
            out,
            "NodePool {}: {} of {} instance types in {} are allowed",
            pool.name, pool.allowed, pool.catalog_types, listing.region
        )?;
        for e in &pool.exclusions {
            let also = if e.total > e.first {
                format!(" ({} fail it in all)", e.total)
            } else {
                String::new()
            };
            writeln!(out, "  {:>5} excluded by {}{also}", e.first, e.cause)?;
        }
        for s in &pool.min_values_shortfalls {
            writeln!(
                out,
                "  minValues not met: {} needs {} distinct values, the {} compatible types offer {}; Karpenter (Strict minValues policy) launches nothing from this NodePool",
                s.key, s.required, pool.compatible, s.available
            )?;
        }
        if pool.allowed == 0 && pool.min_values_shortfalls.is_empty() {
            writeln!(
                out,
                "  no instance type is allowed: pods that need this NodePool will stay pending"
            )?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
