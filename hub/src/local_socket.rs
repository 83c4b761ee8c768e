//! Binding the hub's Unix socket safely, and letting only the hub's own user through it.
//!
//! Anyone who can connect to the socket can drive the user's browsers, so it lives in a
//! directory only the user can enter (created with mode 0700, or checked to be so) and is itself
//! mode 0600. A socket file left behind by a hub that was killed is replaced; one that still
//! answers belongs to a running hub, and binding fails rather than stealing it.
//!
//! File modes can be loosened after the hub started (or the socket reached by some other
//! route), so every accepted connection is checked again by its peer's user ID, which the
//! kernel reports and the peer cannot choose ([`check_peer`]).

use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use tabwire_protocol::local::{PrivateDirProblem, current_uid};

use crate::private_dir::{self, Unfit};

use tokio::net::{UnixListener, UnixStream};

/// Creates (or checks) the socket's private directory and binds the socket. `also` is the other
/// place a hub of this user may listen by default (the home fallback beside a default socket in
/// `/tmp`, which clients try when nothing answers in `/tmp`): a hub answering there is running
/// already, and a second one would split the user's agents between two hubs.
pub async fn bind(path: &Path, also: Option<&Path>) -> io::Result<UnixListener> {
    // Only a hub of this user's counts: another user's listener there is no hub the clients
    // would talk to (they check who listens), so it does not keep this one from starting.
    if let Some(also) = also
        && let Ok(there) = tokio::net::UnixStream::connect(also).await
        && there
            .peer_cred()
            .is_ok_and(|cred| cred.uid() == current_uid())
    {
        return Err(io::Error::new(
            io::ErrorKind::AddrInUse,
            format!(
                "another tabwire-hub is already listening on {}, where a hub goes while \
                 another user holds the socket's usual directory, and where tabwire-mcp finds \
                 it; use that hub, or stop it first",
                also.display()
            ),
        ));
    }
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

/// Why a connection on the socket was closed without being served.
#[derive(Debug, thiserror::Error)]
pub enum PeerRefused {
    /// The peer runs as another user.
    #[error(
        "closed a connection on the Unix socket from user {peer}: this hub serves only its own \
         user ({own}); if the socket's directory is open to others, chmod 700 it"
    )]
    OtherUser {
        /// The peer's user ID.
        peer: u32,
        /// The hub's.
        own: u32,
    },
    /// The system did not say who the peer is.
    #[error("closed a connection on the Unix socket whose user cannot be read ({0})")]
    Unknown(io::Error),
}

/// Lets a connection through only when its peer runs as `own_uid`, the hub's user: the
/// kernel's record of who connected (`SO_PEERCRED` on Linux, `getpeereid` on macOS and the
/// BSDs), not anything the peer says.
pub fn check_peer(stream: &UnixStream, own_uid: u32) -> Result<(), PeerRefused> {
    let peer = stream.peer_cred().map_err(PeerRefused::Unknown)?.uid();
    if peer == own_uid {
        Ok(())
    } else {
        Err(PeerRefused::OtherUser { peer, own: own_uid })
    }
}

/// The directory must belong to this user and be closed to everyone else, and be a directory
/// itself: a symbolic link there (planted in `/tmp` by someone else, say) is not followed,
/// since whoever planted it chose where it leads.
fn ensure_private_dir(dir: &Path) -> io::Result<()> {
    let uid = current_uid();
    if std::fs::symlink_metadata(dir).is_ok_and(|meta| meta.file_type().is_symlink()) {
        return Err(invalid(format!(
            "{} is a symbolic link, which the hub does not follow for its socket's directory; \
             remove it, or choose a socket path in a directory of your own",
            dir.display()
        )));
    }
    match private_dir::ensure(dir) {
        Ok(()) => Ok(()),
        Err(Unfit::Io(error)) => Err(error),
        Err(Unfit::Problem(PrivateDirProblem::NotADirectory)) => {
            // Also another user's link that appeared after the look above: refused unfollowed.
            Err(invalid(format!(
                "{} is not a directory of its own (a file, or a symbolic link, which the hub \
                 does not follow for its socket's directory); remove it, or choose a socket \
                 path in a directory of your own",
                dir.display()
            )))
        }
        Err(Unfit::Problem(PrivateDirProblem::Owner(owner))) => Err(invalid(format!(
            "{} belongs to user {owner}, not to this hub's user ({uid}), and its owner could \
             pose as the hub; remove it, or choose a socket path in a directory of your own",
            dir.display()
        ))),
        Err(Unfit::Problem(PrivateDirProblem::OpenToOthers { mode })) => Err(invalid(format!(
            "{} is accessible to other users (mode {mode:o}); the hub's socket needs a \
             private directory (chmod 700 it, or choose another --socket path)",
            dir.display(),
        ))),
    }
}

fn invalid(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, message)
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::MetadataExt;

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
        let _listener = bind(&path, None).await.unwrap();
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
        let error = bind(&dir.join("hub.sock"), None).await.unwrap_err();
        assert!(error.to_string().contains("private"), "{error}");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[tokio::test]
    async fn refuses_a_link_in_place_of_its_directory() {
        let dir = scratch("link");
        std::fs::create_dir_all(dir.join("real")).unwrap();
        std::fs::set_permissions(dir.join("real"), std::fs::Permissions::from_mode(0o700)).unwrap();
        std::os::unix::fs::symlink(dir.join("real"), dir.join("link")).unwrap();
        let error = bind(&dir.join("link").join("hub.sock"), None)
            .await
            .unwrap_err();
        assert!(error.to_string().contains("symbolic link"), "{error}");
        assert!(!dir.join("real").join("hub.sock").exists());
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[tokio::test]
    async fn lets_only_its_own_user_through() {
        let dir = scratch("peer");
        let path = dir.join("hub.sock");
        let listener = bind(&path, None).await.unwrap();
        let _client = UnixStream::connect(&path).await.unwrap();
        let (accepted, _) = listener.accept().await.unwrap();
        let own = current_uid();
        check_peer(&accepted, own).unwrap();
        // The same connection, judged by a hub of another user. (A real process of another
        // user is refused in tests/e2e/socket_peers.rs.)
        let other = own.wrapping_add(1);
        match check_peer(&accepted, other) {
            Err(refused @ PeerRefused::OtherUser { .. }) => {
                let message = refused.to_string();
                assert!(message.contains(&format!("from user {own}")), "{message}");
                assert!(message.contains("chmod 700"), "{message}");
            }
            other => panic!("expected a refusal, got {other:?}"),
        }
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// The default in `/tmp` and its home fallback are one place to clients: a hub answering
    /// at the fallback keeps a second from starting in `/tmp`; a dead socket file there does
    /// not.
    #[tokio::test]
    async fn a_hub_answering_at_the_fallback_keeps_another_from_starting() {
        let dir = scratch("also");
        let home = dir.join("home").join("hub.sock");
        let tmp = dir.join("tmp").join("hub.sock");
        let running = bind(&home, None).await.unwrap();
        let error = bind(&tmp, Some(&home)).await.unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::AddrInUse);
        assert!(
            error.to_string().contains(&home.display().to_string()),
            "{error}"
        );
        assert!(!tmp.exists());
        drop(running);
        let _bound = bind(&tmp, Some(&home)).await.unwrap();
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[tokio::test]
    async fn replaces_a_stale_socket_but_not_a_live_one() {
        let dir = scratch("stale");
        let path = dir.join("hub.sock");
        let live = bind(&path, None).await.unwrap();
        let error = bind(&path, None).await.unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::AddrInUse);
        drop(live); // the file stays behind, like after a crash
        assert!(path.exists());
        let _again = bind(&path, None).await.unwrap();
        std::fs::remove_dir_all(dir).unwrap();
    }
}
