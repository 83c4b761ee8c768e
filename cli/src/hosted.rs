//! A hosted hub: its `/mcp` URL, its agent token, and the HTTPS client that carries both.
//!
//! The token goes with every request, so it never crosses a network in clear: `http://` is
//! refused unless the host is loopback (the protocol crate's `is_loopback_host`, the same rule
//! as the hub's `--public-origin` and `config --url`). The token is never printed, not even in
//! errors. TLS is rustls with ring and the platform's roots, plus `--ca-cert` for a private CA.

use std::path::{Path, PathBuf};
use std::sync::Once;

use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use tabwire_protocol::local::is_loopback_host;

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
    /// Checks `--url` and `--token` (and `--ca-cert`).
    pub fn new(
        url: &str,
        token: Option<&str>,
        ca_cert: Option<&Path>,
    ) -> Result<HostedHub, CliError> {
        let url = mcp_url(url)?;
        let token = token.filter(|token| !token.is_empty()).ok_or_else(|| {
            CliError::usage(format!(
                "--url {url} needs an agent token: set TABWIRE_TOKEN (or pass --token, which \
                 other users can see in the process list)"
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

/// The hub's `/mcp` URL from its origin (`https://hub.example/team`) or the URL itself;
/// `http://` only to a loopback host.
pub fn mcp_url(given: &str) -> Result<String, CliError> {
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
    let (host, _, _) = tabwire_protocol::local::split_authority(rest).map_err(bad)?;
    if !secure && !is_loopback_host(host) {
        return Err(bad(
            "the token would cross the network in clear; use https:// (http:// only for a \
             loopback host such as 127.0.0.1 behind a local proxy)",
        ));
    }
    let base = trimmed.strip_suffix("/mcp").unwrap_or(trimmed);
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
            ("http://127.0.0.1:17841", "http://127.0.0.1:17841/mcp"),
            ("http://localhost/mcp", "http://localhost/mcp"),
            ("http://[::1]:80", "http://[::1]:80/mcp"),
        ] {
            assert_eq!(mcp_url(given).unwrap(), url, "{given}");
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
            assert_eq!(mcp_url(given).unwrap_err().exit_code(), 2, "{given}");
        }
        // A token pasted into the URL is not repeated in the error.
        let error = mcp_url("https://user:s3cret@hub.example/?token=s3cret").unwrap_err();
        assert!(!error.to_string().contains("s3cret"), "{error}");
    }

    #[test]
    fn the_token_is_required_and_never_shown() {
        assert!(HostedHub::new("https://hub.example", None, None).is_err());
        let hub = HostedHub::new("https://hub.example", Some("s3cret-token"), None).unwrap();
        assert!(!format!("{hub:?}").contains("s3cret"));
        let error = HostedHub::new("http://hub.example", Some("s3cret-token"), None).unwrap_err();
        assert!(!error.to_string().contains("s3cret"));
        let hub = HostedHub::new("https://hub.example", Some("Bearer t0k\n"), None).unwrap();
        assert_eq!(hub.token, "t0k");
        assert!(HostedHub::new("https://hub.example", Some("a b"), None).is_err());
    }
}
