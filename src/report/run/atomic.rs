//! All-or-nothing report directories: every variant's files are first
//! written into a hidden temporary directory beside its final place (a
//! run may stream rows into them while it goes on), and only when all of
//! them are complete is each moved into place with a rename. On any error
//! the temporary directories, and any directory created on the way, are
//! removed, so no half-written report is left behind.

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
    let mut staging = Staging::begin(out)?;
    for (name, write) in entries.iter_mut() {
        let dir = staging.add(name)?;
        write(&dir)?;
    }
    staging.commit()
}

/// Directories being written into `out`: each one in a hidden temporary
/// directory beside its final place, filled at leisure (a long run can
/// stream rows into it), until [`Staging::commit`] moves them all into
/// place. Dropped without a commit, or when the commit fails, it removes
/// the temporary directories and any directory it created.
#[derive(Debug)]
pub struct Staging {
    out: PathBuf,
    /// The outermost directory `begin` created, if any.
    created: Option<PathBuf>,
    /// (temporary, final) paths, in the order they were added.
    staged: Vec<(PathBuf, PathBuf)>,
    done: bool,
}

impl Staging {
    /// Creates `out` (and its parents) if needed.
    pub fn begin(out: &Path) -> io::Result<Staging> {
        let staging = Staging {
            out: out.to_path_buf(),
            created: first_missing_ancestor(out),
            staged: Vec::new(),
            done: false,
        };
        // On failure, dropping `staging` removes what was created.
        fs::create_dir_all(out)?;
        Ok(staging)
    }

    /// Creates the (empty) temporary directory that becomes `out/<name>`
    /// at the commit and returns its path.
    pub fn add(&mut self, name: &str) -> io::Result<PathBuf> {
        let pid = std::process::id();
        let temp = self.out.join(format!(".{name}.tmp-{pid}"));
        let _ = fs::remove_dir_all(&temp);
        self.staged.push((temp.clone(), self.out.join(name)));
        fs::create_dir(&temp)?;
        Ok(temp)
    }

    /// Moves every temporary directory into place, replacing an existing
    /// directory of the same name as a whole.
    pub fn commit(mut self) -> io::Result<()> {
        let pid = std::process::id();
        for (temp, target) in &self.staged {
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
                return Err(error);
            }
            if had_old {
                fs::remove_dir_all(&old)?;
            }
        }
        self.done = true;
        Ok(())
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        for (temp, _) in &self.staged {
            let _ = fs::remove_dir_all(temp);
        }
        if let Some(created) = &self.created {
            let _ = fs::remove_dir_all(created);
        }
    }
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
    fn staged_directories_appear_only_at_the_commit() {
        let root = tempfile::tempdir().unwrap();
        let out = root.path().join("reports/demo");
        let mut staging = Staging::begin(&out).unwrap();
        let dir = staging.add("a").unwrap();
        fs::write(dir.join("events.csv"), "rows so far").unwrap();
        assert!(
            !out.join("a").exists(),
            "nothing in place before the commit"
        );
        fs::write(dir.join("summary.json"), "{}").unwrap();
        staging.commit().unwrap();
        assert_eq!(
            fs::read_to_string(out.join("a/events.csv")).unwrap(),
            "rows so far"
        );
        assert_eq!(fs::read_dir(&out).unwrap().count(), 1, "no temporaries");
    }

    #[test]
    fn dropping_an_uncommitted_staging_leaves_nothing_new_behind() {
        let root = tempfile::tempdir().unwrap();
        let kept = root.path().join("demo");
        fs::create_dir_all(kept.join("a")).unwrap();
        fs::write(kept.join("a/summary.json"), "previous").unwrap();
        {
            let mut staging = Staging::begin(&kept).unwrap();
            fs::write(staging.add("a").unwrap().join("summary.json"), "new").unwrap();
        }
        assert_eq!(
            fs::read_to_string(kept.join("a/summary.json")).unwrap(),
            "previous"
        );
        assert_eq!(fs::read_dir(&kept).unwrap().count(), 1);
        let fresh = root.path().join("reports/new");
        {
            let mut staging = Staging::begin(&fresh).unwrap();
            staging.add("a").unwrap();
        }
        assert!(!root.path().join("reports").exists());
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
