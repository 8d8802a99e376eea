//! All-or-nothing report folders, one writer at a time.
//!
//! [`ReportTree`] builds a whole report (every variant folder, the charts,
//! `report.html`) in one hidden temporary folder beside its final place,
//! `.NAME.tmp-PID` (a run streams `events.csv` into it while it goes on),
//! and swaps it in at [`ReportTree::commit`]: on Linux with one atomic
//! exchange of the two folders (`renameat2(RENAME_EXCHANGE)`), elsewhere
//! (or on file systems without it) with two renames, old → `.NAME.old-PID`
//! then new → `NAME`, between which, for the time of one rename, `NAME`
//! does not exist. The previous report stays untouched until the swap and
//! is removed after it. On any error, or dropped without a commit, the
//! temporary folder and the folders created on the way are removed.
//!
//! [`ReportTree::keep_previous`] carries a variant folder of the
//! previous report over into the new one (hard links, no copying).
//!
//! [`ReportLock`] (a locked file `.NAME.lock` beside the folder) keeps a
//! second process from writing the same folder; the lock goes with its
//! process, so a killed writer leaves nothing that blocks the next one,
//! and the next writer removes the killed one's temporary folders.
//! [`write_file`] replaces one file of an existing folder (through a
//! temporary file and a rename), for `karpsim chart` and `karpsim report`.
//! Every temporary path is registered with [`super::cleanup`], so a stop
//! request removes it.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::cleanup::{self, Registered};

/// Why a report folder could not be written.
#[derive(Debug, thiserror::Error)]
pub enum ReportDirError {
    /// Another process holds the folder's lock.
    #[error(
        "{} is being written by another karpsim process{}; wait for it to finish or choose another folder",
        dir.display(),
        pid.map(|p| format!(" (pid {p})")).unwrap_or_default()
    )]
    Busy {
        /// The report folder.
        dir: PathBuf,
        /// The process holding the lock, when it wrote its id.
        pid: Option<u32>,
    },
    /// The folder exists and holds something a report does not.
    #[error(
        "{} holds {entry:?}, which is not part of a karpsim report; the folder is replaced as a whole, so give a new or empty one (or an earlier report)",
        dir.display()
    )]
    NotAReport {
        /// The folder.
        dir: PathBuf,
        /// The first foreign entry found.
        entry: String,
    },
    /// The path names no folder of its own (`.`, `..`, `/`).
    #[error("{}: a report needs a folder of its own; give a path ending in a folder name", dir.display())]
    Unnamed {
        /// The path given.
        dir: PathBuf,
    },
    /// A file or folder could not be created, written or renamed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// What the system said.
        source: io::Error,
    },
}

fn io_at(path: &Path) -> impl FnOnce(io::Error) -> ReportDirError + '_ {
    move |source| ReportDirError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The files a report folder holds beside its variant folders.
const REPORT_FILES: [&str; 3] = ["report.html", "cost.svg", "cost.png"];

/// The parent folder (`.` for a bare name) and the folder name of `dir`.
fn split(dir: &Path) -> Result<(PathBuf, String), ReportDirError> {
    let unnamed = || ReportDirError::Unnamed {
        dir: dir.to_path_buf(),
    };
    let name = dir.file_name().ok_or_else(unnamed)?;
    let name = name.to_str().ok_or_else(unnamed)?.to_string();
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    Ok((parent, name))
}

/// `.NAME.KIND-PID` beside `NAME` in `parent`.
fn sibling(parent: &Path, name: &str, kind: &str) -> PathBuf {
    parent.join(format!(".{name}.{kind}-{}", std::process::id()))
}

/// For a temporary name `.X.tmp-PID` (or `.old-`), `X` and the PID.
fn temporary_owner(file_name: &str) -> Option<(&str, u32)> {
    let rest = file_name.strip_prefix('.')?;
    let (base, pid) = rest
        .rsplit_once(".tmp-")
        .or_else(|| rest.rsplit_once(".old-"))?;
    if base.is_empty() || pid.is_empty() || !pid.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((base, pid.parse().ok()?))
}

/// Whether a process with this id is running (one whose state cannot be
/// told is taken as running, so nothing of it is removed).
pub fn pid_alive(pid: u32) -> bool {
    if pid == std::process::id() {
        return true;
    }
    #[cfg(unix)]
    {
        let Ok(pid) = libc::pid_t::try_from(pid) else {
            return false;
        };
        if pid <= 0 {
            return false;
        }
        // SAFETY: signal 0 delivers nothing; it only asks whether the
        // process exists.
        let found = unsafe { libc::kill(pid, 0) } == 0;
        found || io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
    }
    #[cfg(not(unix))]
    {
        true
    }
}

/// Removes the temporary files and folders in `dir` that processes no
/// longer running left behind; with `base`, only those of `.BASE.tmp-PID`
/// and `.BASE.old-PID`. Returns how many were removed.
pub fn remove_stale_temporaries(dir: &Path, base: Option<&str>) -> usize {
    let Ok(entries) = fs::read_dir(dir) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let file_name = entry.file_name();
        let Some((owner_base, pid)) = file_name.to_str().and_then(temporary_owner) else {
            continue;
        };
        if base.is_some_and(|b| b != owner_base) || pid_alive(pid) {
            continue;
        }
        cleanup::remove_path(&entry.path());
        removed += 1;
    }
    removed
}

/// The exclusive right to write one report folder: the lock on
/// `.NAME.lock` beside it, held as long as this value lives (and released
/// by the system if the process dies).
#[derive(Debug)]
pub struct ReportLock {
    path: PathBuf,
    _file: fs::File,
    _registered: Registered,
}

impl ReportLock {
    /// Takes the lock of the report folder `dir` (whose parent must
    /// exist), or fails with [`ReportDirError::Busy`].
    pub fn acquire(dir: &Path) -> Result<ReportLock, ReportDirError> {
        let (parent, name) = split(dir)?;
        let path = parent.join(format!(".{name}.lock"));
        loop {
            let mut file = fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(&path)
                .map_err(io_at(&path))?;
            match file.try_lock() {
                Ok(()) => {}
                Err(fs::TryLockError::WouldBlock) => {
                    let pid = fs::read_to_string(&path)
                        .ok()
                        .and_then(|text| text.trim().parse().ok());
                    return Err(ReportDirError::Busy {
                        dir: dir.to_path_buf(),
                        pid,
                    });
                }
                Err(fs::TryLockError::Error(source)) => {
                    return Err(ReportDirError::Io { path, source });
                }
            }
            // A holder removes the file before it lets go of it: a lock on
            // a file no longer at `path` guards nothing, so try again.
            if !same_file(&file, &path) {
                continue;
            }
            file.set_len(0)
                .and_then(|()| writeln!(file, "{}", std::process::id()))
                .map_err(io_at(&path))?;
            let registered = Registered::new(&path);
            return Ok(ReportLock {
                path,
                _file: file,
                _registered: registered,
            });
        }
    }
}

impl Drop for ReportLock {
    fn drop(&mut self) {
        // Removed while still locked, so a waiting writer never locks a
        // file that is about to disappear (see `acquire`).
        let _ = fs::remove_file(&self.path);
    }
}

#[cfg(unix)]
fn same_file(file: &fs::File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), fs::metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

#[cfg(not(unix))]
fn same_file(_file: &fs::File, path: &Path) -> bool {
    path.exists()
}

/// Checks that `dir`, if it exists, can be replaced as a whole: a folder
/// holding only variant folders (with a `summary.json`), the report's own
/// entries (`known`) and temporary leftovers.
fn check_replaceable(dir: &Path, known: &[&str]) -> Result<(), ReportDirError> {
    let meta = match fs::symlink_metadata(dir) {
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(()),
        other => other.map_err(io_at(dir))?,
    };
    if !meta.is_dir() {
        return Err(ReportDirError::Io {
            path: dir.to_path_buf(),
            source: io::Error::new(io::ErrorKind::AlreadyExists, "exists and is not a folder"),
        });
    }
    let mut names = Vec::new();
    for entry in fs::read_dir(dir).map_err(io_at(dir))? {
        let entry = entry.map_err(io_at(dir))?;
        names.push((entry.file_name().to_string_lossy().into_owned(), entry));
    }
    names.sort_by(|a, b| a.0.cmp(&b.0));
    for (name, entry) in names {
        let path = entry.path();
        let ours = known.contains(&name.as_str())
            || temporary_owner(&name).is_some()
            || (path.is_dir() && path.join("summary.json").is_file());
        if !ours {
            return Err(ReportDirError::NotAReport {
                dir: dir.to_path_buf(),
                entry: name,
            });
        }
    }
    Ok(())
}

/// The folders of `path` that do not exist yet, outermost first.
fn missing_ancestors(path: &Path) -> Vec<PathBuf> {
    let mut missing = Vec::new();
    let mut current = Some(path);
    while let Some(dir) = current {
        if dir.as_os_str().is_empty() || dir.exists() {
            break;
        }
        missing.push(dir.to_path_buf());
        current = dir.parent();
    }
    missing.reverse();
    missing
}

/// A report folder being written as a whole (see the module docs).
#[derive(Debug)]
pub struct ReportTree {
    out: PathBuf,
    parent: PathBuf,
    name: String,
    temp: PathBuf,
    /// Folders `begin` created for the parent, outermost first.
    created: Vec<PathBuf>,
    registered: Option<Registered>,
    lock: Option<ReportLock>,
    committed: bool,
}

impl ReportTree {
    /// Starts writing the report folder `out`: creates its parent folders
    /// if needed, takes its lock, checks that an existing `out` is a
    /// report (it is replaced as a whole), removes what killed writers
    /// left beside it, and creates the empty temporary folder.
    pub fn begin(out: &Path) -> Result<ReportTree, ReportDirError> {
        ReportTree::begin_with(out, &REPORT_FILES)
    }

    /// [`ReportTree::begin`] for a folder whose own entries (files and
    /// folders beside the variant folders) are `known`, such as a sweep's.
    pub fn begin_with(out: &Path, known: &[&str]) -> Result<ReportTree, ReportDirError> {
        let out = match fs::symlink_metadata(out) {
            // A link to a folder: the folder it points to is the report.
            Ok(meta) if meta.is_symlink() => fs::canonicalize(out).map_err(io_at(out))?,
            _ => out.to_path_buf(),
        };
        let (parent, name) = split(&out)?;
        let mut tree = ReportTree {
            temp: sibling(&parent, &name, "tmp"),
            created: missing_ancestors(&parent),
            out,
            parent,
            name,
            registered: None,
            lock: None,
            committed: false,
        };
        // On failure from here on, dropping `tree` undoes what was done.
        fs::create_dir_all(&tree.parent).map_err(io_at(&tree.parent))?;
        tree.lock = Some(ReportLock::acquire(&tree.out)?);
        check_replaceable(&tree.out, known)?;
        remove_stale_temporaries(&tree.parent, Some(&tree.name));
        tree.registered = Some(Registered::new(&tree.temp));
        // With the lock held, a folder of this name and process id is a
        // leftover of a process in another PID namespace that had the
        // same id (a retried pod on a shared volume), never a live one.
        cleanup::remove_path(&tree.temp);
        fs::create_dir(&tree.temp).map_err(io_at(&tree.temp))?;
        Ok(tree)
    }

    /// The temporary folder every file of the report goes into.
    pub fn root(&self) -> &Path {
        &self.temp
    }

    /// The final place of the report.
    pub fn out(&self) -> &Path {
        &self.out
    }

    /// Creates the (empty) folder `name` in the temporary folder and
    /// returns its path.
    pub fn add_dir(&self, name: &str) -> Result<PathBuf, ReportDirError> {
        let dir = self.temp.join(name);
        fs::create_dir(&dir).map_err(io_at(&dir))?;
        Ok(dir)
    }

    /// Puts the previous report's folder `name` (a variant folder holding
    /// a `summary.json`) into the new report, as hard links (copies where
    /// links are not possible), so a run of one variant keeps the others.
    /// Returns whether there was one to keep.
    pub fn keep_previous(&self, name: &str) -> Result<bool, ReportDirError> {
        let previous = self.out.join(name);
        if !previous.join("summary.json").is_file() {
            return Ok(false);
        }
        link_tree(&previous, &self.temp.join(name))?;
        Ok(true)
    }

    /// Recreates the folder `from` (of another report) at `name` in the
    /// temporary folder, as hard links (copies where links are not
    /// possible), leaving out temporary leftovers.
    pub fn link_in(&self, from: &Path, name: &Path) -> Result<(), ReportDirError> {
        link_tree(from, &self.temp.join(name))
    }

    /// Puts the finished report in place of the previous one (if any),
    /// then removes the previous one.
    pub fn commit(mut self) -> Result<(), ReportDirError> {
        let registered = self
            .registered
            .as_ref()
            .expect("a begun tree is registered");
        let old = sibling(&self.parent, &self.name, "old");
        let (temp, out) = (&self.temp, &self.out);
        let previous = cleanup::critical(|registry| -> Result<Option<PathBuf>, ReportDirError> {
            if fs::symlink_metadata(out).is_err() {
                fs::rename(temp, out).map_err(io_at(out))?;
                registry.forget(registered);
                registry.mark_written(out);
                return Ok(None);
            }
            if exchange(temp, out) {
                // The temporary name now holds the previous report, and
                // stays registered for removal.
                registry.mark_written(out);
                return Ok(Some(temp.clone()));
            }
            fs::rename(out, &old).map_err(io_at(out))?;
            if let Err(source) = fs::rename(temp, out) {
                let _ = fs::rename(&old, out);
                return Err(ReportDirError::Io {
                    path: out.clone(),
                    source,
                });
            }
            registry.retarget(registered, &old);
            registry.mark_written(out);
            Ok(Some(old.clone()))
        })?;
        self.committed = true;
        if let Some(previous) = previous {
            // A failure here leaves a hidden `.NAME.*-PID` folder that the
            // next writer removes; the new report is in place either way.
            cleanup::remove_path(&previous);
        }
        Ok(())
    }
}

impl Drop for ReportTree {
    fn drop(&mut self) {
        if !self.committed && self.registered.is_some() {
            cleanup::remove_path(&self.temp);
        }
        self.registered = None;
        self.lock = None;
        if !self.committed {
            // Innermost first, and only empty folders: another writer may
            // have started using them meanwhile.
            for dir in self.created.iter().rev() {
                let _ = fs::remove_dir(dir);
            }
        }
    }
}

/// Recreates the folder `from` at `to` with hard links to its files
/// (copies when linking fails), leaving out temporary leftovers. Files of
/// a report are only ever replaced by renames, never written in place, so
/// the two trees can share them.
fn link_tree(from: &Path, to: &Path) -> Result<(), ReportDirError> {
    fs::create_dir(to).map_err(io_at(to))?;
    let mut entries: Vec<fs::DirEntry> = fs::read_dir(from)
        .map_err(io_at(from))?
        .collect::<io::Result<_>>()
        .map_err(io_at(from))?;
    entries.sort_by_key(fs::DirEntry::file_name);
    for entry in entries {
        let name = entry.file_name();
        if name.to_str().and_then(temporary_owner).is_some() {
            continue;
        }
        let (source, target) = (entry.path(), to.join(&name));
        let kind = entry.file_type().map_err(io_at(&source))?;
        if kind.is_dir() {
            link_tree(&source, &target)?;
        } else if fs::hard_link(&source, &target).is_err() {
            fs::copy(&source, &target).map_err(io_at(&target))?;
        }
    }
    Ok(())
}

/// Swaps the folders `a` and `b` in one step; false when the system or
/// file system cannot (then nothing changed).
#[cfg(target_os = "linux")]
fn exchange(a: &Path, b: &Path) -> bool {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    let (Ok(a), Ok(b)) = (
        CString::new(a.as_os_str().as_bytes()),
        CString::new(b.as_os_str().as_bytes()),
    ) else {
        return false;
    };
    // SAFETY: both paths are NUL-terminated strings that outlive the call;
    // renameat2 only reads them.
    let result = unsafe {
        libc::syscall(
            libc::SYS_renameat2,
            libc::AT_FDCWD,
            a.as_ptr(),
            libc::AT_FDCWD,
            b.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
    result == 0
}

#[cfg(not(target_os = "linux"))]
fn exchange(_a: &Path, _b: &Path) -> bool {
    false
}

/// Writes `dir/name` through a temporary file in `dir` (registered for
/// removal on a stop request) and a rename, so readers see the old file
/// or the new one, never half of one. `fill` writes the content.
pub fn write_file(
    dir: &Path,
    name: &str,
    fill: impl FnOnce(&mut io::BufWriter<fs::File>) -> io::Result<()>,
) -> Result<PathBuf, ReportDirError> {
    let target = dir.join(name);
    let temp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    let registered = Registered::new(&temp);
    let written = fs::File::create(&temp).and_then(|file| {
        let mut out = io::BufWriter::new(file);
        fill(&mut out)?;
        out.into_inner().map_err(io::Error::other)?.sync_all()
    });
    let result = written
        .map_err(io_at(&temp))
        .and_then(|()| fs::rename(&temp, &target).map_err(io_at(&target)));
    if result.is_err() {
        let _ = fs::remove_file(&temp);
    }
    drop(registered);
    result.map(|()| target)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    fn write_report(out: &Path, variant: &str, content: &str) -> Result<(), ReportDirError> {
        let tree = ReportTree::begin(out)?;
        let dir = tree.add_dir(variant)?;
        fs::write(dir.join("summary.json"), content).unwrap();
        fs::write(tree.root().join("report.html"), content).unwrap();
        tree.commit()
    }

    #[test]
    fn a_new_report_replaces_the_previous_one_as_a_whole() {
        let root = tempfile::tempdir().unwrap();
        let out = root.path().join("reports/demo");
        write_report(&out, "a", "first").unwrap();
        assert_eq!(names(&out), ["a", "report.html"]);
        write_report(&out, "b", "second").unwrap();
        assert_eq!(names(&out), ["b", "report.html"], "old variant gone");
        assert_eq!(
            fs::read_to_string(out.join("report.html")).unwrap(),
            "second"
        );
        assert_eq!(
            names(&root.path().join("reports")),
            ["demo"],
            "no leftovers"
        );
    }

    #[test]
    fn nothing_is_visible_before_the_commit() {
        let root = tempfile::tempdir().unwrap();
        let out = root.path().join("demo");
        write_report(&out, "a", "previous").unwrap();
        let tree = ReportTree::begin(&out).unwrap();
        let dir = tree.add_dir("a").unwrap();
        fs::write(dir.join("summary.json"), "new").unwrap();
        assert_eq!(
            fs::read_to_string(out.join("a/summary.json")).unwrap(),
            "previous"
        );
        assert!(tree.root().starts_with(root.path()));
        assert_eq!(
            tree.root().file_name().unwrap().to_string_lossy(),
            format!(".demo.tmp-{}", std::process::id())
        );
        tree.commit().unwrap();
        assert_eq!(
            fs::read_to_string(out.join("a/summary.json")).unwrap(),
            "new"
        );
    }

    #[test]
    fn dropping_an_uncommitted_tree_leaves_nothing_new_behind() {
        let root = tempfile::tempdir().unwrap();
        let kept = root.path().join("demo");
        write_report(&kept, "a", "previous").unwrap();
        {
            let tree = ReportTree::begin(&kept).unwrap();
            fs::write(tree.add_dir("a").unwrap().join("summary.json"), "new").unwrap();
        }
        assert_eq!(
            fs::read_to_string(kept.join("a/summary.json")).unwrap(),
            "previous"
        );
        assert_eq!(names(root.path()), ["demo"]);
        let fresh = root.path().join("reports/deeper/new");
        {
            let tree = ReportTree::begin(&fresh).unwrap();
            tree.add_dir("a").unwrap();
        }
        assert!(!root.path().join("reports").exists(), "created parents go");
    }

    #[test]
    fn a_second_writer_is_refused_while_the_first_holds_the_lock() {
        let root = tempfile::tempdir().unwrap();
        let out = root.path().join("demo");
        let first = ReportTree::begin(&out).unwrap();
        let error = ReportTree::begin(&out).unwrap_err();
        assert!(
            matches!(error, ReportDirError::Busy { pid: Some(p), .. } if p == std::process::id())
        );
        let text = error.to_string();
        assert!(
            text.contains("demo is being written by another karpsim process (pid "),
            "{text}"
        );
        assert!(ReportLock::acquire(&out).is_err(), "chart and report too");
        drop(first);
        assert_eq!(
            names(root.path()),
            Vec::<String>::new(),
            "lock file removed"
        );
        write_report(&out, "a", "x").unwrap();
    }

    #[test]
    fn a_stale_lock_file_does_not_block() {
        let root = tempfile::tempdir().unwrap();
        let out = root.path().join("demo");
        // A killed writer leaves its lock file, but not its lock.
        fs::write(root.path().join(".demo.lock"), "999999999\n").unwrap();
        write_report(&out, "a", "x").unwrap();
        assert_eq!(names(root.path()), ["demo"]);
    }

    #[test]
    fn temporaries_of_dead_processes_are_removed_and_live_ones_kept() {
        let root = tempfile::tempdir().unwrap();
        let out = root.path().join("demo");
        let dead = root.path().join(".demo.tmp-999999999");
        fs::create_dir_all(dead.join("a")).unwrap();
        fs::create_dir_all(root.path().join(".demo.old-999999998")).unwrap();
        // pid 1 is always alive; another report's leftovers are not ours.
        let alive = root.path().join(".demo.tmp-1");
        fs::create_dir(&alive).unwrap();
        let other = root.path().join(".other.tmp-999999999");
        fs::create_dir(&other).unwrap();
        write_report(&out, "a", "x").unwrap();
        assert_eq!(
            names(root.path()),
            [".demo.tmp-1", ".other.tmp-999999999", "demo"]
        );
    }

    #[test]
    fn a_folder_that_is_not_a_report_is_refused_and_left_alone() {
        let root = tempfile::tempdir().unwrap();
        let out = root.path().join("home");
        fs::create_dir_all(out.join("a")).unwrap();
        fs::write(out.join("a/summary.json"), "{}").unwrap();
        fs::write(out.join("notes.txt"), "mine").unwrap();
        let error = ReportTree::begin(&out).unwrap_err();
        assert!(matches!(&error, ReportDirError::NotAReport { entry, .. } if entry == "notes.txt"));
        assert_eq!(names(&out), ["a", "notes.txt"]);
        assert_eq!(names(root.path()), ["home"]);
        for unnamed in [".", "..", "/"] {
            assert!(matches!(
                ReportTree::begin(Path::new(unnamed)).unwrap_err(),
                ReportDirError::Unnamed { .. }
            ));
        }
        let file = root.path().join("file");
        fs::write(&file, "x").unwrap();
        assert!(ReportTree::begin(&file).is_err());
    }

    #[test]
    fn folders_of_the_previous_report_can_be_kept() {
        let root = tempfile::tempdir().unwrap();
        let out = root.path().join("demo");
        write_report(&out, "a", "first").unwrap();
        fs::write(out.join("a/events.csv"), "rows").unwrap();
        fs::write(out.join(format!("a/.x.tmp-{}", u32::MAX)), "left").unwrap();
        let tree = ReportTree::begin(&out).unwrap();
        assert!(tree.keep_previous("a").unwrap());
        assert!(!tree.keep_previous("missing").unwrap());
        fs::write(tree.add_dir("b").unwrap().join("summary.json"), "b").unwrap();
        tree.commit().unwrap();
        assert_eq!(names(&out), ["a", "b"]);
        assert_eq!(names(&out.join("a")), ["events.csv", "summary.json"]);
        assert_eq!(
            fs::read_to_string(out.join("a/events.csv")).unwrap(),
            "rows"
        );
    }

    #[test]
    fn a_link_to_a_report_replaces_the_folder_it_points_to() {
        let root = tempfile::tempdir().unwrap();
        let real = root.path().join("real");
        write_report(&real, "a", "first").unwrap();
        let link = root.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        write_report(&link, "b", "second").unwrap();
        assert!(fs::symlink_metadata(&link).unwrap().is_symlink());
        assert_eq!(names(&real), ["b", "report.html"]);
    }

    #[test]
    fn write_file_replaces_one_file_and_leaves_no_temporary() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("cost.svg"), "old").unwrap();
        write_file(dir.path(), "cost.svg", |out| out.write_all(b"new")).unwrap();
        assert_eq!(
            fs::read_to_string(dir.path().join("cost.svg")).unwrap(),
            "new"
        );
        let error = write_file(dir.path(), "cost.svg", |_| {
            Err(io::Error::other("disk full"))
        })
        .unwrap_err();
        assert!(error.to_string().contains("disk full"), "{error}");
        assert_eq!(
            fs::read_to_string(dir.path().join("cost.svg")).unwrap(),
            "new"
        );
        assert_eq!(names(dir.path()), ["cost.svg"]);
    }

    #[test]
    fn temporary_names_are_recognized() {
        assert_eq!(
            temporary_owner(".on-demand.tmp-279"),
            Some(("on-demand", 279))
        );
        assert_eq!(
            temporary_owner(".report.html.tmp-3"),
            Some(("report.html", 3))
        );
        assert_eq!(temporary_owner(".demo.old-12"), Some(("demo", 12)));
        assert_eq!(temporary_owner(".git"), None);
        assert_eq!(temporary_owner(".x.tmp-"), None);
        assert_eq!(temporary_owner("a.tmp-1"), None);
    }
}
