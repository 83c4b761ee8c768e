//! The fake device's `logcat`, over its log file (one threadtime entry a line, stored with the
//! year): `-d`, `-t N` (the last N entries) and `-t 'MM-DD hh:mm:ss.mmm'` or
//! `'YYYY-MM-DD hh:mm:ss.mmm'` (entries from that time on; `-t` implies `-d`), `-T` (the same
//! without `-d`: it keeps following), `--pid`, `-s`, filter specs `TAG:P` and `*:P`, `-m N`,
//! `-v threadtime` and `-v year`, `-b` (one buffer here), `-c`.
//!
//! As on a device, `--pid` is applied before `-t N` takes the last entries and the tag and
//! priority filters after, so `-t 50 MyTag:I *:S` may print fewer than 50.

use std::io::{Read, Seek, Write};
use std::time::Duration;

use super::command::Output;
use super::scenario::ScenarioDir;

/// What the command line asks for.
#[derive(Debug, Default)]
struct Options {
    dump: bool,
    tail: Option<Tail>,
    pid: Option<u32>,
    silent_default: bool,
    specs: Vec<(String, char)>,
    max: Option<usize>,
    year: bool,
    clear: bool,
}

#[derive(Debug)]
enum Tail {
    Count(usize),
    /// `YYYY-MM-DD hh:mm:ss.mmm` (or without the year, filled in from the log).
    Time(String),
}

/// One log entry.
#[derive(Debug)]
struct Entry {
    line: String,
    /// `YYYY-MM-DD hh:mm:ss.mmm`.
    time: String,
    pid: u32,
    level: char,
    tag: String,
}

fn parse_entry(line: &str) -> Option<Entry> {
    let mut words = line.split_whitespace();
    let date = words.next()?;
    let clock = words.next()?;
    let pid = words.next()?.parse().ok()?;
    let _tid = words.next()?;
    let level = words.next()?.chars().next()?;
    let after_level = line.find(&format!(" {level} "))? + 3;
    let tag = line[after_level..].split(": ").next()?.trim().to_owned();
    (date.len() == 10).then(|| Entry {
        line: line.to_owned(),
        time: format!("{date} {clock}"),
        pid,
        level,
        tag,
    })
}

fn priority(level: char) -> u8 {
    match level {
        'V' => 2,
        'D' => 3,
        'I' => 4,
        'W' => 5,
        'E' => 6,
        'F' | 'A' => 7,
        _ => 8, // 'S': silent
    }
}

fn parse(args: &[String]) -> Result<Options, String> {
    let mut options = Options::default();
    let mut words = args.iter().map(String::as_str);
    while let Some(word) = words.next() {
        match word {
            "-d" => options.dump = true,
            "-c" => options.clear = true,
            "-s" => options.silent_default = true,
            "-t" | "-T" => {
                let value = words
                    .next()
                    .ok_or("logcat: option requires an argument -- 't'")?;
                options.dump |= word == "-t";
                options.tail = Some(if value.chars().all(|c| c.is_ascii_digit()) {
                    Tail::Count(value.parse().map_err(|_| "logcat: bad count")?)
                } else {
                    Tail::Time(value.to_owned())
                });
            }
            "-m" => {
                let value = words
                    .next()
                    .ok_or("logcat: option requires an argument -- 'm'")?;
                options.max = Some(value.parse().map_err(|_| "logcat: -m needs a number")?);
            }
            "-v" => match words.next() {
                Some("threadtime") => {}
                Some("year") => options.year = true,
                Some(other) => {
                    return Err(format!(
                        "logcat: the fake prints threadtime only, not -v {other}"
                    ));
                }
                None => return Err("logcat: option requires an argument -- 'v'".into()),
            },
            "-b" => {
                words.next();
            }
            "--pid" => {
                let value = words.next().ok_or("logcat: --pid needs a value")?;
                options.pid = Some(value.parse().map_err(|_| "logcat: bad pid")?);
            }
            pid if pid.starts_with("--pid=") => {
                options.pid = Some(
                    pid["--pid=".len()..]
                        .parse()
                        .map_err(|_| "logcat: bad pid")?,
                );
            }
            flag if flag.starts_with('-') => {
                return Err(format!(
                    "logcat: unrecognized option '{flag}' (the fake's set is in tests/src/fake_adb/logcat.rs)"
                ));
            }
            spec => {
                let (tag, level) = spec.rsplit_once(':').unwrap_or((spec, "V"));
                let level = level.chars().next().filter(|c| "VDIWEFS".contains(*c));
                let level =
                    level.ok_or_else(|| format!("logcat: invalid filter expression '{spec}'"))?;
                options.specs.push((tag.to_owned(), level));
            }
        }
    }
    Ok(options)
}

impl Options {
    fn passes(&self, entry: &Entry) -> bool {
        let default = if self.silent_default { 'S' } else { 'V' };
        let wanted = self
            .specs
            .iter()
            .find(|(tag, _)| *tag == entry.tag)
            .or_else(|| self.specs.iter().find(|(tag, _)| tag == "*"))
            .map(|(_, level)| *level)
            .unwrap_or(default);
        priority(entry.level) >= priority(wanted)
    }

    fn render(&self, entry: &Entry) -> String {
        // Stored with the year; printed without it unless `-v year`.
        let line = if self.year {
            &entry.line[..]
        } else {
            &entry.line[5..]
        };
        format!("{line}\n")
    }
}

fn entries(dir: &ScenarioDir, serial: &str) -> Vec<Entry> {
    std::fs::read_to_string(dir.logcat_path(serial))
        .unwrap_or_default()
        .lines()
        .filter_map(parse_entry)
        .collect()
}

/// The entries a command line selects, before its tag filters.
fn select(options: &Options, all: Vec<Entry>) -> Result<Vec<Entry>, String> {
    let mut chosen: Vec<Entry> = all
        .into_iter()
        .filter(|entry| options.pid.is_none_or(|pid| entry.pid == pid))
        .collect();
    match &options.tail {
        Some(Tail::Count(n)) => {
            let skip = chosen.len().saturating_sub(*n);
            chosen.drain(..skip);
        }
        Some(Tail::Time(time)) => {
            let full = normalise_time(time, chosen.last().map(|e| &e.time[..4]))
                .ok_or_else(|| format!("logcat: -t \"{time}\" is not a valid time"))?;
            chosen.retain(|entry| entry.time.as_str() >= full.as_str());
        }
        None => {}
    }
    Ok(chosen)
}

/// `MM-DD hh:mm:ss.mmm` or `YYYY-MM-DD hh:mm:ss.mmm` as `YYYY-MM-DD hh:mm:ss.mmm`.
fn normalise_time(time: &str, year: Option<&str>) -> Option<String> {
    let (date, clock) = time.trim().split_once(' ')?;
    let date = match date.len() {
        5 => format!("{}-{date}", year.unwrap_or("2026")),
        10 => date.to_owned(),
        _ => return None,
    };
    let (hms, fraction) = clock.split_once('.').unwrap_or((clock, "0"));
    if hms.len() != 8 || !fraction.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let millis: String = format!("{fraction:0<3}").chars().take(3).collect();
    Some(format!("{date} {hms}.{millis}"))
}

fn printed(options: &Options, chosen: &[Entry], header: &mut bool) -> String {
    let mut out = String::new();
    for entry in chosen.iter().filter(|entry| options.passes(entry)) {
        if !*header {
            out.push_str("--------- beginning of main\n");
            *header = true;
        }
        out.push_str(&options.render(entry));
    }
    out
}

/// Whether this command line keeps following the log (no `-d`, no `-t`, no `-c`).
pub fn follows(args: &[String]) -> bool {
    parse(args).is_ok_and(|options| !options.dump && !options.clear)
}

/// `logcat -d …`, `-t …` and `-c`: what is there, then exit.
pub fn dump(dir: &ScenarioDir, serial: &str, args: &[String]) -> Output {
    let options = match parse(args) {
        Ok(options) => options,
        Err(message) => return Output::error(1, message),
    };
    if options.clear {
        let _ = std::fs::write(dir.logcat_path(serial), "");
        return Output::default();
    }
    let mut chosen = match select(&options, entries(dir, serial)) {
        Ok(chosen) => chosen,
        Err(message) => return Output::error(1, message),
    };
    chosen.retain(|entry| options.passes(entry));
    if let Some(max) = options.max {
        chosen.truncate(max);
    }
    let mut header = false;
    Output::text(printed(&options, &chosen, &mut header))
}

/// `logcat` without `-d`: what is there, then every entry appended, until the reader goes away
/// or the scenario is removed.
pub fn follow(dir: &ScenarioDir, serial: &str, args: &[String]) -> i32 {
    let Ok(options) = parse(args) else { return 1 };
    let path = dir.logcat_path(serial);
    let mut header = false;
    let mut stdout = std::io::stdout().lock();
    let mut offset = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    let Ok(first) = select(&options, entries(dir, serial)) else {
        return 1;
    };
    if stdout
        .write_all(printed(&options, &first, &mut header).as_bytes())
        .and_then(|()| stdout.flush())
        .is_err()
    {
        return 0;
    }
    loop {
        std::thread::sleep(Duration::from_millis(100));
        let Ok(mut file) = std::fs::File::open(&path) else {
            return 0;
        };
        let len = file.metadata().map(|m| m.len()).unwrap_or(0);
        if len < offset {
            offset = 0; // cleared
        }
        if len == offset {
            continue;
        }
        let mut fresh = String::new();
        if file.seek(std::io::SeekFrom::Start(offset)).is_err()
            || file.read_to_string(&mut fresh).is_err()
        {
            continue;
        }
        offset = len;
        let new: Vec<Entry> = fresh
            .lines()
            .filter_map(parse_entry)
            .filter(|entry| options.pid.is_none_or(|pid| entry.pid == pid))
            .collect();
        if stdout
            .write_all(printed(&options, &new, &mut header).as_bytes())
            .and_then(|()| stdout.flush())
            .is_err()
        {
            return 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| (*w).to_owned()).collect()
    }

    const LOG: &str = "\
2026-03-14 10:00:00.100  1200  1200 I ActivityManager: Start proc 8123:com.example.shop/u0a162
2026-03-14 10:00:01.250  8123  8123 D ShopApp : onCreate
2026-03-14 10:00:02.000  8123  8140 E ShopApp : login failed: 401
2026-03-14 10:00:03.500  1200  1300 W InputDispatcher: channel is unresponsive
";

    fn run(words: &[&str]) -> Vec<String> {
        let options = parse(&args(words)).unwrap();
        let all: Vec<Entry> = LOG.lines().filter_map(parse_entry).collect();
        let mut chosen = select(&options, all).unwrap();
        chosen.retain(|entry| options.passes(entry));
        chosen
            .iter()
            .map(|e| options.render(e).trim_end().to_owned())
            .collect()
    }

    #[test]
    fn counts_times_pids_and_filters_select_as_logcat_does() {
        assert_eq!(run(&["-d"]).len(), 4);
        assert!(run(&["-d"])[0].starts_with("03-14 10:00:00.100"));
        assert!(run(&["-d", "-v", "year"])[0].starts_with("2026-03-14"));
        assert_eq!(run(&["-t", "2"]).len(), 2);
        // The tail is taken before the tag filter: one of the last two entries is ShopApp's.
        assert_eq!(run(&["-t", "2", "ShopApp:V", "*:S"]).len(), 1);
        assert_eq!(run(&["-d", "--pid=8123"]).len(), 2);
        assert_eq!(run(&["-d", "*:E"]).len(), 1);
        assert_eq!(run(&["-t", "03-14 10:00:01.250"]).len(), 3);
        assert_eq!(run(&["-t", "2026-03-14 10:00:02"]).len(), 2);
        assert_eq!(run(&["-d", "-s", "ShopApp"]).len(), 2);
    }
}
