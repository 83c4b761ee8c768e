//! `device_logs`: reading logcat's `threadtime` lines, filtering and bounding them.
//!
//! `logcat -t` takes either a count (`-t 500`: the last 500 lines) or a time
//! (`-t 'MM-DD HH:MM:SS.mmm'`: every line since then), told apart by its shape, and the time
//! holds a space, so it is quoted for the phone's shell. A time is only ever one this module
//! checked ([`check_time`]), so nothing else reaches that shell.
//!
//! "Since the previous call" is remembered per device and per reader (the package filter and
//! the lowest level) as the time of the newest entry returned and how many entries of that
//! same millisecond were returned, since `-t TIME` repeats the entries of its own millisecond.
//! Reads carry no session, so a device's sessions share these cursors.

use tabwire_protocol::devices::{DeviceLogs, LogEntry, LogLevel};
use tabwire_protocol::{ErrorCode, OpError};

/// How many lines a read without a start time asks for: the newest entries, before filters.
pub const RECENT_LINES: u32 = 2_000;
/// The most lines read from one logcat call (older lines beyond are dropped first).
const MAX_LINES: usize = 50_000;

/// Where the previous read of a device's log ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogCursor {
    /// The newest entry's time, `MM-DD HH:MM:SS.mmm`.
    pub time: String,
    /// How many entries of exactly that time were returned.
    pub at_time: u32,
}

/// Checks a start time: `MM-DD HH:MM:SS.mmm` or `YYYY-MM-DD HH:MM:SS.mmm`.
pub fn check_time(time: &str) -> Result<(), OpError> {
    let shape = |t: &str| {
        let b = t.as_bytes();
        let pattern: &[u8] = if b.len() == 18 {
            b"dd-dd dd:dd:dd.ddd"
        } else {
            b"dddd-dd-dd dd:dd:dd.ddd"
        };
        b.len() == pattern.len()
            && b.iter().zip(pattern).all(|(c, p)| match p {
                b'd' => c.is_ascii_digit(),
                other => c == other,
            })
    };
    if shape(time) {
        Ok(())
    } else {
        Err(OpError::new(
            ErrorCode::InvalidArgument,
            "a log time is `MM-DD HH:MM:SS.mmm` or `YYYY-MM-DD HH:MM:SS.mmm` (device time, as \
             device_logs returns it in lastTime)",
        ))
    }
}

/// logcat's letter for `level` (its `*:L` filter).
pub fn level_letter(level: LogLevel) -> char {
    match level {
        LogLevel::Verbose => 'V',
        LogLevel::Debug => 'D',
        LogLevel::Info => 'I',
        LogLevel::Warn => 'W',
        LogLevel::Error => 'E',
        LogLevel::Fatal => 'F',
    }
}

fn level_of(letter: &str) -> Option<LogLevel> {
    Some(match letter {
        "V" => LogLevel::Verbose,
        "D" => LogLevel::Debug,
        "I" => LogLevel::Info,
        "W" => LogLevel::Warn,
        "E" => LogLevel::Error,
        "F" | "A" => LogLevel::Fatal,
        _ => return None,
    })
}

/// One `threadtime` line: `MM-DD HH:MM:SS.mmm  PID  TID L TAG     : message`. Other lines
/// (`--------- beginning of main`) are `None`.
pub fn parse_line(line: &str) -> Option<LogEntry> {
    let line = line.trim_end_matches('\r');
    let date = line.get(..5)?;
    let clock = line.get(6..18)?;
    let time = format!("{date} {clock}");
    check_time(&time).ok()?;
    let mut rest = line.get(18..)?.split_whitespace();
    let pid: u32 = rest.next()?.parse().ok()?;
    let _tid: u32 = rest.next()?.parse().ok()?;
    let letter = rest.next()?;
    let level = level_of(letter)?;
    // The tag runs to the first `: ` after the level; it may hold spaces.
    let after_level = {
        let level_at = line[18..].find(&format!(" {letter} "))? + 18;
        &line[level_at + 3..]
    };
    let (tag, message) = match after_level.split_once(": ") {
        Some((tag, message)) => (tag.trim(), message),
        None => (after_level.trim_end_matches(':').trim(), ""),
    };
    Some(LogEntry {
        time,
        pid,
        level,
        tag: tag.to_owned(),
        message: message.to_owned(),
    })
}

/// What to keep of a log read.
#[derive(Debug, Clone, Default)]
pub struct LogFilter {
    /// Only these processes (the package's), when set.
    pub pids: Option<Vec<u32>>,
    /// Only this tag.
    pub tag: Option<String>,
    /// Only this level or above.
    pub min_level: Option<LogLevel>,
    /// Entries already returned by the previous read.
    pub after: Option<LogCursor>,
}

/// The entries of `output` that pass `filter`, the newest kept within `max_entries` and
/// `max_chars` of messages (the newest entry always, its message cut to the budget).
pub fn select(output: &str, filter: &LogFilter, max_entries: u32, max_chars: u32) -> DeviceLogs {
    let lines: Vec<&str> = output.lines().collect();
    let lines = &lines[lines.len().saturating_sub(MAX_LINES)..];
    let mut skip_at_time = filter.after.as_ref().map_or(0, |c| c.at_time);
    let mut matching: Vec<LogEntry> = Vec::new();
    for entry in lines.iter().filter_map(|l| parse_line(l)) {
        if let Some(cursor) = &filter.after {
            // Entries before the cursor (a clock that went back) and the ones already
            // returned at its time are skipped.
            if entry.time.as_str() < cursor.time.as_str() {
                continue;
            }
            if entry.time == cursor.time && skip_at_time > 0 {
                skip_at_time -= 1;
                continue;
            }
        }
        if filter
            .pids
            .as_ref()
            .is_some_and(|pids| !pids.contains(&entry.pid))
        {
            continue;
        }
        if filter.tag.as_ref().is_some_and(|tag| *tag != entry.tag) {
            continue;
        }
        if filter.min_level.is_some_and(|min| entry.level < min) {
            continue;
        }
        matching.push(entry);
    }
    let mut kept: Vec<LogEntry> = Vec::new();
    let mut chars = 0u64;
    for entry in matching.iter().rev() {
        if kept.len() as u64 >= u64::from(max_entries) {
            break;
        }
        let len = entry.message.chars().count() as u64;
        if chars + len > u64::from(max_chars) {
            if kept.is_empty() {
                let mut cut = entry.clone();
                cut.message = entry.message.chars().take(max_chars as usize).collect();
                kept.push(cut);
            }
            break;
        }
        chars += len;
        kept.push(entry.clone());
    }
    kept.reverse();
    DeviceLogs {
        omitted: u32::try_from(matching.len() - kept.len()).unwrap_or(u32::MAX),
        last_time: kept.last().map(|e| e.time.clone()),
        entries: kept,
    }
}

/// The cursor after a read that returned `logs` from `output` (the newest entry's time, and
/// how many lines of the whole output share it, so a read from that time skips them all).
pub fn cursor_after(output: &str, previous: Option<&LogCursor>) -> Option<LogCursor> {
    let entries: Vec<LogEntry> = output.lines().filter_map(parse_line).collect();
    let Some(newest) = entries.iter().map(|e| e.time.as_str()).max() else {
        return previous.cloned();
    };
    let at_time = entries.iter().filter(|e| e.time == newest).count() as u32;
    Some(LogCursor {
        time: newest.to_owned(),
        at_time,
    })
}

/// `pidof`'s output: the process IDs, space-separated.
pub fn parse_pids(text: &str) -> Vec<u32> {
    text.split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG: &str = "--------- beginning of main\n\
01-02 03:04:05.100  1234  1250 I ActivityManager: Start proc 4321:com.example.app\n\
01-02 03:04:05.200  4321  4321 D MyApp   : onCreate\n\
01-02 03:04:05.200  4321  4330 W My Tag With Spaces: careful: colons inside\n\
01-02 03:04:06.000  4321  4321 E AndroidRuntime: FATAL EXCEPTION: main\n\
01-02 03:04:06.500   999   999 F libc    : Fatal signal 6\n\
garbage line\n";

    #[test]
    fn threadtime_lines_parse_with_their_tags_and_levels() {
        let entries: Vec<LogEntry> = LOG.lines().filter_map(parse_line).collect();
        assert_eq!(entries.len(), 5);
        assert_eq!(entries[0].pid, 1234);
        assert_eq!(entries[0].tag, "ActivityManager");
        assert_eq!(entries[2].tag, "My Tag With Spaces");
        assert_eq!(entries[2].message, "careful: colons inside");
        assert_eq!(entries[2].level, LogLevel::Warn);
        assert_eq!(entries[3].time, "01-02 03:04:06.000");
        assert_eq!(entries[4].level, LogLevel::Fatal);
    }

    #[test]
    fn filters_and_budgets_keep_the_newest() {
        let all = select(LOG, &LogFilter::default(), 100, 10_000);
        assert_eq!(all.entries.len(), 5);
        assert_eq!(all.omitted, 0);
        assert_eq!(all.last_time.as_deref(), Some("01-02 03:04:06.500"));

        let app = LogFilter {
            pids: Some(vec![4321]),
            min_level: Some(LogLevel::Warn),
            ..LogFilter::default()
        };
        let logs = select(LOG, &app, 100, 10_000);
        let tags: Vec<&str> = logs.entries.iter().map(|e| e.tag.as_str()).collect();
        assert_eq!(tags, ["My Tag With Spaces", "AndroidRuntime"]);

        let two = select(LOG, &LogFilter::default(), 2, 10_000);
        assert_eq!(two.entries.len(), 2);
        assert_eq!(two.omitted, 3);
        assert_eq!(two.entries[1].tag, "libc", "the newest are kept");

        let tight = select(LOG, &LogFilter::default(), 100, 5);
        assert_eq!(
            tight.entries.len(),
            1,
            "the newest entry, cut to the budget"
        );
        assert_eq!(tight.entries[0].message.chars().count(), 5);
        assert_eq!(tight.omitted, 4);

        let tag = LogFilter {
            tag: Some("MyApp".into()),
            ..LogFilter::default()
        };
        assert_eq!(select(LOG, &tag, 100, 10_000).entries.len(), 1);
    }

    #[test]
    fn a_read_from_the_cursor_skips_what_was_returned() {
        let first = "01-02 03:04:05.100  1 1 I A: one\n01-02 03:04:05.200  1 1 I A: two\n";
        let cursor = cursor_after(first, None).unwrap();
        assert_eq!(cursor.time, "01-02 03:04:05.200");
        // logcat -t TIME repeats the entries of that millisecond.
        let second = "01-02 03:04:05.200  1 1 I A: two\n01-02 03:04:05.200  1 1 I A: three\n01-02 03:04:07.000  1 1 I A: four\n";
        let logs = select(
            second,
            &LogFilter {
                after: Some(cursor),
                ..LogFilter::default()
            },
            100,
            10_000,
        );
        let messages: Vec<&str> = logs.entries.iter().map(|e| e.message.as_str()).collect();
        assert_eq!(messages, ["three", "four"]);
    }

    #[test]
    fn times_are_checked_before_they_reach_the_shell_and_quoted() {
        check_time("01-02 03:04:05.678").unwrap();
        check_time("2026-01-02 03:04:05.678").unwrap();
        for bad in [
            "",
            "1-2 3:4:5",
            "01-02 03:04:05.678'; rm -rf /",
            "01-02 03:04:05",
            "aa-bb cc:dd:ee.fff",
        ] {
            assert_eq!(
                check_time(bad).unwrap_err().code,
                ErrorCode::InvalidArgument,
                "{bad}"
            );
        }
        assert_eq!(
            crate::shell::log_read(None, Some("01-02 03:04:05.678"), Some(LogLevel::Warn)),
            "echo tabwire-logcat; logcat -d -v threadtime -t '01-02 03:04:05.678' '*:W'"
        );
        assert_eq!(
            crate::shell::log_read(Some("com.a"), None, None),
            "pidof com.a; echo tabwire-logcat; logcat -d -v threadtime -t 2000"
        );
        assert_eq!(parse_pids("4321 4400\n"), [4321, 4400]);
    }
}
