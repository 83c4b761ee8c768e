//! The default socket directory in the shared `/tmp`, taken first by another user: the hub
//! and the shim of a user without `XDG_RUNTIME_DIR` (uid 65534 here; these tests run as root,
//! which plays the other user) each see that `/tmp/tabwire-65534` is not theirs — a directory
//! of root's, then a link root planted that points at a private directory of the user's own,
//! which must not be followed — say so, and meet in the same private directory under the
//! user's home without talking to each other. When the other user's directory goes away while
//! the hub sits there, the shim still finds it, and no second hub starts in `/tmp`.

use std::io::{BufRead, BufReader, ErrorKind, Write};
use std::os::unix::fs::{PermissionsExt, chown};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use tabwire_e2e::artifacts::artifacts;
use tabwire_e2e::scratch::Scratch;

/// The user whose default directory is taken.
const USER: u32 = 65534;

/// `/tmp/tabwire-65534`, removed before and after the test.
const SHARED: &str = "/tmp/tabwire-65534";

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn clear_shared() {
    match std::fs::symlink_metadata(SHARED) {
        Ok(meta) if meta.is_dir() => std::fs::remove_dir_all(SHARED).unwrap(),
        Ok(_) => std::fs::remove_file(SHARED).unwrap(),
        Err(_) => {}
    }
}

/// Removes whatever the test put at [`SHARED`], however the test ends.
struct SharedGuard;

impl Drop for SharedGuard {
    fn drop(&mut self) {
        clear_shared();
    }
}

/// The hub and shim copied where the user can run them, and the user's home.
struct Installed {
    _bin: Scratch,
    hub: PathBuf,
    shim: PathBuf,
    home: Scratch,
}

impl Installed {
    fn new() -> Installed {
        let bin = Scratch::new("socket-dir-bin");
        chmod(bin.path(), 0o755);
        let copy = |from: &Path, name: &str| {
            let to = bin.path().join(name);
            std::fs::copy(from, &to).unwrap();
            chmod(&to, 0o755);
            to
        };
        let hub = copy(&artifacts().hub, "tabwire-hub");
        let shim = copy(&artifacts().shim, "tabwire-mcp");
        let home = Scratch::new("socket-dir-home");
        chown(home.path(), Some(USER), Some(USER)).unwrap();
        Installed {
            _bin: bin,
            hub,
            shim,
            home,
        }
    }

    /// `program` as the user, with a bare environment: a home and no runtime directory.
    fn command(&self, program: &Path) -> Command {
        let mut command = Command::new(program);
        command
            .env_clear()
            .env("HOME", self.home.path())
            .env("TABWIRE_LOG", "info")
            .current_dir("/")
            .uid(USER)
            .gid(USER);
        command
    }

    /// Starts the hub; the running hub, the lines it logged before listening, and its socket.
    fn start_hub(&self) -> (RunningHub, Vec<String>, PathBuf) {
        let mut command = self.command(&self.hub);
        command
            .args(["--host", "127.0.0.1", "--port", "0"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut hub = RunningHub(spawn(command));
        let stderr = hub.0.stderr.take().unwrap();
        let (lines, heard) = mpsc::channel();
        // Drained for the hub's life: a hub whose stderr is closed fails its next log line.
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                tabwire_e2e::logs::forward_log("hub", &line);
                let _ = lines.send(line);
            }
        });
        let mut before = Vec::new();
        loop {
            let line = heard
                .recv_timeout(Duration::from_secs(20))
                .unwrap_or_else(|_| panic!("the hub did not start: {before:#?}"));
            if let Some(socket) = line.split(" socket=").nth(1)
                && line.starts_with("tabwire-hub listening")
            {
                return (hub, before, PathBuf::from(socket));
            }
            before.push(line);
        }
    }

    /// Starts a hub that must not start: everything it said before it exited. It failing to
    /// exit would show as it saying that it listens, which fails the test at once.
    fn second_hub_refused(&self) -> String {
        let mut command = self.command(&self.hub);
        command
            .args(["--host", "127.0.0.1", "--port", "0"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut hub = RunningHub(spawn(command));
        let stderr = hub.0.stderr.take().unwrap();
        let mut said = String::new();
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            assert!(
                !line.starts_with("tabwire-hub listening"),
                "a second hub started: {said}{line}"
            );
            said.push_str(&line);
            said.push('\n');
        }
        assert!(!hub.0.wait().unwrap().success(), "{said}");
        said
    }

    /// Runs the shim with no `--socket`: what it says on stderr and its first answer to an
    /// MCP `initialize`.
    fn initialize_through_shim(&self) -> (String, String) {
        let mut command = self.command(&self.shim);
        command
            .args(["--wait", "10"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = spawn(command);
        let initialize = serde_json::json!({
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "socket-dir", "version": "0"}}
        });
        let mut stdin = child.stdin.take().unwrap();
        writeln!(stdin, "{initialize}").unwrap();
        let mut answer = String::new();
        BufReader::new(child.stdout.as_mut().unwrap())
            .read_line(&mut answer)
            .unwrap();
        // End of input ends the shim; its output is read to the end.
        drop(stdin);
        let output = child.wait_with_output().unwrap();
        (String::from_utf8_lossy(&output.stderr).into_owned(), answer)
    }
}

/// A hub run as the user, killed when dropped.
struct RunningHub(Child);

impl Drop for RunningHub {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Spawns, retrying while a concurrent test's fork still holds the copied file open for
/// writing (ETXTBSY).
fn spawn(mut command: Command) -> Child {
    let mut attempts = 0;
    loop {
        match command.spawn() {
            Err(error) if error.kind() == ErrorKind::ExecutableFileBusy && attempts < 50 => {
                attempts += 1;
                std::thread::sleep(Duration::from_millis(20));
            }
            started => break started.expect("run as uid 65534 (these tests run as root)"),
        }
    }
}

#[test]
fn a_taken_shared_directory_sends_hub_and_shim_to_the_same_private_one() {
    artifacts();
    let installed = Installed::new();
    let fallback = installed
        .home
        .path()
        .join(".local/state/tabwire-run/hub.sock");
    clear_shared();
    let _guard = SharedGuard;

    // Root's directory, open to all: whoever listens there could pose as the user's hub.
    std::fs::create_dir(SHARED).unwrap();
    chmod(Path::new(SHARED), 0o777);
    // A link root planted, to a directory of the user's that passes every check if followed.
    let decoy = installed.home.path().join("decoy");
    std::fs::create_dir(&decoy).unwrap();
    chmod(&decoy, 0o700);
    chown(&decoy, Some(USER), Some(USER)).unwrap();

    for (what, held) in [
        ("a directory of another user", "belongs to user 0"),
        ("a planted link", "is a symbolic link (of user 0)"),
    ] {
        if what == "a planted link" {
            clear_shared();
            std::os::unix::fs::symlink(&decoy, SHARED).unwrap();
        }
        let (hub, logged, socket) = installed.start_hub();
        assert_eq!(socket, fallback, "{what}");
        assert!(
            logged
                .iter()
                .any(|line| line.contains(SHARED) && line.contains(held)),
            "{what}: the hub says why: {logged:#?}"
        );
        let (said, answer) = installed.initialize_through_shim();
        assert!(
            said.contains(SHARED) && said.contains(held) && said.contains("tabwire-run"),
            "{what}: the shim says why: {said}"
        );
        let answer: serde_json::Value = serde_json::from_str(&answer)
            .unwrap_or_else(|_| panic!("{what}: no answer through the shim: {said}"));
        assert!(answer["result"]["serverInfo"].is_object(), "{answer}");
        // Nothing went where the link points, nor into root's directory.
        assert!(!decoy.join("hub.sock").exists(), "{what}");
        assert!(!Path::new(SHARED).join("hub.sock").exists(), "{what}");
        drop(hub);
    }

    // The other user's directory goes away while the user's hub sits in the fallback: a shim
    // started now finds `/tmp/tabwire-65534` free and nothing there, and still reaches that
    // hub; a second hub does not start in `/tmp` beside it.
    clear_shared();
    std::fs::create_dir(SHARED).unwrap();
    let (hub, _, socket) = installed.start_hub();
    assert_eq!(socket, fallback);
    clear_shared();
    let (said, answer) = installed.initialize_through_shim();
    let answer: serde_json::Value = serde_json::from_str(&answer)
        .unwrap_or_else(|_| panic!("freed: no answer through the shim: {said}"));
    assert!(answer["result"]["serverInfo"].is_object(), "{answer}");
    let refused = installed.second_hub_refused();
    assert!(
        refused.contains("already listening") && refused.contains(&fallback.display().to_string()),
        "the second hub says where the first is: {refused}"
    );
    assert!(!Path::new(SHARED).join("hub.sock").exists());
    drop(hub);
}
