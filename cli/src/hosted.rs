//! A hosted hub: its `/mcp` URL, its agent token, and the HTTPS client that carries both.
//!
//! The token goes with every request, so it never crosses a network in clear: `http://` is
//! refused unless the host is loopback (the protocol crate's `is_loopback_host`, the same rule
//! as the hub's `--public-origin` and `config --url`), and even there only with
//! `--insecure-http`: another user of the machine can listen on a loopback port the proxy left
//! free, and would be handed the token. `localhost` in an `http://` URL is dialled as
//! `127.0.0.1`, the address a local proxy holds, not `[::1]`, which another user could. The
//! token comes from the environment or from a file only the user can read (`--token-file`),
//! never from a command line, and is never printed, not even in errors. TLS is rustls with ring
//! and the platform's roots, plus `--ca-cert` for a private CA.

use std::path::{Path, PathBuf};
use std::sync::Once;

use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use tabwire_protocol::local::{current_uid, is_loopback_host, secret_file_problem};

use crate::error::CliError;

/// Where and how to reach a hosted hub.
pub struct HostedHub {
    /// `https://host[:port][/prefix]/mcp`.
    pub url: String,
    token: String,
    ca_cert: Option<PathBuf>,
}

impl std::fmt::Debug for HostedHub {
    // The token stays out of every printout.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostedHub")
            .field("url", &self.url)
            .field("ca_cert", &self.ca_cert)
            .finish_non_exhaustive()
    }
}

impl HostedHub {
    /// Checks `--url` and the token (and `--ca-cert`); plain `http://` only to loopback and
    /// with `insecure_http`.
    pub fn new(
        url: &str,
        token: Option<&str>,
        ca_cert: Option<&Path>,
        insecure_http: bool,
    ) -> Result<HostedHub, CliError> {
        let url = mcp_url(url, insecure_http)?;
        let token = token.filter(|token| !token.is_empty()).ok_or_else(|| {
            CliError::usage(format!(
                "--url {url} needs an agent token: set TABWIRE_TOKEN, or put it in a file only \
                 you can read and pass --token-file FILE"
            ))
        })?;
        let token = token.trim();
        let token = token.strip_prefix("Bearer ").unwrap_or(token);
        if token.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(CliError::usage(
                "the token holds spaces or control characters; give the token alone",
            ));
        }
        let token = token.to_owned();
        Ok(HostedHub {
            url,
            token,
            ca_cert: ca_cert.map(Path::to_path_buf),
        })
    }

    /// rmcp's streamable-HTTP transport to this hub, with the token as bearer.
    pub fn transport(&self) -> Result<StreamableHttpClientTransport<reqwest::Client>, CliError> {
        install_crypto();
        // No redirects: rmcp's own client follows only same-origin ones, and a custom client
        // drops that policy. No proxy for plain http:// (loopback only): a proxy from
        // HTTP_PROXY would receive the bearer token in clear. https:// keeps the
        // environment's proxy, which only sees the TLS tunnel.
        let mut builder = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none());
        if self.url.starts_with("http://") {
            builder = builder.no_proxy();
        }
        if let Some(path) = &self.ca_cert {
            let pem = std::fs::read(path).map_err(|error| {
                CliError::usage(format!("--ca-cert {}: {error}", path.display()))
            })?;
            let certs = reqwest::Certificate::from_pem_bundle(&pem).map_err(|error| {
                CliError::usage(format!(
                    "--ca-cert {}: not PEM certificates ({error})",
                    path.display()
                ))
            })?;
            if certs.is_empty() {
                return Err(CliError::usage(format!(
                    "--ca-cert {}: no certificate in it",
                    path.display()
                )));
            }
            for cert in certs {
                builder = builder.add_root_certificate(cert);
            }
        }
        let client = builder.build().map_err(|error| {
            CliError::connection(format!("cannot set up HTTPS for {}: {error}", self.url))
        })?;
        let config = StreamableHttpClientTransportConfig::with_uri(self.url.clone())
            .auth_header(&self.token);
        Ok(StreamableHttpClientTransport::with_client(client, config))
    }
}

/// Installs ring as rustls's crypto provider (reqwest is built without one, so that no aws-lc
/// is compiled).
fn install_crypto() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// The token in `path` (`--token-file`): a regular file of the user's that no one else may
/// open, holding one line.
pub fn read_token_file(path: &Path) -> Result<String, CliError> {
    use std::io::Read;
    let shown = path.display();
    let bad = |why: String| CliError::usage(format!("--token-file {shown}: {why}"));
    let file = std::fs::File::open(path).map_err(|error| bad(error.to_string()))?;
    let meta = file.metadata().map_err(|error| bad(error.to_string()))?;
    if let Some(problem) = secret_file_problem(&meta, current_uid()) {
        return Err(bad(problem.to_string()));
    }
    let mut text = String::new();
    file.take(64 * 1024)
        .read_to_string(&mut text)
        .map_err(|error| bad(error.to_string()))?;
    let token = text.trim();
    if token.is_empty() {
        return Err(bad("the file is empty".to_owned()));
    }
    if token.lines().count() > 1 {
        return Err(bad(
            "the file holds more than one line; put the token alone in it".to_owned(),
        ));
    }
    Ok(token.to_owned())
}

/// The hub's `/mcp` URL from its origin (`https://hub.example/team`) or the URL itself;
/// `http://` only to a loopback host and with `insecure_http`, `localhost` made `127.0.0.1`.
pub fn mcp_url(given: &str, insecure_http: bool) -> Result<String, CliError> {
    let shown = redacted(given);
    let bad = |why: &str| CliError::usage(format!("--url {shown:?}: {why}"));
    let trimmed = given.trim().trim_end_matches('/');
    let (secure, rest) = if let Some(rest) = trimmed.strip_prefix("https://") {
        (true, rest)
    } else if let Some(rest) = trimmed.strip_prefix("http://") {
        (false, rest)
    } else {
        return Err(bad("must start with https://"));
    };
    let (host, port, path) = tabwire_protocol::local::split_authority(rest).map_err(bad)?;
    if !secure && !is_loopback_host(host) {
        return Err(bad(
            "the token would cross the network in clear; use https:// (http:// only for a \
             loopback host such as 127.0.0.1 behind a local proxy, with --insecure-http)",
        ));
    }
    if !secure && !insecure_http {
        return Err(bad(
            "the token would go in clear to whatever listens on that loopback port, which may be \
             another user's program if the proxy is not running; use https://, or pass \
             --insecure-http to send it anyway",
        ));
    }
    // `localhost` also names [::1], where another user's program could listen while the
    // proxy holds 127.0.0.1 (the extension dials the same way).
    let host = tabwire_protocol::local::dialled_host(host, secure);
    let scheme = if secure { "https" } else { "http" };
    let port = port.map(|port| format!(":{port}")).unwrap_or_default();
    let base = format!("{scheme}://{host}{port}{path}");
    let base = base.strip_suffix("/mcp").unwrap_or(&base);
    let url = format!("{base}/mcp");
    // The host judged above must be the host reqwest dials.
    let parsed = reqwest::Url::parse(&url).map_err(|error| bad(&error.to_string()))?;
    let dialled = parsed.host_str().unwrap_or_default();
    let judged = host.trim_start_matches('[').trim_end_matches(']');
    if !dialled
        .trim_start_matches('[')
        .trim_end_matches(']')
        .eq_ignore_ascii_case(judged)
    {
        return Err(bad("its host is ambiguous"));
    }
    Ok(url)
}

/// `given` as it may be shown in an error: a token pasted into it by mistake (as a user name
/// or a query) is cut off.
fn redacted(given: &str) -> String {
    let without_query = given.split(['?', '#']).next().unwrap_or_default();
    match without_query.split_once("://") {
        Some((scheme, rest)) if rest.contains('@') => {
            let after = rest.rsplit_once('@').map_or("", |(_, host)| host);
            format!("{scheme}://…@{after}")
        }
        _ => without_query.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        for (given, url) in [
            ("https://hub.example", "https://hub.example/mcp"),
            ("https://hub.example/", "https://hub.example/mcp"),
            ("https://hub.example/mcp", "https://hub.example/mcp"),
            (
                "https://hub.example:8443/team/mcp/",
                "https://hub.example:8443/team/mcp",
            ),
            ("https://localhost:8443", "https://localhost:8443/mcp"),
        ] {
            assert_eq!(mcp_url(given, false).unwrap(), url, "{given}");
        }
        // Plain http:// to loopback only by choice, and `localhost` as 127.0.0.1.
        for (given, url) in [
            ("http://127.0.0.1:17841", "http://127.0.0.1:17841/mcp"),
            ("http://localhost/mcp", "http://127.0.0.1/mcp"),
            (
                "http://LocalHost:8080/team",
                "http://127.0.0.1:8080/team/mcp",
            ),
            ("http://[::1]:80", "http://[::1]:80/mcp"),
        ] {
            let refused = mcp_url(given, false).unwrap_err();
            assert_eq!(refused.exit_code(), 2, "{given}");
            assert!(refused.to_string().contains("--insecure-http"), "{refused}");
            assert_eq!(mcp_url(given, true).unwrap(), url, "{given}");
        }
        for given in [
            "http://hub.example/mcp",
            "http://10.0.0.2:17841",
            "ftp://hub.example",
            "hub.example",
            "https://user@hub.example",
            "https://hub.example:port",
            "https:///mcp",
            // Judged by one host, dialled at another; or asked of DNS.
            "http://192.0.2.2\\.localhost",
            "https://evil.example\\.hub.example.com",
            "http://hub.localhost:17841",
        ] {
            // Off loopback --insecure-http changes nothing.
            assert_eq!(mcp_url(given, true).unwrap_err().exit_code(), 2, "{given}");
        }
        // A token pasted into the URL is not repeated in the error.
        let error = mcp_url("https://user:s3cret@hub.example/?token=s3cret", false).unwrap_err();
        assert!(!error.to_string().contains("s3cret"), "{error}");
    }

    #[test]
    fn the_token_is_required_and_never_shown() {
        assert!(HostedHub::new("https://hub.example", None, None, false).is_err());
        let hub = HostedHub::new("https://hub.example", Some("s3cret-token"), None, false).unwrap();
        assert!(!format!("{hub:?}").contains("s3cret"));
        let error =
            HostedHub::new("http://hub.example", Some("s3cret-token"), None, true).unwrap_err();
        assert!(!error.to_string().contains("s3cret"));
        let hub = HostedHub::new("https://hub.example", Some("Bearer t0k\n"), None, false).unwrap();
        assert_eq!(hub.token, "t0k");
        assert!(HostedHub::new("https://hub.example", Some("a b"), None, false).is_err());
        assert!(HostedHub::new("http://127.0.0.1:1", Some("t0k"), None, false).is_err());
        assert!(HostedHub::new("http://127.0.0.1:1", Some("t0k"), None, true).is_ok());
    }

    #[test]
    fn a_token_file_is_the_users_alone() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("tabwire-cli-token-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("token");
        std::fs::write(&file, "s3cret-token\n").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(read_token_file(&file).unwrap(), "s3cret-token");
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        let refused = read_token_file(&file).unwrap_err().to_string();
        assert!(refused.contains("chmod 600"), "{refused}");
        assert!(!refused.contains("s3cret"), "{refused}");
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        std::fs::write(&file, "one\ntwo\n").unwrap();
        assert!(
            read_token_file(&file)
                .unwrap_err()
                .to_string()
                .contains("one line")
        );
        std::fs::write(&file, " \n").unwrap();
        assert!(
            read_token_file(&file)
                .unwrap_err()
                .to_string()
                .contains("empty")
        );
        assert!(read_token_file(&dir.join("missing")).is_err());
        assert!(read_token_file(&dir).is_err());
        std::fs::remove_dir_all(dir).unwrap();
    }
}
