//! Temporary paths a stopped process must not leave behind. Writers
//! register each temporary file or folder while it exists; when the
//! process is asked to stop (SIGINT, SIGTERM), the command line calls
//! [`remove_all`], which deletes them and keeps the registry locked so no
//! report is swapped in afterwards.
//!
//! A report swap (see [`crate::atomic`]) runs inside [`critical`],
//! so a stop request sees the old report or the new one, never a mix.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

/// The registered paths and what was put in place so far.
#[derive(Debug, Default)]
pub struct Registry {
    /// (id, path) of every temporary path alive.
    paths: Vec<(u64, PathBuf)>,
    next_id: u64,
    /// Final paths written (reports swapped in), in order.
    written: Vec<PathBuf>,
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
    paths: Vec::new(),
    next_id: 0,
    written: Vec::new(),
});

fn lock() -> MutexGuard<'static, Registry> {
    // A panic elsewhere must not stop the cleanup.
    REGISTRY
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A registered temporary path; dropping it unregisters it (it does not
/// remove the path: its owner does).
#[derive(Debug)]
pub struct Registered {
    id: u64,
}

impl Registered {
    /// Registers `path` for removal if the process is stopped.
    pub fn new(path: &Path) -> Registered {
        let mut registry = lock();
        let id = registry.next_id;
        registry.next_id += 1;
        registry.paths.push((id, path.to_path_buf()));
        Registered { id }
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        lock().paths.retain(|(id, _)| *id != self.id);
    }
}

impl Registry {
    /// Makes `registered` stand for `path` from now on (the temporary
    /// path was renamed).
    pub fn retarget(&mut self, registered: &Registered, path: &Path) {
        for (id, entry) in &mut self.paths {
            if *id == registered.id {
                *entry = path.to_path_buf();
            }
        }
    }

    /// Stops tracking `registered` (its path is gone, or now final).
    pub fn forget(&mut self, registered: &Registered) {
        self.paths.retain(|(id, _)| *id != registered.id);
    }

    /// Records that `path` is now in place.
    pub fn mark_written(&mut self, path: &Path) {
        self.written.push(path.to_path_buf());
    }
}

/// Runs `step` with the registry locked: a stop request waits until it is
/// done. `step` must not create or drop a [`Registered`].
pub fn critical<T>(step: impl FnOnce(&mut Registry) -> T) -> T {
    step(&mut lock())
}

/// Removes every registered path and returns the final paths written so
/// far. The registry stays locked for the rest of the process, so nothing
/// is swapped in after this returns; call it only right before exiting.
pub fn remove_all() -> Vec<PathBuf> {
    let registry = lock();
    for (_, path) in registry.paths.iter().rev() {
        remove_path(path);
    }
    let written = registry.written.clone();
    std::mem::forget(registry);
    written
}

/// Removes a file or folder, retrying a few times: a thread may still be
/// creating files inside a folder being removed.
pub fn remove_path(path: &Path) {
    for _ in 0..5 {
        let result = match fs::symlink_metadata(path) {
            Err(error) if error.kind() == io::ErrorKind::NotFound => return,
            Err(_) => return,
            Ok(meta) if meta.is_dir() => fs::remove_dir_all(path),
            Ok(_) => fs::remove_file(path),
        };
        match result {
            Ok(()) => return,
            Err(error) if error.kind() == io::ErrorKind::NotFound => return,
            Err(_) => std::thread::sleep(std::time::Duration::from_millis(10)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn registered_paths() -> Vec<PathBuf> {
        lock().paths.iter().map(|(_, p)| p.clone()).collect()
    }

    #[test]
    fn registration_lasts_as_long_as_its_handle_and_follows_renames() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        let handle = Registered::new(&a);
        assert!(registered_paths().contains(&a));
        critical(|registry| registry.retarget(&handle, &b));
        assert!(registered_paths().contains(&b));
        assert!(!registered_paths().contains(&a));
        drop(handle);
        assert!(!registered_paths().contains(&b));
    }

    #[test]
    fn remove_path_removes_files_and_folders_and_ignores_missing_ones() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("f");
        fs::create_dir_all(folder.join("x/y")).unwrap();
        fs::write(folder.join("x/y/z.csv"), "1").unwrap();
        let file = dir.path().join("g.tmp");
        fs::write(&file, "1").unwrap();
        remove_path(&folder);
        remove_path(&file);
        remove_path(&dir.path().join("missing"));
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
