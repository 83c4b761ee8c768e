//! Binding the hub's Unix socket safely.
//!
//! Anyone who can connect to the socket can drive the user's browsers, so it lives in a
//! directory only the user can enter (created with mode 0700, or checked to be so) and is itself
//! mode 0600. A socket file left behind by a hub that was killed is replaced; one that still
//! answers belongs to a running hub, and binding fails rather than stealing it.

use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::Path;

use tokio::net::UnixListener;

/// Creates (or checks) the socket's private directory and binds the socket.
pub async fn bind(path: &Path) -> io::Result<UnixListener> {
    let dir = path
        .parent()
        .filter(|dir| !dir.as_os_str().is_empty())
        .ok_or_else(|| invalid(format!("socket path {} has no directory", path.display())))?;
    ensure_private_dir(dir)?;
    match std::fs::symlink_metadata(path) {
        Ok(_) => {
            if tokio::net::UnixStream::connect(path).await.is_ok() {
                return Err(io::Error::new(
                    io::ErrorKind::AddrInUse,
                    format!(
                        "another tabwire-hub is already listening on {}",
                        path.display()
                    ),
                ));
            }
            std::fs::remove_file(path)?;
        }
        Err(error) if error.kind() == io::ErrorKind::NotFound => {}
        Err(error) => return Err(error),
    }
    let listener = UnixListener::bind(path)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    Ok(listener)
}

/// The directory must belong to this user and be closed to everyone else.
fn ensure_private_dir(dir: &Path) -> io::Result<()> {
    match std::fs::metadata(dir) {
        Err(error) if error.kind() == io::ErrorKind::NotFound => {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)?;
            // `recursive` applies the mode to every created level only subject to the umask;
            // set it explicitly on the socket's own directory.
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
        }
        Err(error) => Err(error),
        Ok(meta) => {
            let uid = tabwire_protocol::local::current_uid();
            if !meta.is_dir() {
                Err(invalid(format!("{} is not a directory", dir.display())))
            } else if meta.uid() != uid {
                Err(invalid(format!(
                    "{} belongs to another user; choose a socket path in a directory of your own",
                    dir.display()
                )))
            } else if meta.mode() & 0o077 != 0 {
                Err(invalid(format!(
                    "{} is accessible to other users (mode {:o}); the hub's socket needs a private \
                     directory (chmod 700 it, or choose another --socket path)",
                    dir.display(),
                    meta.mode() & 0o777
                )))
            } else {
                Ok(())
            }
        }
    }
}

fn invalid(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, message)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir =
            std::env::temp_dir().join(format!("tabwire-hub-test-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    #[tokio::test]
    async fn creates_a_private_dir_and_a_0600_socket() {
        let dir = scratch("create");
        let path = dir.join("nested").join("hub.sock");
        let _listener = bind(&path).await.unwrap();
        let dir_mode = std::fs::metadata(path.parent().unwrap()).unwrap().mode() & 0o777;
        let sock_mode = std::fs::metadata(&path).unwrap().mode() & 0o777;
        assert_eq!(dir_mode, 0o700);
        assert_eq!(sock_mode, 0o600);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[tokio::test]
    async fn refuses_a_shared_dir() {
        let dir = scratch("shared");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let error = bind(&dir.join("hub.sock")).await.unwrap_err();
        assert!(error.to_string().contains("private"), "{error}");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[tokio::test]
    async fn replaces_a_stale_socket_but_not_a_live_one() {
        let dir = scratch("stale");
        let path = dir.join("hub.sock");
        let live = bind(&path).await.unwrap();
        let error = bind(&path).await.unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::AddrInUse);
        drop(live); // the file stays behind, like after a crash
        assert!(path.exists());
        let _again = bind(&path).await.unwrap();
        std::fs::remove_dir_all(dir).unwrap();
    }
}
