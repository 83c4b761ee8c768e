//! `tabwire-hub token …`: issue, revoke and list hosted mode's access tokens.
//!
//! Only `issue` ever prints a token, once, on stdout (so it can be piped or captured); every
//! message goes to stderr. `list` shows what was issued and its status, never a secret.

use std::path::PathBuf;

use clap::Subcommand;

use tabwire_hub::auth::{self, Role};

/// The `token` subcommands.
#[derive(Subcommand)]
pub enum TokenCommand {
    /// Issue a token and print it on stdout (creates the auth directory, mode 0700, and the
    /// HS256 key, mode 0600, on first use; refuses a directory or key open to other users, as
    /// the hub does).
    Issue {
        /// The auth directory the hub runs with.
        #[arg(long, env = "TABWIRE_AUTH_DIR")]
        auth_dir: PathBuf,
        /// The account: 1-64 characters from A-Z a-z 0-9 . _ @ -
        #[arg(long)]
        account: String,
        /// agent (an MCP client on /mcp), browser (an extension on /browser) or device (a
        /// device backend on /device).
        #[arg(long)]
        role: Role,
        /// Lifetime: a number followed by s, m, h or d.
        #[arg(long, default_value = "30d")]
        ttl: String,
        /// A note kept in the ledger, e.g. whose laptop.
        #[arg(long, default_value = "")]
        note: String,
        /// Set when the hub verifies tokens from the operator's own issuer: then the hub's key
        /// signs nothing the hub would accept, so issuing refuses.
        #[arg(long, env = "TABWIRE_JWKS", hide = true)]
        jwks: Option<PathBuf>,
    },
    /// Revoke tokens by jti, or every token issued to an account. A running hub notices
    /// within a second.
    Revoke {
        /// The auth directory the hub runs with.
        #[arg(long, env = "TABWIRE_AUTH_DIR")]
        auth_dir: PathBuf,
        /// Revoke every token issued to this account.
        #[arg(long, conflicts_with = "jti")]
        account: Option<String>,
        /// The token IDs to revoke (from `token list`).
        #[arg(required_unless_present = "account")]
        jti: Vec<String>,
    },
    /// List issued tokens: jti, account, role, issued, expires, status, note.
    List {
        /// The auth directory the hub runs with.
        #[arg(long, env = "TABWIRE_AUTH_DIR")]
        auth_dir: PathBuf,
        /// Only this account's tokens.
        #[arg(long)]
        account: Option<String>,
    },
}

/// Runs one `token` subcommand.
pub fn run(command: TokenCommand) -> anyhow::Result<()> {
    match command {
        TokenCommand::Issue {
            auth_dir,
            account,
            role,
            ttl,
            note,
            jwks,
        } => {
            if let Some(jwks) = jwks {
                anyhow::bail!(
                    "this hub verifies tokens with the keys in {} (--jwks): issue tokens with \
                     your own issuer; `token revoke` still works here",
                    jwks.display()
                );
            }
            let ttl = auth::parse_ttl(&ttl)?;
            let (token, record, created) = auth::issue(&auth_dir, &account, role, ttl, &note)?;
            if created {
                eprintln!(
                    "created the HS256 key {}",
                    auth_dir.join(auth::SECRET_FILE).display()
                );
            }
            eprintln!(
                "issued {role} token for {account}: jti {} expires {}",
                record.jti,
                format_time(record.expires_at)
            );
            println!("{token}");
            Ok(())
        }
        TokenCommand::Revoke {
            auth_dir,
            account,
            jti,
        } => {
            let jtis = match &account {
                Some(account) => {
                    let jtis: Vec<String> = auth::issued(&auth_dir)?
                        .into_iter()
                        .filter(|issued| &issued.account == account)
                        .map(|issued| issued.jti)
                        .collect();
                    if jtis.is_empty() {
                        anyhow::bail!("no token was issued to {account}");
                    }
                    jtis
                }
                None => jti,
            };
            if account.is_none() {
                let known: std::collections::HashSet<String> = auth::issued(&auth_dir)?
                    .into_iter()
                    .map(|issued| issued.jti)
                    .collect();
                for jti in jtis.iter().filter(|jti| !known.contains(*jti)) {
                    eprintln!(
                        "note: {jti} was not issued by `token issue` here (a typo, or a token \
                         from your own issuer); revoking it anyway"
                    );
                }
            }
            let added = auth::revoke(&auth_dir, &jtis)?;
            eprintln!(
                "revoked {added} token(s){}",
                if added < jtis.len() {
                    format!(" ({} already revoked)", jtis.len() - added)
                } else {
                    String::new()
                }
            );
            Ok(())
        }
        TokenCommand::List { auth_dir, account } => {
            if !auth_dir.is_dir() {
                anyhow::bail!("{} is not an auth directory", auth_dir.display());
            }
            let revoked = auth::revoked_set(&auth_dir)?;
            let now = auth::now_secs();
            print_row([
                "jti", "account", "role", "issued", "expires", "status", "note",
            ]);
            for issued in auth::issued(&auth_dir)? {
                if account.as_ref().is_some_and(|a| a != &issued.account) {
                    continue;
                }
                let status = if revoked.contains(&issued.jti) {
                    "revoked"
                } else if issued.expires_at <= now {
                    "expired"
                } else {
                    "active"
                };
                print_row([
                    &issued.jti,
                    &issued.account,
                    &issued.role.to_string(),
                    &format_time(issued.issued_at),
                    &format_time(issued.expires_at),
                    status,
                    &issued.note,
                ]);
            }
            Ok(())
        }
    }
}

/// One line of `token list`: jti, account, role, issued, expires, status, note.
fn print_row([jti, account, role, issued, expires, status, note]: [&str; 7]) {
    println!(
        "{jti:<32}  {account:<20}  {role:<7}  {issued:<20}  {expires:<20}  {status:<7}  {note}"
    );
}

/// `YYYY-MM-DD HH:MM UTC` for seconds since the epoch (the audit log's RFC 3339, shortened).
pub(crate) fn format_time(secs: u64) -> String {
    tabwire_hub::audit::minute_utc(secs)
}

#[cfg(test)]
mod tests {
    #[test]
    fn times_are_civil_dates() {
        assert_eq!(super::format_time(0), "1970-01-01 00:00 UTC");
        assert_eq!(super::format_time(1_795_996_800), "2026-11-30 00:00 UTC");
        assert_eq!(
            super::format_time(951_782_400 + 3661),
            "2000-02-29 01:01 UTC"
        );
    }
}
