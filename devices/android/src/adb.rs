//! The adb transport: every call to adb goes through [`Adb::run`], which takes adb's own
//! arguments (`-s SERIAL shell …`) and returns what the program printed. The real transport
//! ([`AdbProgram`]) runs the `adb` executable; a scripted fake (in-process in unit tests, a
//! fake `adb` executable in end-to-end tests) stands in where there is no phone.

use std::future::Future;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

/// What one adb invocation printed and how it ended.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AdbOutput {
    /// Everything written to standard output (`exec-out` carries binary data: PNG images).
    pub stdout: Vec<u8>,
    /// Standard error, lossily decoded.
    pub stderr: String,
    /// The exit status; `None` when the program was ended by a signal.
    pub status: Option<i32>,
}

impl AdbOutput {
    /// Whether the program exited with status 0.
    pub fn success(&self) -> bool {
        self.status == Some(0)
    }

    /// Standard output, lossily decoded.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }
}

/// Why an adb invocation produced no output at all.
#[derive(Debug, thiserror::Error)]
pub enum AdbError {
    /// The program could not be started (not installed, not executable).
    #[error("could not run {program}: {source}")]
    Spawn {
        /// The program's path as given.
        program: String,
        /// The operating system's reason.
        source: std::io::Error,
    },
    /// It did not finish within its time and was killed. The message names the adb command
    /// and the size of its arguments, never the arguments: a command line may hold typed text
    /// (a password), and this error reaches the hub and the agent.
    #[error("`{command}` ({bytes} bytes of arguments) did not finish within {ms} ms")]
    Timeout {
        /// `adb shell`, `adb exec-out`, `adb devices`: the program and its verb.
        command: String,
        /// How long the arguments after the verb were, in bytes.
        bytes: usize,
        /// The time it had.
        ms: u128,
    },
    /// It printed more than [`MAX_OUTPUT`] bytes (or [`MAX_STDERR`] on standard error) and was
    /// killed.
    #[error("`{command}` printed more than {limit} bytes and was stopped")]
    TooLarge {
        /// `adb shell`, `adb exec-out`: the program and its verb.
        command: String,
        /// The bound it passed.
        limit: usize,
    },
    /// Reading its output failed.
    #[error("reading adb's output failed: {0}")]
    Io(std::io::Error),
}

/// The most bytes read from one invocation's standard output: a screenshot of the largest
/// screen is a few tens of megabytes, a dump a few hundred kilobytes.
pub const MAX_OUTPUT: usize = 64 * 1024 * 1024;
/// The most bytes read from one invocation's standard error.
pub const MAX_STDERR: usize = 1024 * 1024;

/// Runs adb. Implemented by [`AdbProgram`] and by test fakes.
pub trait Adb: Send + Sync + 'static {
    /// Runs `adb ARGS…`, waiting at most `timeout` (then the program is killed).
    fn run(
        &self,
        args: &[&str],
        timeout: Duration,
    ) -> impl Future<Output = Result<AdbOutput, AdbError>> + Send;
}

/// The real `adb` program: `--adb PATH`, else `$ADB`, else `adb` on `PATH`.
#[derive(Debug, Clone)]
pub struct AdbProgram {
    program: PathBuf,
}

impl AdbProgram {
    /// The program at `program` (a path, or a name looked up on `PATH`).
    pub fn new(program: impl Into<PathBuf>) -> Self {
        AdbProgram {
            program: program.into(),
        }
    }

    /// The program the arguments and environment name: `explicit`, else `$ADB`, else `adb`.
    pub fn choose(explicit: Option<PathBuf>) -> Self {
        let program = explicit
            .or_else(|| {
                std::env::var_os("ADB")
                    .filter(|v| !v.is_empty())
                    .map(PathBuf::from)
            })
            .unwrap_or_else(|| PathBuf::from("adb"));
        AdbProgram::new(program)
    }

    /// The program's path as given.
    pub fn program(&self) -> &std::path::Path {
        &self.program
    }
}

impl Adb for AdbProgram {
    async fn run(&self, args: &[&str], timeout: Duration) -> Result<AdbOutput, AdbError> {
        self.run_bounded(args, timeout, MAX_OUTPUT, MAX_STDERR)
            .await
    }
}

impl AdbProgram {
    /// [`Adb::run`] with its output bounds: past either the program is killed and the call is
    /// [`AdbError::TooLarge`].
    async fn run_bounded(
        &self,
        args: &[&str],
        timeout: Duration,
        max_stdout: usize,
        max_stderr: usize,
    ) -> Result<AdbOutput, AdbError> {
        use tokio::io::AsyncReadExt;
        let mut child = tokio::process::Command::new(&self.program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|source| AdbError::Spawn {
                program: self.program.display().to_string(),
                source,
            })?;
        let stdout = child.stdout.take().expect("stdout is piped");
        let stderr = child.stderr.take().expect("stderr is piped");
        let too_large = |limit: usize| {
            let (command, _) = describe_command(args);
            AdbError::TooLarge { command, limit }
        };
        let run = async {
            // One byte past the bound tells an output at the bound from one beyond it; the
            // first stream past its bound ends the call (and, dropped, the program).
            let read = |stream: Box<dyn tokio::io::AsyncRead + Unpin + Send>, limit: usize| async move {
                let mut bytes = Vec::new();
                stream
                    .take(limit as u64 + 1)
                    .read_to_end(&mut bytes)
                    .await
                    .map_err(AdbError::Io)?;
                if bytes.len() > limit {
                    return Err(too_large(limit));
                }
                Ok(bytes)
            };
            let (out, err) = tokio::try_join!(
                read(Box::new(stdout), max_stdout),
                read(Box::new(stderr), max_stderr)
            )?;
            let status = child.wait().await.map_err(AdbError::Io)?;
            Ok(AdbOutput {
                stdout: out,
                stderr: String::from_utf8_lossy(&err).into_owned(),
                status: status.code(),
            })
        };
        match tokio::time::timeout(timeout, run).await {
            Ok(outcome) => outcome,
            // Dropping the future dropped the child, which kill_on_drop ends.
            Err(_) => {
                let (command, bytes) = describe_command(args);
                Err(AdbError::Timeout {
                    command,
                    bytes,
                    ms: timeout.as_millis(),
                })
            }
        }
    }
}

/// `adb VERB` and the byte length of what follows the verb, for messages: `-s SERIAL` is
/// skipped, and nothing after the verb is repeated.
fn describe_command(args: &[&str]) -> (String, usize) {
    let mut rest = args;
    while let [flag, _value, tail @ ..] = rest
        && matches!(*flag, "-s" | "-t" | "-H" | "-P")
    {
        rest = tail;
    }
    match rest {
        [] => ("adb".to_owned(), 0),
        [verb, tail @ ..] => {
            let verb: String = verb
                .chars()
                .take(20)
                .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect();
            let bytes = tail.iter().map(|a| a.len()).sum::<usize>() + tail.len().saturating_sub(1);
            (format!("adb {verb}"), bytes)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn runs_a_program_and_reports_its_output_and_status() {
        let sh = AdbProgram::new("sh");
        let out = sh
            .run(
                &["-c", "printf 'a b'; echo oops >&2; exit 3"],
                Duration::from_secs(5),
            )
            .await
            .unwrap();
        assert_eq!(out.text(), "a b");
        assert_eq!(out.stderr, "oops\n");
        assert_eq!(out.status, Some(3));
        assert!(!out.success());
    }

    #[tokio::test]
    async fn a_program_that_hangs_is_killed_at_its_timeout() {
        let sh = AdbProgram::new("sh");
        let error = sh
            .run(&["-c", "sleep 30"], Duration::from_millis(200))
            .await
            .unwrap_err();
        assert!(matches!(error, AdbError::Timeout { .. }), "{error}");
    }

    #[tokio::test]
    async fn a_timeout_never_repeats_the_command_line() {
        // `sh -s X -c …` stands in for `adb -s SERIAL shell LINE`: the line holds typed text.
        let sh = AdbProgram::new("sh");
        let secret = "input text 'hunter2-password'";
        let error = sh
            .run(
                &["-c", &format!("sleep 30; {secret}")],
                Duration::from_millis(200),
            )
            .await
            .unwrap_err()
            .to_string();
        assert!(!error.contains("hunter2"), "{error}");
        assert!(!error.contains("sleep"), "{error}");
        assert!(error.contains("`adb -c`"), "{error}");
        let (command, bytes) = describe_command(&["-s", "emulator-5554", "shell", secret]);
        assert_eq!(command, "adb shell");
        assert_eq!(bytes, secret.len());
        assert_eq!(
            describe_command(&["devices", "-l"]),
            ("adb devices".into(), 2)
        );
    }

    #[tokio::test]
    async fn output_past_the_bound_stops_the_program_with_a_clear_error() {
        let sh = AdbProgram::new("sh");
        // A device that never stops printing.
        let error = sh
            .run_bounded(
                &["-c", "yes tabwire"],
                Duration::from_secs(20),
                1024 * 1024,
                1024,
            )
            .await
            .unwrap_err();
        assert!(matches!(error, AdbError::TooLarge { .. }), "{error}");
        assert!(error.to_string().contains("1048576 bytes"), "{error}");
        let error = sh
            .run_bounded(&["-c", "yes oops >&2"], Duration::from_secs(20), 1024, 1024)
            .await
            .unwrap_err();
        assert!(matches!(error, AdbError::TooLarge { .. }), "{error}");
        // Exactly at the bound is fine.
        let out = sh
            .run_bounded(&["-c", "printf 0123456789"], Duration::from_secs(5), 10, 10)
            .await
            .unwrap();
        assert_eq!(out.text(), "0123456789");
    }

    #[tokio::test]
    async fn a_missing_program_is_a_spawn_error() {
        let missing = AdbProgram::new("/nonexistent/adb");
        let error = missing
            .run(&["devices"], Duration::from_secs(1))
            .await
            .unwrap_err();
        assert!(matches!(error, AdbError::Spawn { .. }), "{error}");
    }
}
