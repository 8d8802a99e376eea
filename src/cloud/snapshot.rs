//! The bundled pricing snapshot (`pricing-snapshots/`), embedded in the
//! binary so the catalog works offline from any directory. Per-region data
//! lives in separate files so loading one region parses only that region.

/// The instance-type table (hardware facts, all regions).
pub const INSTANCE_TYPES: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/pricing-snapshots/instance_types.csv"
));

/// Region code, price-list location name and On-Demand price source.
pub const REGIONS: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/pricing-snapshots/regions.csv"
));

/// Zone names and zone ids of every region.
pub const ZONES: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/pricing-snapshots/zones.csv"
));

/// The embedded files of one region.
#[derive(Debug, Clone, Copy)]
pub struct RegionFiles {
    /// Region code, e.g. `us-east-1`.
    pub region: &'static str,
    /// `instance_type,usd_per_hour`: On-Demand Linux prices.
    pub on_demand: &'static str,
    /// `instance_type,band_index,savings_pct`: Spot Advisor Linux rows.
    pub spot_advisor: &'static str,
    /// `instance_type,zone_id,usd_per_hour`: 2022-05-31 spot price samples.
    pub spot_samples: &'static str,
}

macro_rules! region_files {
    ($($region:literal),* $(,)?) => {
        &[$(RegionFiles {
            region: $region,
            on_demand: include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"), "/pricing-snapshots/on-demand/", $region, ".csv"
            )),
            spot_advisor: include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"), "/pricing-snapshots/spot-advisor/", $region, ".csv"
            )),
            spot_samples: include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"), "/pricing-snapshots/spot-samples-2022/", $region, ".csv"
            )),
        }),*]
    };
}

/// Every bundled region, sorted by code.
pub const REGION_FILES: &[RegionFiles] = region_files!(
    "af-south-1",
    "ap-east-1",
    "ap-northeast-1",
    "ap-northeast-2",
    "ap-northeast-3",
    "ap-south-1",
    "ap-south-2",
    "ap-southeast-1",
    "ap-southeast-2",
    "ap-southeast-3",
    "ap-southeast-4",
    "ap-southeast-5",
    "ap-southeast-7",
    "ca-central-1",
    "ca-west-1",
    "eu-central-1",
    "eu-central-2",
    "eu-north-1",
    "eu-south-1",
    "eu-south-2",
    "eu-west-1",
    "eu-west-2",
    "eu-west-3",
    "il-central-1",
    "me-central-1",
    "me-south-1",
    "mx-central-1",
    "sa-east-1",
    "us-east-1",
    "us-east-2",
    "us-gov-east-1",
    "us-gov-west-1",
    "us-west-1",
    "us-west-2",
);

/// The files of `region`, if bundled.
pub fn region_files(region: &str) -> Option<&'static RegionFiles> {
    REGION_FILES.iter().find(|files| files.region == region)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The embedded list must match `regions.csv`, which the regeneration
    /// script writes: a region added there needs a line here.
    #[test]
    fn embedded_regions_match_regions_csv() {
        let listed: Vec<&str> = REGIONS
            .lines()
            .skip(1)
            .filter_map(|line| line.split(',').next())
            .collect();
        let embedded: Vec<&str> = REGION_FILES.iter().map(|f| f.region).collect();
        assert_eq!(listed, embedded);
        assert_eq!(embedded.len(), 34);
    }
}
