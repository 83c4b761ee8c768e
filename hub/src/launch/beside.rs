//! The extension folder a hub uses without `--extension` (docs/install.md, "How the hub finds
//! its extension"), the first of:
//! 1. beside this executable, as a release lays it out: `extension/` next to it (the unpacked
//!    archive), or `../share/tabwire/extension` (`install.sh`'s `~/.local/bin` and
//!    `~/.local/share`);
//! 2. in a build from source, the `extension/` folder of the repository it was built in, as the
//!    build saw it (build.rs; a release build has none: the folder named there is on the
//!    machine that built it).
//!
//! Never searched for further: a search above the executable (a target directory in `/tmp`,
//! say) could find a folder another user planted. A release layout's folder counts only when
//! it, and every folder from the executable's own down to it, can be changed by this user (or
//! root) alone; one that another user could change is refused with the reason, not skipped,
//! so that a hub never quietly loads another folder instead.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use tabwire_protocol::local::current_uid;

/// A folder beside the executable refused as the default: the folder, and who else could
/// change it, and where.
pub type Refused = (PathBuf, String);

/// This process's default extension folder: a folder to use, if it holds the extension (beside
/// the executable, or the checkout's), or a release layout's folder that another user could
/// change.
pub fn default_extension() -> Result<PathBuf, Refused> {
    let exe = std::env::current_exe().and_then(std::fs::canonicalize).ok();
    let checkout = Some(env!("TABWIRE_CHECKOUT_EXTENSION"))
        .filter(|path| !path.is_empty())
        .map(PathBuf::from);
    exe.as_deref().and_then(beside).unwrap_or_else(|| {
        // Named by the error when it is not there either.
        Ok(checkout.unwrap_or_else(|| {
            let bin = exe.as_deref().and_then(Path::parent);
            bin.unwrap_or(Path::new(".")).join("extension")
        }))
    })
}

/// The first release layout's folder for the executable `exe` that holds a `manifest.json`:
/// `Ok` when only this user can change it, else the folder and the reason.
pub fn beside(exe: &Path) -> Option<Result<PathBuf, Refused>> {
    let bin = exe.parent()?;
    let mut candidates = vec![(bin, bin.join("extension"))];
    if let Some(prefix) = bin.parent() {
        candidates.push((prefix, prefix.join("share/tabwire/extension")));
    }
    let (base, dir) = candidates
        .into_iter()
        .find(|(_, dir)| dir.join("manifest.json").is_file())?;
    let mut chain = vec![base.to_path_buf()];
    let mut at = base.to_path_buf();
    for part in dir.strip_prefix(base).ok()?.components() {
        at.push(part);
        chain.push(at.clone());
    }
    for folder in &chain {
        if let Some(why) = changeable_by_others(folder) {
            return Some(Err((
                dir,
                format!("in {}, which is {why}", folder.display()),
            )));
        }
    }
    Some(Ok(dir))
}

/// Why another user could change `dir`, if one could: it belongs to someone else than this
/// user or root, or anyone may write it. (Group-writable folders are common with per-user
/// groups, so they pass here: the rule for any extension folder, `--extension` too; a folder
/// beside the executable is held to `changeable_by_others` as well.)
pub fn not_ours(dir: &Path) -> Option<String> {
    let meta = std::fs::metadata(dir).ok()?;
    let me = current_uid();
    if meta.uid() != me && meta.uid() != 0 {
        return Some(format!("owned by user {}", meta.uid()));
    }
    (meta.mode() & 0o002 != 0).then(|| "writable by every user".to_owned())
}

/// Why another user could change `dir`: its owner, or its mode. A group-writable folder counts
/// when its group may hold other users: anything but this user's private group.
fn changeable_by_others(dir: &Path) -> Option<String> {
    let Ok(meta) = std::fs::metadata(dir) else {
        return Some("unreadable".to_owned());
    };
    // Another owner, or every user: the rule for any extension folder (`--extension` too).
    if let Some(why) = not_ours(dir) {
        return Some(why);
    }
    if meta.mode() & 0o020 != 0 && !private_group(meta.gid(), current_uid(), &Accounts::read()) {
        return Some(format!(
            "writable by its group (gid {}): run chmod g-w on it",
            meta.gid()
        ));
    }
    None
}

/// `/etc/passwd` and `/etc/group`, as text.
struct Accounts {
    passwd: String,
    group: String,
}

impl Accounts {
    fn read() -> Accounts {
        let read = |path| std::fs::read_to_string(path).unwrap_or_default();
        Accounts {
            passwd: read("/etc/passwd"),
            group: read("/etc/group"),
        }
    }
}

/// Whether `gid` is the user `uid`'s private group, as Debian and Ubuntu make one for every user
/// (their umask then leaves folders group-writable): named after the user, with no members
/// listed and the primary group of no other user. What the files do not show (directory
/// services, macOS) counts as shared.
fn private_group(gid: u32, uid: u32, accounts: &Accounts) -> bool {
    let fields = |line: &str| line.split(':').map(str::to_owned).collect::<Vec<String>>();
    let users: Vec<Vec<String>> = accounts.passwd.lines().map(fields).collect();
    let Some(me) = users
        .iter()
        .find(|user| user.get(2).is_some_and(|id| id.parse() == Ok(uid)))
    else {
        return false;
    };
    let others_primary = users.iter().any(|user| {
        user.get(2).is_some_and(|id| id.parse() != Ok(uid))
            && user.get(3).is_some_and(|id| id.parse() == Ok(gid))
    });
    let group = accounts
        .group
        .lines()
        .map(fields)
        .find(|group| group.get(2).is_some_and(|id| id.parse() == Ok(gid)));
    let Some(group) = group else {
        return false;
    };
    let members_are_me = group
        .get(3)
        .is_none_or(|members| members.split(',').all(|m| m.is_empty() || *m == me[0]));
    group[0] == me[0] && members_are_me && !others_primary
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn mode(dir: &Path, mode: u32) {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode)).unwrap()
    }

    #[test]
    fn a_release_finds_its_extension_beside_it_only_where_no_other_user_can_plant_one() {
        let root = std::env::temp_dir().join(format!(
            "tabwire-beside-{}-{}",
            std::process::id(),
            uuid::Uuid::new_v4().simple()
        ));
        // An unpacked archive: the binaries with extension/ beside them.
        let archive = root.join("tabwire-x86_64-unknown-linux-gnu");
        std::fs::create_dir_all(archive.join("extension")).unwrap();
        std::fs::write(archive.join("extension/manifest.json"), "{}").unwrap();
        mode(&root, 0o755);
        mode(&archive, 0o755);
        mode(&archive.join("extension"), 0o755);
        let exe = archive.join("tabwire-hub");
        assert_eq!(beside(&exe), Some(Ok(archive.join("extension"))));
        // Installed: ~/.local/bin and ~/.local/share/tabwire/extension.
        let prefix = root.join("home/.local");
        let installed = prefix.join("share/tabwire/extension");
        std::fs::create_dir_all(prefix.join("bin")).unwrap();
        std::fs::create_dir_all(&installed).unwrap();
        for dir in [
            &prefix,
            &prefix.join("share"),
            &installed.parent().unwrap().to_path_buf(),
            &installed,
        ] {
            mode(dir, 0o755);
        }
        let exe = prefix.join("bin/tabwire-hub");
        assert_eq!(beside(&exe), None, "no manifest.json: not the extension");
        std::fs::write(installed.join("manifest.json"), "{}").unwrap();
        assert_eq!(beside(&exe), Some(Ok(installed.clone())));
        // A folder on the way that every user can write to could hold a planted extension:
        // refused, with where and why.
        for dir in [
            prefix.clone(),
            prefix.join("share/tabwire"),
            installed.clone(),
        ] {
            mode(&dir, 0o777);
            let refused = beside(&exe);
            assert_eq!(
                refused,
                Some(Err((
                    installed.clone(),
                    format!("in {}, which is writable by every user", dir.display())
                ))),
            );
            mode(&dir, 0o755);
        }
        assert_eq!(beside(&exe), Some(Ok(installed)));
        // In a checkout the target directory has none.
        assert_eq!(beside(&root.join("repo/target/debug/tabwire-hub")), None);
        std::fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn a_group_is_private_only_when_it_is_the_users_own() {
        let accounts = |passwd: &str, group: &str| Accounts {
            passwd: passwd.to_owned(),
            group: group.to_owned(),
        };
        let ann = "root:x:0:0::/root:/bin/sh\nann:x:1000:1000::/home/ann:/bin/bash\n";
        // Debian's and Ubuntu's own group per user.
        assert!(private_group(
            1000,
            1000,
            &accounts(ann, "root:x:0:\nann:x:1000:\n")
        ));
        assert!(private_group(
            1000,
            1000,
            &accounts(ann, "ann:x:1000:ann\n")
        ));
        // Another member, another user's primary group, another name, an unknown group.
        assert!(!private_group(
            1000,
            1000,
            &accounts(ann, "ann:x:1000:bob\n")
        ));
        let bob = format!("{ann}bob:x:1001:1000::/home/bob:/bin/bash\n");
        assert!(!private_group(1000, 1000, &accounts(&bob, "ann:x:1000:\n")));
        assert!(!private_group(
            100,
            1000,
            &accounts(ann, "users:x:100:ann\n")
        ));
        assert!(!private_group(1000, 1000, &accounts(ann, "")));
        // macOS: the user is not in /etc/passwd, and staff is everyone's.
        assert!(!private_group(20, 501, &accounts(ann, "staff:*:20:root\n")));
    }
}
