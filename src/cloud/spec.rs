//! The hardware facts of an EC2 instance type, as read from the bundled
//! snapshot (`pricing-snapshots/instance_types.csv`): everything the
//! allocatable model and the label derivation need, and nothing regional.

use std::collections::BTreeMap;

/// A CPU architecture, spelled as the `kubernetes.io/arch` label spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Arch {
    /// `amd64` (EC2's `x86_64`).
    Amd64,
    /// `arm64` (Graviton).
    Arm64,
}

impl Arch {
    /// The Kubernetes label value.
    pub const fn label(self) -> &'static str {
        match self {
            Arch::Amd64 => "amd64",
            Arch::Arm64 => "arm64",
        }
    }
}

/// The single GPU kind of an instance type (Karpenter only labels a type's
/// GPU when it has exactly one kind, and so does the snapshot).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gpu {
    /// Lower-kebab-case model name, e.g. `h100`.
    pub name: String,
    /// Lower-case manufacturer: `nvidia`, `amd` or `habana`.
    pub manufacturer: String,
    /// Number of GPUs (0 for fractional-GPU types such as g6f).
    pub count: u32,
    /// Total GPU memory of the instance in MiB.
    pub memory_mib: u64,
}

/// The single inference/training accelerator kind of an instance type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Accelerator {
    /// Lower-kebab-case name, e.g. `inferentia2`, `trainium`.
    pub name: String,
    /// Lower-case manufacturer, e.g. `aws`, `qualcomm`.
    pub manufacturer: String,
    /// Number of devices.
    pub count: u32,
}

impl Accelerator {
    /// Whether these are AWS Neuron devices (Inferentia/Trainium), which the
    /// Neuron device plugin exposes as `aws.amazon.com/neuron`.
    pub fn is_neuron(&self) -> bool {
        self.manufacturer == "aws"
    }

    /// NeuronCores per device (`aws.amazon.com/neuroncore` = devices × this).
    /// EC2 reports it in `NeuronInfo`; the snapshot does not carry it, so it
    /// is keyed by device name (values as Karpenter's instance-type docs show).
    pub fn neuron_cores_per_device(&self) -> u32 {
        match self.name.as_str() {
            "inferentia" => 4,
            "inferentia2" | "trainium" => 2,
            "trainium2" => 8,
            _ => 0,
        }
    }
}

/// Which purchase options EC2 supports for a type, when known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UsageClasses {
    /// From DescribeInstanceTypes `SupportedUsageClasses`: whether `spot` is
    /// among them.
    Known {
        /// Spot is supported.
        spot: bool,
    },
    /// The snapshot has no usage classes for this type (launched after the
    /// 2025-03 listing).
    Unknown,
}

/// One instance type's hardware, independent of region and node class.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstanceSpec {
    /// e.g. `m5.large`.
    pub name: String,
    /// e.g. `m`.
    pub category: String,
    /// e.g. `m5`.
    pub family: String,
    /// e.g. 5.
    pub generation: u32,
    /// e.g. `large`, `metal-24xl`.
    pub size: String,
    /// Default vCPUs.
    pub vcpu: u32,
    /// Memory in MiB as EC2 reports it (before any overhead).
    pub memory_mib: u64,
    /// The architecture.
    pub arch: Arch,
    /// `intel`, `amd`, `aws` or `apple`.
    pub cpu_manufacturer: String,
    /// Sustained clock speed in MHz.
    pub cpu_clock_mhz: Option<u32>,
    /// `nitro`, `xen`, or empty for bare metal.
    pub hypervisor: String,
    /// A `*-flex` type.
    pub capability_flex: bool,
    /// Supports encryption in transit.
    pub encryption_in_transit: bool,
    /// Baseline network bandwidth in Mbit/s.
    pub network_bandwidth_mbps: Option<u64>,
    /// Maximum EBS bandwidth in Mbit/s.
    pub ebs_bandwidth_mbps: Option<u64>,
    /// Total local NVMe in GB (EC2 `TotalSizeInGB`), NVMe types only.
    pub local_nvme_gb: Option<u64>,
    /// Total instance store in GB, NVMe or not (what RAID0 can use).
    pub instance_store_gb: Option<u64>,
    /// The GPU kind, if any.
    pub gpu: Option<Gpu>,
    /// The accelerator kind, if any.
    pub accelerator: Option<Accelerator>,
    /// EFA interfaces (`vpc.amazonaws.com/efa`).
    pub efa: u32,
    /// Maximum ENIs on the default network card.
    pub enis_default_card: u32,
    /// IPv4 addresses per ENI.
    pub ipv4_per_eni: u32,
    /// Branch ENIs for security groups for pods (0 if not trunking capable).
    pub pod_eni: u32,
    /// Supported purchase options.
    pub usage_classes: UsageClasses,
    /// How many Spot Advisor regions list the type for Linux.
    pub spot_advisor_regions: u32,
}

/// Why the bundled instance-type table could not be read (a packaging bug,
/// reported rather than panicking).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file} line {line}: {reason}")]
pub struct SnapshotError {
    /// The snapshot file.
    pub file: String,
    /// 1-based line number.
    pub line: u64,
    /// What is wrong.
    pub reason: String,
}

/// Reads rows of a bundled CSV as `column name → value` lookups.
pub(crate) struct CsvRows<'a> {
    file: &'a str,
    reader: csv::Reader<&'a [u8]>,
    columns: BTreeMap<String, usize>,
}

/// One row of a bundled CSV.
pub(crate) struct CsvRow<'r> {
    file: &'r str,
    line: u64,
    record: csv::StringRecord,
    columns: &'r BTreeMap<String, usize>,
}

impl<'a> CsvRows<'a> {
    pub(crate) fn new(file: &'a str, text: &'a str) -> Result<Self, SnapshotError> {
        let mut reader = csv::Reader::from_reader(text.as_bytes());
        let headers = reader.headers().map_err(|e| SnapshotError {
            file: file.to_string(),
            line: 1,
            reason: e.to_string(),
        })?;
        let columns = headers
            .iter()
            .enumerate()
            .map(|(i, h)| (h.to_string(), i))
            .collect();
        Ok(CsvRows {
            file,
            reader,
            columns,
        })
    }

    /// Calls `each` for every row, stopping at the first error.
    pub(crate) fn for_each(
        mut self,
        mut each: impl FnMut(&CsvRow<'_>) -> Result<(), SnapshotError>,
    ) -> Result<(), SnapshotError> {
        let mut record = csv::StringRecord::new();
        loop {
            let line = self.reader.position().line();
            match self.reader.read_record(&mut record) {
                Ok(false) => return Ok(()),
                Ok(true) => {}
                Err(e) => {
                    return Err(SnapshotError {
                        file: self.file.to_string(),
                        line,
                        reason: e.to_string(),
                    });
                }
            }
            let row = CsvRow {
                file: self.file,
                line,
                record: std::mem::take(&mut record),
                columns: &self.columns,
            };
            each(&row)?;
            record = row.record;
        }
    }
}

impl CsvRow<'_> {
    pub(crate) fn error(&self, reason: impl Into<String>) -> SnapshotError {
        SnapshotError {
            file: self.file.to_string(),
            line: self.line,
            reason: reason.into(),
        }
    }

    /// The text of a column (empty if the column is absent).
    pub(crate) fn text(&self, column: &str) -> &str {
        self.columns
            .get(column)
            .and_then(|&i| self.record.get(i))
            .unwrap_or("")
    }

    /// A required number.
    pub(crate) fn number<T: std::str::FromStr>(&self, column: &str) -> Result<T, SnapshotError> {
        let text = self.text(column);
        text.parse()
            .map_err(|_| self.error(format!("{column}: not a number: {text:?}")))
    }

    /// An optional number (empty means `None`).
    pub(crate) fn optional<T: std::str::FromStr>(
        &self,
        column: &str,
    ) -> Result<Option<T>, SnapshotError> {
        if self.text(column).is_empty() {
            Ok(None)
        } else {
            self.number(column).map(Some)
        }
    }

    fn flag(&self, column: &str) -> Result<bool, SnapshotError> {
        match self.text(column) {
            "true" => Ok(true),
            "false" => Ok(false),
            other => Err(self.error(format!("{column}: not true/false: {other:?}"))),
        }
    }
}

impl InstanceSpec {
    fn from_row(row: &CsvRow<'_>) -> Result<InstanceSpec, SnapshotError> {
        let arch = match row.text("arch") {
            "amd64" => Arch::Amd64,
            "arm64" => Arch::Arm64,
            other => return Err(row.error(format!("unknown arch {other:?}"))),
        };
        let gpu = (!row.text("gpu_name").is_empty())
            .then(|| -> Result<Gpu, SnapshotError> {
                Ok(Gpu {
                    name: row.text("gpu_name").to_string(),
                    manufacturer: row.text("gpu_manufacturer").to_string(),
                    count: row.number("gpu_count")?,
                    memory_mib: row.optional("gpu_memory_mib")?.unwrap_or(0),
                })
            })
            .transpose()?;
        let accelerator = (!row.text("accelerator_name").is_empty())
            .then(|| -> Result<Accelerator, SnapshotError> {
                Ok(Accelerator {
                    name: row.text("accelerator_name").to_string(),
                    manufacturer: row.text("accelerator_manufacturer").to_string(),
                    count: row.number("accelerator_count")?,
                })
            })
            .transpose()?;
        let usage_classes = match row.text("usage_classes") {
            "" => UsageClasses::Unknown,
            classes => UsageClasses::Known {
                spot: classes.split(';').any(|c| c == "spot"),
            },
        };
        Ok(InstanceSpec {
            name: row.text("name").to_string(),
            category: row.text("category").to_string(),
            family: row.text("family").to_string(),
            generation: row.number("generation")?,
            size: row.text("size").to_string(),
            vcpu: row.number("vcpu")?,
            memory_mib: row.number("memory_mib")?,
            arch,
            cpu_manufacturer: row.text("cpu_manufacturer").to_string(),
            cpu_clock_mhz: row.optional("cpu_clock_mhz")?,
            hypervisor: row.text("hypervisor").to_string(),
            capability_flex: row.flag("capability_flex")?,
            encryption_in_transit: row.flag("encryption_in_transit")?,
            network_bandwidth_mbps: row.optional("network_bandwidth_mbps")?,
            ebs_bandwidth_mbps: row.optional("ebs_bandwidth_mbps")?,
            local_nvme_gb: row.optional("local_nvme_gb")?,
            instance_store_gb: row.optional("instance_store_gb")?,
            gpu,
            accelerator,
            efa: row.number("efa")?,
            enis_default_card: row.number("enis_default_card")?,
            ipv4_per_eni: row.number("ipv4_per_eni")?,
            pod_eni: row.number("pod_eni")?,
            usage_classes,
            spot_advisor_regions: row.number("spot_advisor_regions")?,
        })
    }

    /// Parses the instance-type table (the bundled snapshot's format).
    pub fn parse_table(file: &str, text: &str) -> Result<Vec<InstanceSpec>, SnapshotError> {
        let mut specs = Vec::new();
        CsvRows::new(file, text)?.for_each(|row| {
            specs.push(InstanceSpec::from_row(row)?);
            Ok(())
        })?;
        Ok(specs)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// An m5.large as EC2 describes it (3 ENIs × 10 IPv4, 8 GiB, 2 vCPU).
    pub(crate) fn m5_large() -> InstanceSpec {
        InstanceSpec {
            name: "m5.large".into(),
            category: "m".into(),
            family: "m5".into(),
            generation: 5,
            size: "large".into(),
            vcpu: 2,
            memory_mib: 8192,
            arch: Arch::Amd64,
            cpu_manufacturer: "intel".into(),
            cpu_clock_mhz: Some(3100),
            hypervisor: "nitro".into(),
            capability_flex: false,
            encryption_in_transit: false,
            network_bandwidth_mbps: Some(750),
            ebs_bandwidth_mbps: Some(4750),
            local_nvme_gb: None,
            instance_store_gb: None,
            gpu: None,
            accelerator: None,
            efa: 0,
            enis_default_card: 3,
            ipv4_per_eni: 10,
            pod_eni: 9,
            usage_classes: UsageClasses::Known { spot: true },
            spot_advisor_regions: 33,
        }
    }

    #[test]
    fn parses_a_row_and_reports_bad_ones() {
        let header = "name,category,family,generation,size,vcpu,memory_mib,arch,cpu_manufacturer,cpu_clock_mhz,hypervisor,capability_flex,encryption_in_transit,network_bandwidth_mbps,ebs_bandwidth_mbps,local_nvme_gb,instance_store_gb,gpu_count,gpu_name,gpu_manufacturer,gpu_memory_mib,accelerator_count,accelerator_name,accelerator_manufacturer,efa,enis_default_card,ipv4_per_eni,pod_eni,usage_classes,spot_advisor_regions\n";
        let row = "g5.xlarge,g,g5,5,xlarge,4,16384,amd64,amd,3300,nitro,false,true,2500,3500,250,250,1,a10g,nvidia,22888,0,,,0,4,15,55,on-demand;spot,30\n";
        let specs = InstanceSpec::parse_table("t.csv", &format!("{header}{row}")).unwrap();
        let gpu = specs[0].gpu.as_ref().unwrap();
        assert_eq!(
            (gpu.name.as_str(), gpu.count, gpu.memory_mib),
            ("a10g", 1, 22888)
        );
        assert_eq!(specs[0].local_nvme_gb, Some(250));
        assert_eq!(specs[0].usage_classes, UsageClasses::Known { spot: true });
        let bad = row.replace(",amd64,", ",sparc,");
        let err = InstanceSpec::parse_table("t.csv", &format!("{header}{bad}")).unwrap_err();
        assert_eq!(err.line, 2);
        assert!(err.to_string().contains("sparc"), "{err}");
    }
}
