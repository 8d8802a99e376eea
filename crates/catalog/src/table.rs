//! The bundled CSV tables read as `column name → value` rows, and the
//! instance-type table parsed into [`InstanceSpec`]s.

use std::collections::BTreeMap;

use crate::cloud::spec::{Accelerator, Arch, Gpu, InstanceSpec, SnapshotError, UsageClasses};

/// Reads rows of a bundled CSV as `column name → value` lookups.
pub struct CsvRows<'a> {
    file: &'a str,
    reader: csv::Reader<&'a [u8]>,
    columns: BTreeMap<String, usize>,
}

/// One row of a bundled CSV.
pub struct CsvRow<'r> {
    file: &'r str,
    line: u64,
    record: csv::StringRecord,
    columns: &'r BTreeMap<String, usize>,
}

impl<'a> CsvRows<'a> {
    pub fn new(file: &'a str, text: &'a str) -> Result<Self, SnapshotError> {
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
    pub fn for_each(
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
    pub fn error(&self, reason: impl Into<String>) -> SnapshotError {
        SnapshotError {
            file: self.file.to_string(),
            line: self.line,
            reason: reason.into(),
        }
    }

    /// The text of a column (empty if the column is absent).
    pub fn text(&self, column: &str) -> &str {
        self.columns
            .get(column)
            .and_then(|&i| self.record.get(i))
            .unwrap_or("")
    }

    /// A required number.
    pub fn number<T: std::str::FromStr>(&self, column: &str) -> Result<T, SnapshotError> {
        let text = self.text(column);
        text.parse()
            .map_err(|_| self.error(format!("{column}: not a number: {text:?}")))
    }

    /// An optional number (empty means `None`).
    pub fn optional<T: std::str::FromStr>(&self, column: &str) -> Result<Option<T>, SnapshotError> {
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

fn spec_from_row(row: &CsvRow<'_>) -> Result<InstanceSpec, SnapshotError> {
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
pub fn parse_instance_table(file: &str, text: &str) -> Result<Vec<InstanceSpec>, SnapshotError> {
    let mut specs = Vec::new();
    CsvRows::new(file, text)?.for_each(|row| {
        specs.push(spec_from_row(row)?);
        Ok(())
    })?;
    Ok(specs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_row_and_reports_bad_ones() {
        let header = "name,category,family,generation,size,vcpu,memory_mib,arch,cpu_manufacturer,cpu_clock_mhz,hypervisor,capability_flex,encryption_in_transit,network_bandwidth_mbps,ebs_bandwidth_mbps,local_nvme_gb,instance_store_gb,gpu_count,gpu_name,gpu_manufacturer,gpu_memory_mib,accelerator_count,accelerator_name,accelerator_manufacturer,efa,enis_default_card,ipv4_per_eni,pod_eni,usage_classes,spot_advisor_regions\n";
        let row = "g5.xlarge,g,g5,5,xlarge,4,16384,amd64,amd,3300,nitro,false,true,2500,3500,250,250,1,a10g,nvidia,22888,0,,,0,4,15,55,on-demand;spot,30\n";
        let specs = parse_instance_table("t.csv", &format!("{header}{row}")).unwrap();
        let gpu = specs[0].gpu.as_ref().unwrap();
        assert_eq!(
            (gpu.name.as_str(), gpu.count, gpu.memory_mib),
            ("a10g", 1, 22888)
        );
        assert_eq!(specs[0].local_nvme_gb, Some(250));
        assert_eq!(specs[0].usage_classes, UsageClasses::Known { spot: true });
        let bad = row.replace(",amd64,", ",sparc,");
        let err = parse_instance_table("t.csv", &format!("{header}{bad}")).unwrap_err();
        assert_eq!(err.line, 2);
        assert!(err.to_string().contains("sparc"), "{err}");
    }
}
