//! Directories only the hub's user may enter — the Unix socket's, the pairing state, the auth
//! directory — and the lock that keeps writers of their files apart.
//!
//! The rule itself (owned by this user, no permission bit for group or others) is the
//! protocol's [`private_dir_problem`], which the shim applies to the socket's directory too;
//! each caller words a problem for what its directory holds.

use std::fs::File;
use std::io;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::Path;

use tabwire_protocol::local::{PrivateDirProblem, current_uid, private_dir_problem};

/// Why a directory cannot be used as a private one.
#[derive(Debug)]
pub enum Unfit {
    /// It could not be looked at or created.
    Io(io::Error),
    /// It breaks the rule.
    Problem(PrivateDirProblem),
}

/// Checks that `dir` exists and is private to this user.
pub fn check(dir: &Path) -> Result<(), Unfit> {
    let meta = std::fs::metadata(dir).map_err(Unfit::Io)?;
    match private_dir_problem(&meta, current_uid()) {
        None => Ok(()),
        Some(problem) => Err(Unfit::Problem(problem)),
    }
}

/// Creates `dir` private to this user (mode 0700; its parents as the umask says) when it is
/// missing, and otherwise checks that it is.
pub fn ensure(dir: &Path) -> Result<(), Unfit> {
    match std::fs::metadata(dir) {
        Err(error) if error.kind() == io::ErrorKind::NotFound => create(dir).map_err(Unfit::Io),
        _ => check(dir),
    }
}

fn create(dir: &Path) -> io::Result<()> {
    if let Some(parent) = dir.parent().filter(|parent| !parent.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)?;
    }
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {}
        other => other?,
    }
    // The mode passed through the umask on creation: set it outright.
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
}

/// An exclusive lock on the file at `path` (created with mode 0600), held until the returned
/// file is dropped. Blocks until granted.
pub fn lock(path: &Path) -> io::Result<File> {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(path)?;
    // SAFETY: flock on a file descriptor this function owns.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(file)
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::MetadataExt;

    use super::*;

    #[test]
    fn creates_private_and_refuses_open() {
        let root = std::env::temp_dir().join(format!(
            "tabwire-private-{}-{}",
            std::process::id(),
            uuid::Uuid::new_v4().simple()
        ));
        let dir = root.join("a").join("b");
        ensure(&dir).unwrap();
        assert_eq!(std::fs::metadata(&dir).unwrap().mode() & 0o777, 0o700);
        ensure(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o750)).unwrap();
        assert!(matches!(
            ensure(&dir),
            Err(Unfit::Problem(PrivateDirProblem::OpenToOthers {
                mode: 0o750
            }))
        ));
        assert!(matches!(check(&root.join("missing")), Err(Unfit::Io(_))));
        let _held = lock(&root.join("x.lock")).unwrap();
        std::fs::remove_dir_all(root).unwrap();
    }
}
