//! Turning NodePool files into scenario variants, for `karpsim compare`:
//! the scenario's workload stays as it is and each NodePool set becomes one
//! Karpenter variant, so every set sees the same pods under the same seed.

use std::path::{Path, PathBuf};

use super::{KarpenterConfig, Provisioner, Scenario, Variant};

/// Why a NodePool set cannot become a variant.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NodePoolSetError {
    /// No NodePool file was given.
    #[error("no NodePool file to compare (give --nodepools FILE at least once)")]
    Empty,
    /// The file does not exist or is not a file.
    #[error("{file}: cannot read NodePool file: {reason}")]
    Unreadable {
        /// The file as the caller named it.
        file: String,
        /// The operating system's explanation.
        reason: String,
    },
}

/// The variant name for each file: its stem (`proposed.yaml` →
/// `proposed`), made unique by the parent folder's name and then a counter
/// when two files share a stem.
pub fn variant_names(files: &[PathBuf]) -> Vec<String> {
    let stem = |path: &Path| {
        path.file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "nodepools".to_string())
    };
    let stems: Vec<String> = files.iter().map(|f| stem(f)).collect();
    let mut names: Vec<String> = files
        .iter()
        .zip(&stems)
        .map(|(file, s)| {
            let shared = stems.iter().filter(|other| *other == s).count() > 1;
            let parent = file
                .parent()
                .and_then(Path::file_name)
                .map(|p| p.to_string_lossy().into_owned());
            match parent {
                Some(parent) if shared => format!("{parent}-{s}"),
                _ => s.clone(),
            }
        })
        .collect();
    for i in 0..names.len() {
        let mut counter = 2;
        let base = names[i].clone();
        while names[..i].contains(&names[i]) {
            names[i] = format!("{base}-{counter}");
            counter += 1;
        }
    }
    names
}

impl Scenario {
    /// Replaces the scenario's variants with one Karpenter variant per
    /// NodePool file (named by [`variant_names`]), in the order given.
    /// Paths are taken as given (relative to the working directory, as on
    /// the command line).
    pub fn set_nodepool_variants(&mut self, files: &[PathBuf]) -> Result<(), NodePoolSetError> {
        if files.is_empty() {
            return Err(NodePoolSetError::Empty);
        }
        let mut absolute = Vec::with_capacity(files.len());
        for file in files {
            let unreadable = |reason: String| NodePoolSetError::Unreadable {
                file: file.display().to_string(),
                reason,
            };
            let meta = std::fs::metadata(file).map_err(|e| unreadable(e.to_string()))?;
            if !meta.is_file() {
                return Err(unreadable("not a file".to_string()));
            }
            absolute.push(std::path::absolute(file).map_err(|e| unreadable(e.to_string()))?);
        }
        self.variants = variant_names(files)
            .into_iter()
            .zip(absolute)
            .map(|(name, path)| Variant {
                name,
                provisioner: Provisioner::Karpenter(KarpenterConfig {
                    node_pools: vec![path],
                    settings: Default::default(),
                    startup_failures: Vec::new(),
                    node_pool_edits: Vec::new(),
                }),
            })
            .collect();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(names: &[&str]) -> Vec<PathBuf> {
        names.iter().map(PathBuf::from).collect()
    }

    #[test]
    fn names_are_file_stems() {
        assert_eq!(
            variant_names(&paths(&["pools/current.yaml", "pools/proposed.yml"])),
            ["current", "proposed"]
        );
    }

    #[test]
    fn shared_stems_take_the_folder_then_a_counter() {
        assert_eq!(
            variant_names(&paths(&["a/pools.yaml", "b/pools.yaml", "b/pools.yaml"])),
            ["a-pools", "b-pools", "b-pools-2"]
        );
    }

    fn quickstart() -> Scenario {
        Scenario::load(
            Path::new(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../scenarios/quickstart.yaml"
            )),
            &crate::scenario::BundledRegions,
        )
        .unwrap()
    }

    #[test]
    fn each_file_becomes_one_karpenter_variant_in_order() {
        let mut scenario = quickstart();
        let workloads = scenario.workloads.clone();
        scenario
            .set_nodepool_variants(&paths(&[
                concat!(
                    env!("CARGO_MANIFEST_DIR"),
                    "/../../scenarios/nodepools/spot-first.yaml"
                ),
                concat!(
                    env!("CARGO_MANIFEST_DIR"),
                    "/../../scenarios/nodepools/on-demand.yaml"
                ),
            ]))
            .unwrap();
        let names: Vec<&str> = scenario.variants.iter().map(|v| v.name.as_str()).collect();
        assert_eq!(names, ["spot-first", "on-demand"]);
        let Provisioner::Karpenter(config) = &scenario.variants[0].provisioner else {
            panic!("expected a Karpenter variant");
        };
        assert!(config.node_pools[0].is_absolute());
        assert!(config.node_pools[0].ends_with("scenarios/nodepools/spot-first.yaml"));
        assert_eq!(scenario.workloads, workloads, "the workload is untouched");
    }

    #[test]
    fn no_file_is_an_error() {
        assert_eq!(
            quickstart().set_nodepool_variants(&[]),
            Err(NodePoolSetError::Empty)
        );
    }

    #[test]
    fn missing_file_is_named() {
        let mut scenario = quickstart();
        let err = scenario
            .set_nodepool_variants(&paths(&["does/not/exist.yaml"]))
            .unwrap_err();
        assert!(
            err.to_string()
                .starts_with("does/not/exist.yaml: cannot read NodePool file")
        );
    }
}
