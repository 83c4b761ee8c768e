//! Stopping a server the benchmark started together with everything it started.
//!
//! Killing the server's process group is not enough for playwright-mcp: Playwright launches
//! Chromium detached, in a process group of its own, and a killed `node` cannot clean up after
//! itself. So the tree is read from `/proc` while the server still runs, and every process in
//! it is killed (and, where a process leads its own group, that whole group). Each process is
//! remembered with its start time, so a PID the kernel has meanwhile given to an unrelated
//! process is left alone.

use std::collections::BTreeMap;

/// One process: its PID and its start time (clock ticks after boot, `/proc/<pid>/stat` field 22).
type Process = (i32, u64);

/// A server process started in its own process group; kills the whole tree when dropped.
pub struct ProcessTree {
    /// The server (leader of its process group).
    root: Process,
    /// Descendants seen so far, so they can be found after the server itself has exited and
    /// they were re-parented.
    seen: Vec<Process>,
}

impl ProcessTree {
    /// Watches the tree under `pid`, which must lead its own process group.
    pub fn new(pid: u32) -> ProcessTree {
        let pid = pid as i32;
        let started = stat(pid).map_or(0, |stat| stat.started);
        ProcessTree {
            root: (pid, started),
            seen: Vec::new(),
        }
    }

    /// Records the server's current descendants (call before asking it to exit).
    pub fn remember_descendants(&mut self) {
        for process in descendants(self.root.0) {
            if !self.seen.contains(&process) {
                self.seen.push(process);
            }
        }
    }

    /// Kills the server's group and every process of the tree that is still the same process.
    pub fn kill_all(&mut self) {
        self.remember_descendants();
        let mut targets = vec![self.root];
        targets.append(&mut self.seen);
        for (pid, started) in targets {
            let Some(now) = stat(pid) else { continue };
            if now.started != started {
                continue;
            }
            // SAFETY: signalling processes this benchmark started (checked by start time); no
            // memory is involved.
            unsafe {
                if now.group == pid {
                    libc::kill(-pid, libc::SIGKILL);
                }
                libc::kill(pid, libc::SIGKILL);
            }
        }
    }
}

impl Drop for ProcessTree {
    fn drop(&mut self) {
        self.kill_all();
    }
}

/// What the benchmark needs from `/proc/<pid>/stat`.
struct Stat {
    parent: i32,
    group: i32,
    started: u64,
}

fn stat(pid: i32) -> Option<Stat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces and parentheses: split after the last ')'.
    let (_, rest) = text.rsplit_once(')')?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // `rest` starts at field 3 (state), so field N is fields[N - 3].
    if fields.first() == Some(&"Z") {
        return None;
    }
    Some(Stat {
        parent: fields.get(1)?.parse().ok()?,
        group: fields.get(2)?.parse().ok()?,
        started: fields.get(19)?.parse().ok()?,
    })
}

/// Every live process below `root`, parents before children.
fn descendants(root: i32) -> Vec<Process> {
    let mut children: BTreeMap<i32, Vec<(i32, u64)>> = BTreeMap::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|name| name.parse().ok())
        else {
            continue;
        };
        if let Some(stat) = stat(pid) {
            children
                .entry(stat.parent)
                .or_default()
                .push((pid, stat.started));
        }
    }
    let mut found = Vec::new();
    let mut queue = vec![root];
    while let Some(parent) = queue.pop() {
        for &(pid, started) in children.get(&parent).map(Vec::as_slice).unwrap_or_default() {
            found.push((pid, started));
            queue.push(pid);
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;

    #[test]
    fn kills_a_grandchild_that_left_the_group() {
        // `sh` starts a `sleep` in a new session (as Playwright starts Chromium) and waits.
        let mut child = std::process::Command::new("sh")
            .args(["-c", "setsid sleep 60 & echo $!; wait"])
            .stdout(std::process::Stdio::piped())
            .process_group(0)
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(child.stdout.take().unwrap()),
            &mut line,
        )
        .unwrap();
        let grandchild: i32 = line.trim().parse().unwrap();
        // setsid may fork once more; wait until the sleeper is a descendant.
        let mut tree = ProcessTree::new(child.id());
        for _ in 0..50 {
            if !descendants(child.id() as i32).is_empty() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        tree.kill_all();
        child.wait().unwrap();
        for _ in 0..50 {
            if stat(grandchild).is_none() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        panic!("the detached grandchild {grandchild} survived");
    }
}
