//! `tabwire-hub audit`: prints the audit log's records (JSON lines, oldest first), filtered by
//! account and time, and with `--follow` keeps printing new ones, across rotations.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, Read, Seek, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use clap::Args;
use serde_json::Value;

use tabwire_hub::audit::{self, KEEP};
use tabwire_hub::auth;
use tabwire_hub::config::default_state_dir_here;

/// `tabwire-hub audit [--account A] [--since T] [--follow]`.
#[derive(Args)]
pub struct AuditArgs {
    /// The audit directory, as given to the hub (hosted mode's default: the auth directory's
    /// `audit`).
    #[arg(long, env = "TABWIRE_AUDIT_DIR")]
    audit_dir: Option<PathBuf>,
    /// Local mode: the hub's state directory, whose `audit` directory holds the log (used
    /// when --audit-dir is not given).
    #[arg(long, env = "TABWIRE_STATE_DIR")]
    state_dir: Option<PathBuf>,
    /// Only this account's records.
    #[arg(long)]
    account: Option<String>,
    /// Only records from this time on: RFC 3339 in UTC (2026-12-02T04:00:00Z, or a prefix
    /// such as 2026-12-02) or a duration ago (90s, 15m, 12h, 30d).
    #[arg(long)]
    since: Option<String>,
    /// Keep printing records as they are written.
    #[arg(long)]
    follow: bool,
}

/// Runs `audit`.
pub fn run(args: AuditArgs) -> anyhow::Result<()> {
    let dir = match (args.audit_dir, args.state_dir) {
        (Some(dir), _) => dir,
        (None, Some(state)) => state.join("audit"),
        (None, None) => default_state_dir_here()
            .map(|state| state.join("audit"))
            .ok_or_else(|| {
                anyhow::anyhow!("cannot tell where the audit log is: give --audit-dir")
            })?,
    };
    let filter = Filter {
        account: args.account,
        since: args
            .since
            .map(|since| parse_since(&since, SystemTime::now()))
            .transpose()?,
    };
    if !dir.is_dir() {
        anyhow::bail!(
            "{} holds no audit log (a hub writes it there once an agent calls a tool)",
            dir.display()
        );
    }
    let mut tails = BTreeMap::new();
    let mut lines = Vec::new();
    for path in files(&dir, filter.account.as_deref())? {
        for n in (1..=KEEP).rev() {
            match std::fs::read_to_string(audit::rotated(&path, n)) {
                Ok(text) => lines.extend(text.lines().map(str::to_owned)),
                Err(error) if error.kind() == io::ErrorKind::NotFound => {}
                Err(error) => return Err(error.into()),
            }
        }
        let mut tail = Tail::new(path.clone());
        lines.extend(tail.read()?);
        tails.insert(path, tail);
    }
    let mut kept: Vec<(String, String)> = lines
        .into_iter()
        .filter_map(|line| filter.time_of(&line).map(|time| (time, line)))
        .collect();
    // Accounts have files of their own: one time order over them all.
    kept.sort_by(|a, b| a.0.cmp(&b.0));
    let mut out = io::stdout().lock();
    for (_, line) in kept {
        writeln!(out, "{line}")?;
    }
    out.flush()?;
    if !args.follow {
        return Ok(());
    }
    loop {
        std::thread::sleep(Duration::from_millis(200));
        for path in files(&dir, filter.account.as_deref())? {
            tails.entry(path.clone()).or_insert_with(|| Tail::new(path));
        }
        for tail in tails.values_mut() {
            for line in tail.read()? {
                if filter.time_of(&line).is_some() {
                    writeln!(out, "{line}")?;
                }
            }
        }
        out.flush()?;
    }
}

/// The current files of the log: the account's, or every account's.
fn files(dir: &Path, account: Option<&str>) -> io::Result<Vec<PathBuf>> {
    if let Some(account) = account {
        return Ok(vec![audit::file_of(dir, account)]);
    }
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.extension().is_some_and(|ext| ext == "jsonl") {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

/// Which records are printed.
struct Filter {
    account: Option<String>,
    /// The earliest time, as `rfc3339` writes it without its `Z`: records compare as text.
    since: Option<String>,
}

impl Filter {
    /// The time of `line` when the filter keeps it.
    fn time_of(&self, line: &str) -> Option<String> {
        let record: Value = serde_json::from_str(line).ok()?;
        let time = record["time"].as_str()?.trim_end_matches('Z');
        if let Some(account) = &self.account
            && record["account"].as_str() != Some(account)
        {
            return None;
        }
        if let Some(since) = &self.since
            && time < since.as_str()
        {
            return None;
        }
        Some(time.to_owned())
    }
}

/// `--since` as the text records are compared with: a duration ago, or an RFC 3339 UTC time
/// (or its prefix, down to a date).
fn parse_since(text: &str, now: SystemTime) -> anyhow::Result<String> {
    if let Ok(ago) = auth::parse_ttl(text) {
        let time = now.checked_sub(ago).unwrap_or(SystemTime::UNIX_EPOCH);
        return Ok(audit::rfc3339(time).trim_end_matches('Z').to_owned());
    }
    let bare = text.strip_suffix('Z').unwrap_or(text);
    // Digits where a time has digits, its separators where it has them.
    let shape = "dddd-dd-ddTdd:dd:dd";
    let fits = bare.len() >= 10
        && bare
            .chars()
            .enumerate()
            .all(|(i, c)| match shape.chars().nth(i) {
                Some('d') => c.is_ascii_digit(),
                Some(separator) => c == separator,
                None => (i == 19 && c == '.') || (i > 19 && c.is_ascii_digit()),
            });
    // A date, minutes, seconds, or seconds with a fraction.
    let whole = matches!(bare.len(), 10 | 16 | 19) || bare.len() >= 21;
    if !fits || !whole {
        anyhow::bail!(
            "--since takes a UTC time such as 2026-12-02T04:00:00Z (or 2026-12-02), or a \
             duration ago such as 15m; not {text:?}"
        );
    }
    if bare.len() > 10 && !text.ends_with('Z') {
        anyhow::bail!("--since: give the time in UTC, ending in Z ({text}Z)");
    }
    Ok(bare.to_owned())
}

/// The part of one file not printed yet, followed across rotations.
struct Tail {
    path: PathBuf,
    file: Option<File>,
    /// A line whose end has not been written yet.
    partial: Vec<u8>,
}

impl Tail {
    fn new(path: PathBuf) -> Tail {
        Tail {
            path,
            file: None,
            partial: Vec::new(),
        }
    }

    /// The whole lines written since the last read. When the file was rotated, the rest of
    /// the old one comes first, then the new file from its start.
    fn read(&mut self) -> io::Result<Vec<String>> {
        let mut lines = Vec::new();
        loop {
            let current = match std::fs::metadata(&self.path) {
                Ok(meta) => Some(meta.ino()),
                Err(error) if error.kind() == io::ErrorKind::NotFound => None,
                Err(error) => return Err(error),
            };
            if let Some(file) = &mut self.file {
                let mut bytes = std::mem::take(&mut self.partial);
                file.read_to_end(&mut bytes)?;
                let end = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
                self.partial = bytes.split_off(end);
                lines.extend(String::from_utf8_lossy(&bytes).lines().map(str::to_owned));
                if current == Some(file.metadata()?.ino()) {
                    return Ok(lines);
                }
                // Rotated (or removed): the old file is read to its end; on to the new one.
                self.file = None;
                self.partial.clear();
            }
            if current.is_none() {
                return Ok(lines);
            }
            match File::open(&self.path) {
                Ok(mut file) => {
                    file.rewind()?;
                    self.file = Some(file);
                }
                Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(lines),
                Err(error) => return Err(error),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(account: &str, time: &str) -> String {
        format!("{{\"time\":\"{time}\",\"account\":\"{account}\",\"tool\":\"click_element\"}}")
    }

    #[test]
    fn the_filter_keeps_an_account_and_a_time_on() {
        let at = |time: &str| parse_since(time, SystemTime::now()).unwrap();
        let filter = Filter {
            account: Some("alice".into()),
            since: Some(at("2026-12-02T04:00:00Z")),
        };
        assert!(
            filter
                .time_of(&line("alice", "2026-12-02T04:00:00.000Z"))
                .is_some()
        );
        assert!(
            filter
                .time_of(&line("alice", "2026-12-02T05:00:00.000Z"))
                .is_some()
        );
        assert!(
            filter
                .time_of(&line("alice", "2026-12-02T03:59:59.999Z"))
                .is_none()
        );
        assert!(
            filter
                .time_of(&line("bob", "2026-12-02T05:00:00.000Z"))
                .is_none()
        );
        assert!(filter.time_of("not json").is_none());
        let by_day = Filter {
            account: None,
            since: Some(at("2026-12-02")),
        };
        assert!(
            by_day
                .time_of(&line("bob", "2026-12-02T00:00:00.000Z"))
                .is_some()
        );
        assert!(
            by_day
                .time_of(&line("bob", "2026-12-01T23:59:59.999Z"))
                .is_none()
        );
    }

    #[test]
    fn since_takes_utc_times_and_durations_ago() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_996_800 + 3600);
        assert_eq!(parse_since("1h", now).unwrap(), "2026-11-30T00:00:00.000");
        assert_eq!(
            parse_since("2026-12-02T04:00:00.5Z", now).unwrap(),
            "2026-12-02T04:00:00.5"
        );
        assert_eq!(
            parse_since("2026-12-02T04:00Z", now).unwrap(),
            "2026-12-02T04:00"
        );
        for bad in [
            "yesterday",
            "2026-12-02T04:00:00",
            "2026-12-02T04:00:00+01:00",
            "12/02",
        ] {
            assert!(parse_since(bad, now).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_tail_follows_the_file_across_a_rotation() {
        let dir = std::env::temp_dir().join(format!(
            "tabwire-audit-cli-{}-{}",
            std::process::id(),
            uuid::Uuid::new_v4().simple()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("local.jsonl");
        let append = |path: &Path, text: &str| {
            let mut file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .unwrap();
            file.write_all(text.as_bytes()).unwrap();
        };
        let mut tail = Tail::new(path.clone());
        assert!(tail.read().unwrap().is_empty());
        append(&path, "a\nb");
        assert_eq!(tail.read().unwrap(), ["a"]);
        append(&path, "\nc\n");
        std::fs::rename(&path, audit::rotated(&path, 1)).unwrap();
        append(&path, "d\n");
        assert_eq!(tail.read().unwrap(), ["b", "c", "d"]);
        assert!(tail.read().unwrap().is_empty());
        std::fs::remove_dir_all(dir).unwrap();
    }
}
