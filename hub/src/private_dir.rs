//! Directories only the hub's user may enter — the Unix socket's, the pairing state, the auth
//! directory — and the lock that keeps writers of their files apart.
//!
//! The rule itself (owned by this user, no permission bit for group or others) is the
//! protocol's [`private_dir_problem`], which the shim applies to the socket's directory too;
//! each caller words a problem for what its directory holds.
//!
//! [`ensure`] never follows a symbolic link that another user put in the directory's own place.
//! The socket's default directory is in the shared `/tmp`, where another user can plant a link
//! between any look at the path and the next: a `chmod` by path would then change whatever the
//! link names, and a socket bound there would be bound where the link leads. So after `mkdir`
//! (which fails with `EEXIST` on a link as on a directory) the directory is opened with
//! `O_NOFOLLOW | O_DIRECTORY`, judged by `fstat` on that descriptor, and its mode set with
//! `fchmod` through it, only when this call made it: nothing is looked up by path twice. A link
//! of the user's own (a state directory kept on another disk, say) is followed, and what it
//! names judged as it is, never chmodded; no one else can replace such a link in a sticky
//! directory like `/tmp`. Once the directory is a private one of this user's, in a sticky
//! `/tmp`, no other user can rename or remove it, so the paths inside it are safe. (The socket's
//! directory refuses every link, the user's own too: `local_socket`.)

use std::fs::File;
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
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
/// missing, and otherwise checks that it is. What is checked is the directory itself, opened
/// without following a link: a link in its place that is not this user's own (planted before or
/// during the call) is [`PrivateDirProblem::NotADirectory`], never the place it points at; the
/// user's own link is followed, and what it names is judged and left as it is.
pub fn ensure(dir: &Path) -> Result<(), Unfit> {
    if let Some(parent) = dir.parent().filter(|parent| !parent.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(Unfit::Io)?;
    }
    let created = match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => true,
        Err(error) if error.kind() == io::ErrorKind::AlreadyExists => false,
        Err(error) => return Err(Unfit::Io(error)),
    };
    let uid = current_uid();
    let opened = match open_dir(dir, libc::O_NOFOLLOW) {
        // Linux says `ENOTDIR` for a link when `O_DIRECTORY` is given too, others `ELOOP`.
        Err(error)
            if matches!(error.raw_os_error(), Some(libc::ELOOP | libc::ENOTDIR))
                && own_link(dir, uid) =>
        {
            open_dir(dir, 0).map_err(unfit)?
        }
        other => other.map_err(unfit)?,
    };
    let meta = opened.metadata().map_err(Unfit::Io)?;
    if created && meta.uid() == uid {
        // Made just now (and still ours, through the descriptor): the mode passed through the
        // umask on creation, so it is set outright.
        opened
            .set_permissions(std::fs::Permissions::from_mode(0o700))
            .map_err(Unfit::Io)?;
        return Ok(());
    }
    match private_dir_problem(&meta, uid) {
        None => Ok(()),
        Some(problem) => Err(Unfit::Problem(problem)),
    }
}

/// Opens the directory at `dir` (`O_DIRECTORY`: anything that is no directory fails with
/// `ENOTDIR`); with `O_NOFOLLOW` in `flags`, a link in its place fails too (`ELOOP`, or
/// `ENOTDIR` on Linux).
fn open_dir(dir: &Path, flags: i32) -> io::Result<File> {
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags | libc::O_DIRECTORY | libc::O_CLOEXEC)
        .open(dir)
}

/// Whether `dir` is a symbolic link that this user made (by its owner, as `lstat` reports it).
fn own_link(dir: &Path, uid: u32) -> bool {
    std::fs::symlink_metadata(dir)
        .is_ok_and(|meta| meta.file_type().is_symlink() && meta.uid() == uid)
}

fn unfit(error: io::Error) -> Unfit {
    match error.raw_os_error() {
        Some(libc::ELOOP | libc::ENOTDIR) => Unfit::Problem(PrivateDirProblem::NotADirectory),
        _ => Unfit::Io(error),
    }
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

    fn scratch(name: &str) -> std::path::PathBuf {
        std::env::temp_dir().join(format!(
            "tabwire-private-{name}-{}-{}",
            std::process::id(),
            uuid::Uuid::new_v4().simple()
        ))
    }

    /// The race the socket's directory in `/tmp` is open to: the path was free when looked at,
    /// and another user's link to a place of their choosing is there by the time of `mkdir`.
    /// That `mkdir` fails with `EEXIST` as for a directory; the link is refused, and what it
    /// names keeps its mode. (The link is planted before the call here: `mkdir` and every later
    /// step see exactly what they would see after a race lost. Only root can give a link
    /// another owner, so that part runs as root.)
    #[test]
    fn another_users_link_in_the_directorys_place_is_refused_and_what_it_names_left_alone() {
        let root = scratch("link");
        let target = root.join("victim");
        std::fs::create_dir_all(&target).unwrap();
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o755)).unwrap();
        let link = root.join("tabwire-1000");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        // The user's own link is followed; what it names is judged, never chmodded.
        assert!(matches!(
            ensure(&link),
            Err(Unfit::Problem(PrivateDirProblem::OpenToOthers {
                mode: 0o755
            }))
        ));
        assert_eq!(
            std::fs::metadata(&target).unwrap().mode() & 0o777,
            0o755,
            "the link's target was not chmodded"
        );
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o700)).unwrap();
        ensure(&link).unwrap();
        if current_uid() == 0 {
            // Another user's link to a directory that passes every check if followed: still
            // refused, as it is to one that would be chmodded if followed.
            std::os::unix::fs::lchown(&link, Some(65534), Some(65534)).unwrap();
            assert!(matches!(
                ensure(&link),
                Err(Unfit::Problem(PrivateDirProblem::NotADirectory))
            ));
            std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o755)).unwrap();
            assert!(matches!(
                ensure(&link),
                Err(Unfit::Problem(PrivateDirProblem::NotADirectory))
            ));
            assert_eq!(std::fs::metadata(&target).unwrap().mode() & 0o777, 0o755);
        }
        // A file there is no directory either.
        std::fs::write(root.join("file"), "").unwrap();
        assert!(matches!(
            ensure(&root.join("file")),
            Err(Unfit::Problem(PrivateDirProblem::NotADirectory))
        ));
        std::fs::remove_dir_all(root).unwrap();
    }

    /// A directory that was there already (made by someone else between a look and `mkdir`, or
    /// left by an earlier run) is judged as it is, never chmodded into shape.
    #[test]
    fn an_existing_directory_is_judged_not_repaired() {
        let root = scratch("existing");
        let dir = root.join("d");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        assert!(matches!(
            ensure(&dir),
            Err(Unfit::Problem(PrivateDirProblem::OpenToOthers {
                mode: 0o777
            }))
        ));
        assert_eq!(std::fs::metadata(&dir).unwrap().mode() & 0o777, 0o777);
        // Another user's (root's, judged by a user it is not).
        if current_uid() == 0 {
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
            std::os::unix::fs::chown(&dir, Some(65534), Some(65534)).unwrap();
            assert!(matches!(
                ensure(&dir),
                Err(Unfit::Problem(PrivateDirProblem::Owner(65534)))
            ));
        }
        std::fs::remove_dir_all(root).unwrap();
    }
}
