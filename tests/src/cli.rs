//! Running the real `tabwire` CLI as a script would (piped, `--output json`: one JSON line), as a
//! shell agent would (piped, the default text) or on a pseudo-terminal (`script` from
//! util-linux gives it one), with an environment of its own — no `TABWIRE_*` of the test's, and
//! a private runtime directory per [`Shell`] so that `tabwire select`'s state files of one test
//! never meet another's.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use serde_json::Value;

use crate::artifacts::artifacts;
use crate::hub::Hub;
use crate::scratch::Scratch;

/// A place to run `tabwire` from: its runtime directory (for select's state files) and the
/// environment every run gets.
pub struct Shell {
    env: Vec<(String, String)>,
    runtime: Scratch,
}

/// One finished run.
#[derive(Debug, Clone)]
pub struct Run {
    /// The exit code.
    pub code: i32,
    /// Everything printed on stdout (on a terminal, with `\r\n` made `\n`).
    pub stdout: String,
    /// Everything printed on stderr (on a terminal, mixed into stdout instead).
    pub stderr: String,
}

impl Run {
    /// The one JSON line a piped run prints; panics unless stdout is exactly that.
    pub fn json(&self) -> Value {
        let lines: Vec<&str> = self.stdout.lines().collect();
        assert_eq!(
            lines.len(),
            1,
            "a piped run prints exactly one line; got stdout {:?}, stderr {:?}",
            self.stdout,
            self.stderr
        );
        serde_json::from_str(lines[0]).unwrap_or_else(|e| panic!("not JSON ({e}): {}", lines[0]))
    }

    /// Panics unless the exit code is `code`.
    pub fn expect_code(&self, code: i32) -> &Run {
        assert_eq!(
            self.code, code,
            "exit code; stdout: {}\nstderr: {}",
            self.stdout, self.stderr
        );
        self
    }

    /// The envelope's `data` of a successful piped run (exit 0).
    pub fn data(&self) -> Value {
        self.expect_code(0);
        let json = self.json();
        assert_eq!(json["ok"], true, "{json}");
        json["data"].clone()
    }

    /// The envelope's `error.code` of a failed piped run with exit code `code`.
    pub fn error_code(&self, code: i32) -> String {
        self.expect_code(code);
        let json = self.json();
        assert_eq!(json["ok"], false, "{json}");
        json["error"]["code"]
            .as_str()
            .unwrap_or_else(|| panic!("an error envelope has a code: {json}"))
            .to_owned()
    }
}

impl Shell {
    /// A shell whose `tabwire` talks to `hub` and never starts one.
    pub fn on(hub: &Hub) -> Shell {
        Shell::with_socket(&hub.socket).env("TABWIRE_NO_START", "1")
    }

    /// A shell whose `tabwire` uses the socket `socket` (its default otherwise).
    pub fn with_socket(socket: &Path) -> Shell {
        Shell::new().env("TABWIRE_SOCKET", &socket.display().to_string())
    }

    /// A shell with nothing set.
    pub fn new() -> Shell {
        let runtime = Scratch::new("cli-runtime");
        Shell {
            env: vec![(
                "XDG_RUNTIME_DIR".to_owned(),
                runtime.path().display().to_string(),
            )],
            runtime,
        }
    }

    /// Sets a variable for every run.
    pub fn env(mut self, name: &str, value: &str) -> Shell {
        self.env.retain(|(k, _)| k != name);
        self.env.push((name.to_owned(), value.to_owned()));
        self
    }

    /// The runtime directory (select's state files are in `tabwire-cli/` there).
    pub fn runtime_dir(&self) -> &Path {
        self.runtime.path()
    }

    /// Runs `tabwire ARGS` as a script does: stdout and stderr piped, and the JSON output
    /// asked for (`TABWIRE_OUTPUT=json`, unless this shell or the run sets `TABWIRE_OUTPUT`).
    pub async fn run(&self, args: &[&str]) -> Run {
        self.run_with(args, &[]).await
    }

    /// [`Shell::run`] with more variables for this run.
    pub async fn run_with(&self, args: &[&str], extra: &[(&str, &str)]) -> Run {
        self.run_program(&artifacts().cli, args, extra).await
    }

    /// Runs `tabwire ARGS` as a shell agent does: piped, with the default output (text).
    pub async fn run_as_agent(&self, args: &[&str]) -> Run {
        let mut command = tokio::process::Command::new(&artifacts().cli);
        command.args(args).stdin(Stdio::null());
        self.prepare(&mut command, &[], false);
        run(command).await
    }

    /// Runs `program ARGS` (the CLI, or `setsid`/`sh` around it) in this shell's environment,
    /// as a script (see [`Shell::run`]).
    pub async fn run_program(&self, program: &Path, args: &[&str], extra: &[(&str, &str)]) -> Run {
        let mut command = tokio::process::Command::new(program);
        command.args(args).stdin(Stdio::null());
        self.prepare(&mut command, extra, true);
        run(command).await
    }

    /// Runs `tabwire ARGS` on a pseudo-terminal (`script -qec`), as a person or an agent with
    /// a terminal sees it. stderr arrives mixed into stdout there.
    pub async fn run_on_terminal(&self, args: &[&str]) -> Run {
        let mut line = shell_word(&artifacts().cli.display().to_string());
        for arg in args {
            line.push(' ');
            line.push_str(&shell_word(arg));
        }
        let mut command = tokio::process::Command::new("script");
        command
            .args(["-qec", &line, "/dev/null"])
            .stdin(Stdio::null());
        self.prepare(&mut command, &[], false);
        let output = command.output().await.expect("run script (util-linux)");
        Run {
            code: output.status.code().expect("exited, not killed"),
            stdout: String::from_utf8(output.stdout)
                .expect("utf-8 stdout")
                .replace("\r\n", "\n"),
            stderr: String::from_utf8(output.stderr).expect("utf-8 stderr"),
        }
    }

    fn prepare(&self, command: &mut tokio::process::Command, extra: &[(&str, &str)], json: bool) {
        for (name, _) in std::env::vars() {
            if name.starts_with("TABWIRE_") {
                command.env_remove(name);
            }
        }
        if json {
            command.env("TABWIRE_OUTPUT", "json");
        }
        for (name, value) in &self.env {
            command.env(name, value);
        }
        for (name, value) in extra {
            command.env(name, value);
        }
    }
}

/// Runs a prepared command to its end.
async fn run(mut command: tokio::process::Command) -> Run {
    let output = command
        .output()
        .await
        .unwrap_or_else(|e| panic!("run {:?}: {e}", command.as_std().get_program()));
    Run {
        code: output.status.code().expect("exited, not killed"),
        stdout: String::from_utf8(output.stdout).expect("utf-8 stdout"),
        stderr: String::from_utf8(output.stderr).expect("utf-8 stderr"),
    }
}

impl Default for Shell {
    fn default() -> Self {
        Shell::new()
    }
}

/// `word` quoted for `sh`.
pub fn shell_word(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

/// The `tabwire` binary.
pub fn cli_path() -> PathBuf {
    artifacts().cli.clone()
}
