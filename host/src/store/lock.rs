//! One server per database: an exclusive lock on a file beside the database
//! (`<database>.lock`), taken before the database is opened, so before
//! recovery or anything else touches it.
//!
//! Two servers on one store would each think the other's running turns were
//! interrupted by a restart, and their writes would collide. SQLite's own
//! locks serialize transactions, not servers, so the store takes an advisory
//! lock of its own (`flock`, through `File::try_lock`): the kernel releases
//! it when the process ends, however it ends, so a killed server never leaves
//! a stale lock. The holder writes its process id into the file, so a second
//! server can say who holds it.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use super::StoreError;

/// The lock of one database, held until dropped.
#[derive(Debug)]
pub(crate) struct DatabaseLock {
    // Holding the file holds the lock.
    _file: File,
}

/// The lock file of `database`.
pub(crate) fn lock_path(database: &Path) -> PathBuf {
    let mut name = database.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
}

impl DatabaseLock {
    /// Take the lock of `database`, or say which process holds it.
    pub(crate) fn acquire(database: &Path) -> Result<Self, StoreError> {
        let path = lock_path(database);
        let unavailable = |problem: String| {
            StoreError::Unavailable(format!("cannot lock {}: {problem}", path.display()))
        };
        // Never truncated on open: a holder's process id must survive a
        // second server's attempt.
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|error| unavailable(error.to_string()))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let holder = match read_holder(&mut file) {
                    Some(pid) => format!("process {pid}"),
                    None => "another process".to_owned(),
                };
                return Err(StoreError::Unavailable(format!(
                    "the task store {} is in use by {holder} (another tiny-harness server; its \
                     lock is {}): stop that server first, or give this one another \
                     `[store] path`",
                    database.display(),
                    path.display()
                )));
            }
            Err(TryLockError::Error(error)) => return Err(unavailable(error.to_string())),
        }
        write_holder(&mut file).map_err(|error| unavailable(error.to_string()))?;
        Ok(DatabaseLock { _file: file })
    }

    /// Take a share of the lock of `database`, for a store several processes
    /// write (`SqliteOptions::shared`): any number of them may hold it, but
    /// not while a server owns the database alone, nor that server while
    /// they do.
    pub(crate) fn share(database: &Path) -> Result<Self, StoreError> {
        let path = lock_path(database);
        let unavailable = |problem: String| {
            StoreError::Unavailable(format!("cannot lock {}: {problem}", path.display()))
        };
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|error| unavailable(error.to_string()))?;
        match file.try_lock_shared() {
            Ok(()) => Ok(DatabaseLock { _file: file }),
            Err(TryLockError::WouldBlock) => {
                let holder = match read_holder(&mut file) {
                    Some(pid) => format!("process {pid}"),
                    None => "another process".to_owned(),
                };
                Err(StoreError::Unavailable(format!(
                    "the task store {} is owned by {holder}, a tiny-harness server on the                      embedded engine, which shares it with no other process: stop it first, or                      give the Temporal engine's servers another `[store] path`",
                    database.display()
                )))
            }
            Err(TryLockError::Error(error)) => Err(unavailable(error.to_string())),
        }
    }
}

fn read_holder(file: &mut File) -> Option<u32> {
    let mut text = String::new();
    file.seek(SeekFrom::Start(0)).ok()?;
    // A process id is a few digits; a larger file is not ours.
    file.take(64).read_to_string(&mut text).ok()?;
    text.trim().parse().ok()
}

fn write_holder(file: &mut File) -> std::io::Result<()> {
    file.set_len(0)?;
    file.seek(SeekFrom::Start(0))?;
    writeln!(file, "{}", std::process::id())?;
    file.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_is_refused_and_names_the_holder_until_the_first_is_dropped() {
        let dir = tempfile::tempdir().expect("tempdir");
        let database = dir.path().join("t.db");
        let first = DatabaseLock::acquire(&database).expect("the first lock");
        let refused = DatabaseLock::acquire(&database).expect_err("held");
        let message = refused.to_string();
        assert!(
            message.contains(&format!("process {}", std::process::id())),
            "{message}"
        );
        assert!(message.contains("t.db"), "{message}");
        drop(first);
        DatabaseLock::acquire(&database).expect("free again");
    }

    #[test]
    fn shares_of_a_lock_coexist_and_exclude_its_owner_both_ways() {
        let dir = tempfile::tempdir().expect("tempdir");
        let database = dir.path().join("t.db");
        let one = DatabaseLock::share(&database).expect("a share");
        let two = DatabaseLock::share(&database).expect("another share");
        DatabaseLock::acquire(&database).expect_err("shared, so not owned alone");
        drop((one, two));
        let owner = DatabaseLock::acquire(&database).expect("owned alone");
        let refused = DatabaseLock::share(&database).expect_err("owned");
        assert!(refused.to_string().contains("embedded engine"), "{refused}");
        drop(owner);
    }
}
