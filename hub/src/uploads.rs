//! What uploads may carry (issue 26, docs/files.md): the caps per file and per call, and the
//! directories a local hub reads files from for agents (`--upload-dir`).
//!
//! A path is read only when it resolves — links followed — to a regular file inside one of
//! those directories; on Linux the opened file's own path is checked again, so a link swapped
//! in between the check and the open cannot lead outside. No directory is allowed by default,
//! and hosted mode allows none: a hosted client sends the bytes.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use tabwire_protocol::ErrorCode;

/// Per-call and per-file caps when the operator gives none, in MB (10^6 bytes).
pub const DEFAULT_MAX_MB: u64 = 25;
/// The largest cap an operator may set, in MB: within what the extension keeps for uploads not
/// yet set (`tabwire_protocol::files::MAX_KEPT_BYTES`).
pub const MAX_MB: u64 = 100;

/// The upload rules of a hub.
#[derive(Debug, Clone)]
pub struct Uploads {
    /// The directories paths may be read from, each resolved (no link left in it).
    dirs: Vec<PathBuf>,
    /// The same directories as given and as resolved, each without `.` and `..`: a path
    /// outside all of them is refused before the file system is asked anything about it.
    lexical: Vec<PathBuf>,
    /// The most bytes one call may upload, over all its files.
    pub max_call_bytes: u64,
    /// The most bytes one file may have.
    pub max_file_bytes: u64,
    /// Hosted mode: paths are never read.
    hosted: bool,
}

impl Default for Uploads {
    fn default() -> Self {
        Uploads {
            dirs: Vec::new(),
            lexical: Vec::new(),
            max_call_bytes: DEFAULT_MAX_MB * 1_000_000,
            max_file_bytes: DEFAULT_MAX_MB * 1_000_000,
            hosted: false,
        }
    }
}

/// Why a path or a size is refused: the error code and a sentence for the agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// `FORBIDDEN` (the operator does not allow it) or `INVALID_ARGUMENT`.
    pub code: ErrorCode,
    /// What is wrong and what to do.
    pub message: String,
}

impl Refusal {
    fn forbidden(message: String) -> Refusal {
        Refusal {
            code: ErrorCode::Forbidden,
            message,
        }
    }

    fn invalid(message: String) -> Refusal {
        Refusal {
            code: ErrorCode::InvalidArgument,
            message,
        }
    }
}

/// A directory given to `--upload-dir` that cannot be one.
#[derive(Debug, thiserror::Error)]
#[error("--upload-dir {dir}: {why}")]
pub struct BadDir {
    dir: PathBuf,
    why: String,
}

impl Uploads {
    /// Local mode's rules: files under `dirs` (each must exist), the caps in MB.
    pub fn local(dirs: &[PathBuf], max_call_mb: u64, max_file_mb: u64) -> Result<Uploads, BadDir> {
        let mut resolved = Vec::with_capacity(dirs.len());
        let mut lexical = Vec::with_capacity(2 * dirs.len());
        for dir in dirs {
            let bad = |why: String| BadDir {
                dir: dir.clone(),
                why,
            };
            let real = dir.canonicalize().map_err(|e| bad(e.to_string()))?;
            if !real.is_dir() {
                return Err(bad("not a directory".into()));
            }
            if dir.is_absolute() {
                lexical.push(normalised(dir));
            }
            lexical.push(real.clone());
            resolved.push(real);
        }
        Ok(Uploads {
            dirs: resolved,
            lexical,
            max_call_bytes: max_call_mb * 1_000_000,
            max_file_bytes: max_file_mb.min(max_call_mb) * 1_000_000,
            hosted: false,
        })
    }

    /// Hosted mode's rules: no paths, the caps in MB.
    pub fn hosted(max_call_mb: u64, max_file_mb: u64) -> Uploads {
        Uploads {
            dirs: Vec::new(),
            lexical: Vec::new(),
            max_call_bytes: max_call_mb * 1_000_000,
            max_file_bytes: max_file_mb.min(max_call_mb) * 1_000_000,
            hosted: true,
        }
    }

    /// The error for a file of `size` bytes, or a call of `total`, over a cap; `None` within.
    pub fn over_cap(&self, name: &str, size: u64, total: u64) -> Option<Refusal> {
        if size > self.max_file_bytes {
            return Some(Refusal::invalid(format!(
                "{name:?} has {size} bytes, over the hub's cap of {} bytes per file \
                 (--max-upload-file-mb); nothing was set",
                self.max_file_bytes
            )));
        }
        (total > self.max_call_bytes).then(|| {
            Refusal::invalid(format!(
                "the files add up to {total} bytes or more, over the hub's cap of {} bytes per \
                 call (--max-upload-mb); nothing was set: upload fewer at a time",
                self.max_call_bytes
            ))
        })
    }

    /// Reads the file at `path` for an upload: its name and bytes, under the caps (`so_far`:
    /// what the call's earlier files hold).
    pub fn read(&self, path: &str, so_far: u64) -> Result<(String, Vec<u8>), Refusal> {
        if self.hosted {
            return Err(Refusal::forbidden(
                "a hosted hub reads no files of its own: send the file's bytes as {name, \
                 dataBase64} instead of path"
                    .into(),
            ));
        }
        if self.dirs.is_empty() {
            return Err(Refusal::forbidden(
                "this hub reads no files for uploads: its operator allows a directory with \
                 `tabwire-hub --upload-dir DIR`; or send the bytes as {name, dataBase64}"
                    .into(),
            ));
        }
        let given = Path::new(path);
        if !given.is_absolute() {
            return Err(Refusal::invalid(format!(
                "path {path:?} is not absolute: give the file's full path"
            )));
        }
        // Outside every directory as written: refused alike whether it exists or not, so the
        // answer says nothing about the rest of the disk.
        if !self
            .lexical
            .iter()
            .any(|dir| normalised(given).starts_with(dir))
        {
            return Err(self.outside(path));
        }
        let unreadable =
            |e: std::io::Error| Refusal::invalid(format!("cannot read {path:?}: {}", io_words(&e)));
        let real = given.canonicalize().map_err(unreadable)?;
        self.check_inside(path, &real)?;
        // Only a regular file is opened: a FIFO would block the open, a device would have
        // effects of its own.
        if !std::fs::symlink_metadata(&real)
            .map_err(unreadable)?
            .is_file()
        {
            return Err(Refusal::invalid(format!("{path:?} is not a regular file")));
        }
        let mut file = open_regular(&real).map_err(unreadable)?;
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::AsRawFd;
            let opened = std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd()))
                .map_err(|e| Refusal::invalid(format!("cannot read {path:?}: {e}")))?;
            self.check_inside(path, &opened)?;
        }
        let meta = file
            .metadata()
            .map_err(|e| Refusal::invalid(format!("cannot read {path:?}: {}", io_words(&e))))?;
        if !meta.is_file() {
            return Err(Refusal::invalid(format!("{path:?} is not a regular file")));
        }
        let name = real
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if let Some(refusal) = self.over_cap(&name, meta.len(), so_far + meta.len()) {
            return Err(refusal);
        }
        // The file may grow while it is read: read at most one byte past the cap.
        let mut bytes = Vec::with_capacity(meta.len() as usize);
        (&mut file)
            .take(self.max_file_bytes + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| Refusal::invalid(format!("cannot read {path:?}: {}", io_words(&e))))?;
        let size = bytes.len() as u64;
        if let Some(refusal) = self.over_cap(&name, size, so_far + size) {
            return Err(refusal);
        }
        Ok((name, bytes))
    }

    /// Refuses a resolved path outside every allowed directory.
    fn check_inside(&self, path: &str, real: &Path) -> Result<(), Refusal> {
        if self.dirs.iter().any(|dir| real.starts_with(dir)) {
            return Ok(());
        }
        Err(self.outside(path))
    }

    fn outside(&self, path: &str) -> Refusal {
        Refusal::forbidden(format!(
            "{path:?} is outside the directories this hub reads uploads from (--upload-dir; \
             links are followed before the check): copy the file into one, or send its bytes \
             as {{name, dataBase64}}"
        ))
    }
}

/// `path` without `.` and with each `..` taking the component before it away, as written
/// (links are not followed here).
fn normalised(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// Opens a regular file without blocking on it, without making it the controlling terminal
/// and without following a link put in its place; then checks again that it is a regular file.
fn open_regular(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_NOFOLLOW)
        .open(path)?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    Ok(file)
}

/// An I/O error in a few words, without the OS's error number.
fn io_words(error: &std::io::Error) -> String {
    match error.kind() {
        std::io::ErrorKind::NotFound => "no such file".into(),
        std::io::ErrorKind::PermissionDenied => "permission denied".into(),
        _ => error.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Scratch(PathBuf);

    impl Scratch {
        fn new(name: &str) -> Scratch {
            let dir = std::env::temp_dir().join(format!(
                "tabwire-uploads-{name}-{}",
                crate::random::hex::<8>()
            ));
            std::fs::create_dir_all(&dir).unwrap();
            Scratch(dir)
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn path(p: &Path) -> &str {
        p.to_str().unwrap()
    }

    #[test]
    fn only_files_inside_an_allowed_directory_are_read() {
        let root = Scratch::new("inside");
        let allowed = root.0.join("allowed");
        let outside = root.0.join("outside");
        std::fs::create_dir_all(allowed.join("sub")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(allowed.join("sub/cv.txt"), b"hello").unwrap();
        std::fs::write(outside.join("secret.txt"), b"secret").unwrap();
        let uploads = Uploads::local(std::slice::from_ref(&allowed), 25, 25).unwrap();

        let (name, bytes) = uploads.read(path(&allowed.join("sub/cv.txt")), 0).unwrap();
        assert_eq!((name.as_str(), bytes.as_slice()), ("cv.txt", &b"hello"[..]));

        // Outside, through `..`, and through a link planted inside: all refused.
        let refused = uploads
            .read(path(&outside.join("secret.txt")), 0)
            .unwrap_err();
        assert_eq!(refused.code, ErrorCode::Forbidden);
        let dotdot = allowed.join("../outside/secret.txt");
        assert_eq!(
            uploads.read(path(&dotdot), 0).unwrap_err().code,
            ErrorCode::Forbidden
        );
        std::os::unix::fs::symlink(outside.join("secret.txt"), allowed.join("link.txt")).unwrap();
        let linked = uploads
            .read(path(&allowed.join("link.txt")), 0)
            .unwrap_err();
        assert_eq!(linked.code, ErrorCode::Forbidden, "{}", linked.message);
        std::os::unix::fs::symlink(&outside, allowed.join("dir")).unwrap();
        assert_eq!(
            uploads
                .read(path(&allowed.join("dir/secret.txt")), 0)
                .unwrap_err()
                .code,
            ErrorCode::Forbidden
        );
        // Not a file, missing, relative.
        assert_eq!(
            uploads
                .read(path(&allowed.join("sub")), 0)
                .unwrap_err()
                .code,
            ErrorCode::InvalidArgument
        );
        assert!(
            uploads
                .read(path(&allowed.join("none")), 0)
                .unwrap_err()
                .message
                .contains("no such file")
        );
        assert_eq!(
            uploads.read("cv.txt", 0).unwrap_err().code,
            ErrorCode::InvalidArgument
        );
    }

    #[test]
    fn special_files_are_refused_without_blocking_and_outside_paths_say_nothing() {
        let root = Scratch::new("special");
        let fifo = root.0.join("pipe");
        let made = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path; mkfifo only creates a file.
        assert_eq!(unsafe { libc::mkfifo(made.as_ptr(), 0o600) }, 0);
        std::os::unix::fs::symlink("/dev/zero", root.0.join("zero")).unwrap();
        let uploads = Uploads::local(std::slice::from_ref(&root.0), 25, 25).unwrap();
        // A FIFO with no writer would block an open for ever: refused at once.
        let refused = uploads.read(path(&fifo), 0).unwrap_err();
        assert!(
            refused.message.contains("not a regular file"),
            "{}",
            refused.message
        );
        let refused = uploads.read(path(&root.0.join("zero")), 0).unwrap_err();
        assert_eq!(refused.code, ErrorCode::Forbidden);
        // Outside the directories, a file that exists and one that does not read alike.
        let exists = uploads.read("/etc/hostname", 0).unwrap_err();
        let missing = uploads.read("/etc/no-such-file-here", 0).unwrap_err();
        assert_eq!(exists.code, ErrorCode::Forbidden);
        assert_eq!(
            exists.message.replace("/etc/hostname", "X"),
            missing.message.replace("/etc/no-such-file-here", "X")
        );
    }

    #[test]
    fn no_directory_and_hosted_mode_read_nothing_and_say_how_to_allow_it() {
        let root = Scratch::new("none");
        std::fs::write(root.0.join("a.txt"), b"a").unwrap();
        let none = Uploads::local(&[], 25, 25).unwrap();
        let refused = none.read(path(&root.0.join("a.txt")), 0).unwrap_err();
        assert_eq!(refused.code, ErrorCode::Forbidden);
        assert!(
            refused.message.contains("--upload-dir"),
            "{}",
            refused.message
        );
        let hosted = Uploads::hosted(25, 25);
        let refused = hosted.read(path(&root.0.join("a.txt")), 0).unwrap_err();
        assert!(
            refused.message.contains("dataBase64"),
            "{}",
            refused.message
        );
        assert!(Uploads::local(&[root.0.join("missing")], 25, 25).is_err());
    }

    #[test]
    fn caps_name_themselves() {
        let root = Scratch::new("caps");
        std::fs::write(root.0.join("big.bin"), vec![0u8; 1_000_001]).unwrap();
        std::fs::write(root.0.join("small.bin"), vec![0u8; 10]).unwrap();
        let uploads = Uploads::local(std::slice::from_ref(&root.0), 2, 1).unwrap();
        let refused = uploads.read(path(&root.0.join("big.bin")), 0).unwrap_err();
        assert!(
            refused.message.contains("--max-upload-file-mb"),
            "{}",
            refused.message
        );
        let refused = uploads
            .read(path(&root.0.join("small.bin")), 1_999_995)
            .unwrap_err();
        assert!(
            refused.message.contains("--max-upload-mb"),
            "{}",
            refused.message
        );
        assert!(uploads.read(path(&root.0.join("small.bin")), 0).is_ok());
    }
}
