//! A synthetic catalog shaped like upstream Karpenter's test cloud provider
//! (core: pkg/cloudprovider/fake/instancetype.go `InstanceTypes(n)`), so
//! conformance tests and the scheduling benchmark run on the same instance
//! types as upstream's.
//!
//! Type `i` (0-based) is `fake-it-{i}` with `i+1` vCPU, `2(i+1)` GiB memory
//! and `10(i+1)` pods; kube-reserved 100m CPU and 10Mi memory; five
//! offerings (spot in zones 1–2, on-demand in zones 1–3), all priced
//! `0.1·vCPU + 0.1·memory bytes/1e9` dollars an hour. Upstream also gives the
//! types three operating systems and test-only labels (`size`, `special`,
//! `integer`); here they are linux/amd64 only.

use super::allocatable::Overhead;
use super::catalog::{Catalog, InstanceType, Zone};
use super::offering::{CapacityType, Offering};
use super::price::Price;
use super::spec::{Arch, InstanceSpec, UsageClasses};
use crate::kube::labels::{LABEL_ARCH, LABEL_INSTANCE_TYPE, LABEL_OS, LABEL_TOPOLOGY_REGION};
use crate::kube::resources::{GIB, MIB, ResourceKind, Resources};

/// Region name of the fake catalog.
pub const FAKE_REGION: &str = "test-region";

/// The three fake zones (`test-zone-1` … `test-zone-3`).
pub const FAKE_ZONES: [Zone; 3] = [
    Zone {
        name: "test-zone-1",
        id: "tz1",
    },
    Zone {
        name: "test-zone-2",
        id: "tz2",
    },
    Zone {
        name: "test-zone-3",
        id: "tz3",
    },
];

/// Upstream `PriceFromResources`: 0.1 $/h per vCPU plus 0.1 $/h per 1e9
/// bytes of memory, rounded to the micro-dollar.
pub fn price_from_resources(cpu_millis: i64, memory_bytes: i64) -> Price {
    let dollars = 0.1 * cpu_millis as f64 / 1000.0 + 0.1 * memory_bytes as f64 / 1e9;
    Price::from_micros((dollars * 1e6).round() as i64)
}

/// One fake instance type with the given capacity and offerings
/// (`(zone index, capacity type)` pairs; all available, all at the price of
/// [`price_from_resources`]).
pub fn instance_type(
    name: &str,
    arch: Arch,
    capacity: Resources,
    offerings: &[(usize, CapacityType)],
) -> InstanceType {
    let price = price_from_resources(capacity.cpu_millis(), capacity.memory_bytes());
    let overhead = Overhead {
        kube_reserved: Resources::cpu_mem(100, 10 * MIB),
        ..Overhead::default()
    };
    let vcpu = (capacity.cpu_millis() / 1000).max(0) as u32;
    let spec = InstanceSpec {
        name: name.to_string(),
        category: "fake".into(),
        family: "fake".into(),
        generation: 1,
        size: String::new(),
        vcpu,
        memory_mib: (capacity.memory_bytes() / MIB).max(0) as u64,
        arch,
        cpu_manufacturer: String::new(),
        cpu_clock_mhz: None,
        hypervisor: String::new(),
        capability_flex: false,
        encryption_in_transit: false,
        network_bandwidth_mbps: None,
        ebs_bandwidth_mbps: None,
        local_nvme_gb: None,
        instance_store_gb: None,
        gpu: None,
        accelerator: None,
        efa: 0,
        enis_default_card: 0,
        ipv4_per_eni: 0,
        pod_eni: 0,
        usage_classes: UsageClasses::Known { spot: true },
        spot_advisor_regions: 0,
    };
    let mut labels = vec![
        (LABEL_ARCH, arch.label().to_string()),
        (LABEL_INSTANCE_TYPE, name.to_string()),
        (LABEL_OS, "linux".to_string()),
        (LABEL_TOPOLOGY_REGION, FAKE_REGION.to_string()),
    ];
    labels.sort();
    InstanceType {
        spec,
        labels,
        capacity,
        overhead,
        allocatable: capacity - overhead.total(),
        on_demand_price: price,
        offerings: offerings
            .iter()
            .filter_map(|&(zone, capacity_type)| {
                let zone = FAKE_ZONES.get(zone)?;
                Some(Offering {
                    zone: zone.name,
                    zone_id: zone.id,
                    capacity_type,
                    price,
                    available: true,
                    interruption_band: None,
                    reservation: None,
                })
            })
            .collect(),
    }
}

/// Upstream's default offerings: spot in zones 1–2, on-demand in zones 1–3.
pub const DEFAULT_OFFERINGS: [(usize, CapacityType); 5] = [
    (0, CapacityType::Spot),
    (1, CapacityType::Spot),
    (0, CapacityType::OnDemand),
    (1, CapacityType::OnDemand),
    (2, CapacityType::OnDemand),
];

/// Upstream `fake.InstanceTypes(total)` as a catalog.
pub fn instance_types(total: usize) -> Catalog {
    instance_types_of((0..total as i64).map(|i| {
        Resources::cpu_mem((i + 1) * 1000, (i + 1) * 2 * GIB).with(ResourceKind::Pods, (i + 1) * 10)
    }))
}

/// A fake-region catalog of amd64 types `fake-it-0`, `fake-it-1`, … with
/// these capacities, each offered as [`DEFAULT_OFFERINGS`].
pub fn instance_types_of(capacities: impl IntoIterator<Item = Resources>) -> Catalog {
    let types = capacities
        .into_iter()
        .enumerate()
        .map(|(i, capacity)| {
            instance_type(
                &format!("fake-it-{i}"),
                Arch::Amd64,
                capacity,
                &DEFAULT_OFFERINGS,
            )
        })
        .collect();
    catalog(types)
}

/// A fake-region catalog of the given types.
pub fn catalog(types: Vec<InstanceType>) -> Catalog {
    Catalog::from_parts(FAKE_REGION, FAKE_ZONES.to_vec(), types)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// core: pkg/cloudprovider/fake/instancetype.go `InstanceTypes` doc:
    /// 1 vCPU / 2Gi / 10 pods, then 2 vCPU / 4Gi / 20 pods, …
    #[test]
    fn types_grow_linearly_with_upstream_prices() {
        let catalog = instance_types(3);
        let second = catalog.get("fake-it-1").unwrap();
        assert_eq!(second.capacity.cpu_millis(), 2000);
        assert_eq!(second.capacity.memory_bytes(), 4 * GIB);
        assert_eq!(second.capacity.pods(), 20);
        assert_eq!(second.allocatable.cpu_millis(), 1900);
        assert_eq!(second.allocatable.memory_bytes(), 4 * GIB - 10 * MIB);
        // 0.2 + 0.1 × 4·2^30 / 1e9 = 0.6294967296 $/h
        assert_eq!(second.on_demand_price, Price::from_micros(629_497));
        assert_eq!(second.offerings.len(), 5);
        assert_eq!(
            second
                .offerings
                .iter()
                .filter(|o| o.capacity_type == CapacityType::Spot)
                .count(),
            2
        );
    }
}
