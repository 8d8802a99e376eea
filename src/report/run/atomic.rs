//! All-or-nothing report directories: every variant's files are first
//! written into a hidden temporary directory beside its final place, and
//! only when all of them are complete is each moved into place with a
//! rename. On any error the temporary directories, and any directory this
//! call created, are removed, so no half-written report is left behind.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// Writes the directories `out/<name>` for every `(name, writer)`; each
/// writer fills the (empty) directory it is given. An existing
/// `out/<name>` is replaced as a whole; other entries of `out` are left
/// alone.
pub fn write_dirs<F>(out: &Path, entries: &mut [(String, F)]) -> io::Result<()>
where
    F: FnMut(&Path) -> io::Result<()>,
{
    let created = first_missing_ancestor(out);
    let result = write_all(out, entries);
    if result.is_err()
        && let Some(created) = created
    {
        let _ = fs::remove_dir_all(created);
    }
    result
}

fn write_all<F>(out: &Path, entries: &mut [(String, F)]) -> io::Result<()>
where
    F: FnMut(&Path) -> io::Result<()>,
{
    fs::create_dir_all(out)?;
    let pid = std::process::id();
    let mut staged: Vec<(PathBuf, PathBuf)> = Vec::new();
    let mut outcome = Ok(());
    for (name, write) in entries.iter_mut() {
        let temp = out.join(format!(".{name}.tmp-{pid}"));
        let _ = fs::remove_dir_all(&temp);
        staged.push((temp.clone(), out.join(name.as_str())));
        outcome = fs::create_dir(&temp).and_then(|()| write(&temp));
        if outcome.is_err() {
            break;
        }
    }
    if let Err(error) = outcome {
        for (temp, _) in &staged {
            let _ = fs::remove_dir_all(temp);
        }
        return Err(error);
    }
    for (temp, target) in &staged {
        let old = target.with_file_name(format!(
            ".{}.old-{pid}",
            target.file_name().unwrap_or_default().to_string_lossy()
        ));
        let had_old = target.exists();
        if had_old {
            fs::rename(target, &old)?;
        }
        if let Err(error) = fs::rename(temp, target) {
            if had_old {
                let _ = fs::rename(&old, target);
            }
            for (temp, _) in &staged {
                let _ = fs::remove_dir_all(temp);
            }
            return Err(error);
        }
        if had_old {
            fs::remove_dir_all(&old)?;
        }
    }
    Ok(())
}

/// The outermost directory of `path` that does not exist yet (what
/// `create_dir_all` would create first).
fn first_missing_ancestor(path: &Path) -> Option<PathBuf> {
    let mut missing = None;
    let mut current = Some(path);
    while let Some(dir) = current {
        if dir.as_os_str().is_empty() || dir.exists() {
            break;
        }
        missing = Some(dir.to_path_buf());
        current = dir.parent();
    }
    missing
}

#[cfg(test)]
mod tests {
    use super::*;

    type Writer = Box<dyn FnMut(&Path) -> io::Result<()>>;

    fn writer(file: &'static str, fail: bool) -> Writer {
        Box::new(move |dir: &Path| {
            fs::write(dir.join(file), "data")?;
            if fail {
                Err(io::Error::other("disk full"))
            } else {
                Ok(())
            }
        })
    }

    #[test]
    fn replaces_variant_directories_and_keeps_other_entries() {
        let root = tempfile::tempdir().unwrap();
        let out = root.path().join("reports/demo");
        fs::create_dir_all(out.join("a")).unwrap();
        fs::write(out.join("a/stale.csv"), "old").unwrap();
        fs::write(out.join("notes.txt"), "mine").unwrap();
        let mut entries = vec![
            ("a".to_string(), writer("summary.json", false)),
            ("b".to_string(), writer("summary.json", false)),
        ];
        write_dirs(&out, &mut entries).unwrap();
        assert!(out.join("a/summary.json").exists());
        assert!(
            !out.join("a/stale.csv").exists(),
            "old variant dir replaced"
        );
        assert!(out.join("b/summary.json").exists());
        assert!(out.join("notes.txt").exists());
        let hidden: Vec<_> = fs::read_dir(&out)
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().starts_with('.'))
            .collect();
        assert!(hidden.is_empty(), "no temporary directories remain");
    }

    #[test]
    fn failure_leaves_nothing_new_behind() {
        let root = tempfile::tempdir().unwrap();
        let out = root.path().join("reports/demo");
        let mut entries = vec![
            ("a".to_string(), writer("summary.json", false)),
            ("b".to_string(), writer("summary.json", true)),
        ];
        assert!(write_dirs(&out, &mut entries).is_err());
        assert!(
            !root.path().join("reports").exists(),
            "directories created by the call are removed"
        );
    }

    #[test]
    fn failure_keeps_the_previous_report() {
        let root = tempfile::tempdir().unwrap();
        let out = root.path().join("demo");
        fs::create_dir_all(out.join("a")).unwrap();
        fs::write(out.join("a/summary.json"), "previous").unwrap();
        let mut entries = vec![("a".to_string(), writer("summary.json", true))];
        assert!(write_dirs(&out, &mut entries).is_err());
        assert_eq!(
            fs::read_to_string(out.join("a/summary.json")).unwrap(),
            "previous"
        );
        assert_eq!(fs::read_dir(&out).unwrap().count(), 1);
    }
}
