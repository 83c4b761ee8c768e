//! Connecting to the hub's socket only when it is safely the user's own.
//!
//! Whoever listens on the socket gets everything the agent sends (text it types into pages
//! included) and answers in the hub's name. The default path may lie in the shared `/tmp`, where
//! another user can create the directory first. So before every connection the shim checks the
//! socket's directory (it must belong to this user and be closed to everyone else, as the hub
//! makes it), and after connecting, that the listening process runs as this user (the kernel's
//! record: `SO_PEERCRED` on Linux, `getpeereid` on macOS). A failed check is a [`Refusal`]: the
//! shim stops rather than retrying, having sent nothing.

use std::io;
use std::path::{Path, PathBuf};

use tabwire_protocol::local::{PrivateDirProblem, current_uid, private_dir_problem};
use tokio::net::UnixStream;

/// Why the shim will not talk to what is at the socket path.
#[derive(Debug)]
pub enum Refusal {
    /// The socket's directory is something else than a directory of this user's that only
    /// this user can enter.
    Directory {
        /// The socket.
        socket: PathBuf,
        /// Its directory.
        dir: PathBuf,
        /// What is wrong with it.
        problem: PrivateDirProblem,
        /// This process's user ID.
        own: u32,
    },
    /// The process listening on the socket runs as another user.
    Peer {
        /// The socket.
        socket: PathBuf,
        /// The listener's user ID.
        peer: u32,
        /// This process's user ID.
        own: u32,
    },
    /// The system would not say which user listens on the socket.
    PeerUnknown {
        /// The socket.
        socket: PathBuf,
        /// What the system said.
        error: io::Error,
    },
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::Directory {
                socket,
                dir,
                problem,
                own,
            } => {
                let (socket, dir) = (socket.display(), dir.display());
                match problem {
                    PrivateDirProblem::NotADirectory => write!(
                        f,
                        "refusing {socket}: {dir} is not a directory (a symbolic link is not \
                         followed); remove it and restart tabwire-hub, or pass --socket"
                    ),
                    PrivateDirProblem::Owner(owner) => write!(
                        f,
                        "refusing {socket}: its directory {dir} belongs to user {owner}, not to \
                         you (user {own}), so whoever listens there could be posing as \
                         tabwire-hub; another user created {dir}: have it removed and restart \
                         tabwire-hub, or pass --socket in a directory of your own"
                    ),
                    PrivateDirProblem::OpenToOthers { mode } => write!(
                        f,
                        "refusing {socket}: its directory {dir} is open to other users (mode \
                         {mode:o}), so anyone could have put a socket there; run `chmod 700 \
                         {dir}` and restart tabwire-hub"
                    ),
                }
            }
            Refusal::Peer { socket, peer, own } => write!(
                f,
                "refusing {}: the process listening there runs as user {peer}, not as you (user \
                 {own}), so it is not your tabwire-hub; stop it, remove the socket and start \
                 tabwire-hub",
                socket.display()
            ),
            Refusal::PeerUnknown { socket, error } => write!(
                f,
                "refusing {}: the system would not say which user listens there ({error}); \
                 tabwire-mcp talks only to a hub of your own user",
                socket.display()
            ),
        }
    }
}

impl std::error::Error for Refusal {}

/// Why [`connect`] gave no connection.
#[derive(Debug)]
pub enum Failure {
    /// Nothing answers (yet): worth trying again.
    Unreachable(io::Error),
    /// Something answers that must not be trusted: never worth trying again.
    Refused(Refusal),
}

/// Connects to the hub at `socket`, or, when nothing answers there, at `also` (the default
/// socket's home fallback beside one in `/tmp`: `tabwire_protocol::local::DefaultSocket::also`),
/// each checked as [`connect`] checks it; returns the connection and the path it went to. A
/// refusal is final, except for an unfit directory at `also` with no socket in it: nothing
/// there could be the hub, and `also` is only where a hub may be, so that counts as nothing
/// answering (a hub can still start at `socket`). When neither answers, the failure is
/// `socket`'s, the place a hub is looked for first.
pub async fn connect_either<'a>(
    socket: &'a Path,
    also: Option<&'a Path>,
) -> Result<(UnixStream, &'a Path), Failure> {
    let first = connect(socket).await;
    match (first, also) {
        (Ok(stream), _) => Ok((stream, socket)),
        (Err(Failure::Unreachable(error)), Some(also)) => match connect(also).await {
            Ok(stream) => Ok((stream, also)),
            Err(Failure::Unreachable(_)) => Err(Failure::Unreachable(error)),
            Err(Failure::Refused(Refusal::Directory { .. }))
                if std::fs::symlink_metadata(also).is_err() =>
            {
                Err(Failure::Unreachable(error))
            }
            Err(refused) => Err(refused),
        },
        (Err(failure), _) => Err(failure),
    }
}

/// Connects to the hub at `socket` after checking its directory, then checks who listens.
pub async fn connect(socket: &Path) -> Result<UnixStream, Failure> {
    let own = current_uid();
    // A bare file name lives in the working directory.
    let dir = match socket.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    // A directory that is not there yet is a hub that has not started yet. A symbolic link is
    // not followed: whoever could plant it chose where it leads, so it is no directory here.
    let meta = std::fs::symlink_metadata(dir).map_err(Failure::Unreachable)?;
    if let Some(problem) = private_dir_problem(&meta, own) {
        return Err(Failure::Refused(Refusal::Directory {
            socket: socket.to_owned(),
            dir: dir.to_owned(),
            problem,
            own,
        }));
    }
    let stream = UnixStream::connect(socket)
        .await
        .map_err(Failure::Unreachable)?;
    match stream.peer_cred() {
        Ok(cred) if cred.uid() == own => Ok(stream),
        Ok(cred) => Err(Failure::Refused(Refusal::Peer {
            socket: socket.to_owned(),
            peer: cred.uid(),
            own,
        })),
        Err(error) => Err(Failure::Refused(Refusal::PeerUnknown {
            socket: socket.to_owned(),
            error,
        })),
    }
}
