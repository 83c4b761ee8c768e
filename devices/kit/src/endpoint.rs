//! The hub's `/device` URL, what kind of hub it names, and opening a WebSocket to it.
//!
//! A hub on plain `ws://` with no token is a local one: each connection starts with the
//! pairing exchange ([`crate::link`]). A hub on `wss://`, or any hub given a token, is
//! hosted: the connection carries `Authorization: Bearer TOKEN` and starts with the hello. A
//! token is never sent over plain `ws://` to another machine, and to a loopback address only
//! with `--insecure-http` (another user of the machine can listen on a loopback port the hub
//! left free, and would be handed the token); local mode is refused off loopback: a local hub
//! binds loopback only, and a pairing exchange relayed over a network would hand a man in the
//! middle the session. The token comes from the environment or a file only the user can read
//! ([`read_secret_file`]), never the command line. TLS goes through rustls with the
//! platform's roots, plus `--ca-cert` for a private certificate authority.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tabwire_protocol::local::{current_uid, is_loopback_host, secret_file_problem};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::{HeaderValue, Uri, header};
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::{Connector, MaybeTlsStream, WebSocketStream};

/// The largest message read from the hub: an app to install (`MAX_INSTALL_BYTES` in base64,
/// four thirds of it) with room for its request around it.
pub const MAX_HUB_MESSAGE: usize = 64 * 1024 * 1024;
const _: () = assert!(
    (tabwire_protocol::devices::MAX_INSTALL_BYTES as usize).div_ceil(3) * 4 + 64 * 1024
        <= MAX_HUB_MESSAGE
);
/// The local hub's default `/device` URL.
pub const DEFAULT_HUB: &str = "ws://127.0.0.1:17841/device";

/// How long opening the TCP connection, TLS and the WebSocket upgrade may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// An open connection to the hub.
pub type HubSocket = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// An access token; its `Debug` hides it, and it never reaches a log line.
#[derive(Clone, PartialEq, Eq)]
pub struct Token(String);

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(••••)")
    }
}

/// How the backend proves itself to the hub.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    /// A local hub: the pairing exchange.
    Local,
    /// A hosted hub: a bearer token (none given: the hub will refuse, and say so).
    Hosted(Option<Token>),
}

/// Why a hub URL or its options cannot be used.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum EndpointError {
    /// Not a `ws://` or `wss://` URL with a host.
    #[error("--hub {url:?}: {reason}")]
    BadUrl {
        /// The URL as given.
        url: String,
        /// What is wrong.
        reason: String,
    },
    /// A token would travel in the clear.
    #[error(
        "--hub {url}: a token is never sent over plain ws:// to another machine; use the hub's \
         wss:// URL (hosted hubs sit behind TLS), or ws:// to a loopback address"
    )]
    TokenOverPlainText {
        /// The URL as given.
        url: String,
    },
    /// A token over plain `ws://` to a loopback address without `--insecure-http`.
    #[error(
        "--hub {url}: the token would go in clear to whatever listens on that loopback port, \
         which may be another user's program while the hub is not running; use the hub's \
         wss:// URL, or pass --insecure-http to send it anyway"
    )]
    TokenOverPlainLoopback {
        /// The URL as given.
        url: String,
    },
    /// Local mode (pairing, no token) to a hub off this machine over plain `ws://`.
    #[error(
        "--hub {url}: a local hub (plain ws://, no token) is reached on this machine's loopback \
         only. Over a network the pairing exchange and every device request would travel in the \
         clear, and whoever relays them could take the session. Use a hosted hub over wss:// \
         with a device token (--hub wss://HOST/device and TABWIRE_TOKEN), or reach the other \
         machine's hub through an SSH tunnel (ssh -L 17841:127.0.0.1:17841 HOST, then the \
         default --hub)"
    )]
    LocalOffLoopback {
        /// The URL as given.
        url: String,
    },
    /// The `--ca-cert` file is unusable.
    #[error("--ca-cert {path}: {reason}")]
    CaCert {
        /// The file.
        path: String,
        /// What is wrong.
        reason: String,
    },
}

/// The hub to connect to.
#[derive(Debug, Clone)]
pub struct HubEndpoint {
    url: String,
    mode: Mode,
    loopback: bool,
    tls: Option<Arc<rustls::ClientConfig>>,
}

impl HubEndpoint {
    /// Checks the URL and the options that go with it; `insecure_http` lets a token go over
    /// plain `ws://` to a loopback address.
    pub fn new(
        url: &str,
        token: Option<String>,
        ca_cert: Option<&Path>,
        insecure_http: bool,
    ) -> Result<HubEndpoint, EndpointError> {
        let bad = |reason: &str| EndpointError::BadUrl {
            url: url.to_owned(),
            reason: reason.to_owned(),
        };
        if url.contains('#') {
            return Err(bad("a hub URL has no #fragment"));
        }
        let uri: Uri = url
            .parse()
            .map_err(|_| bad("not a URL (expected ws://HOST:PORT/device)"))?;
        let tls = match uri.scheme_str() {
            Some("ws") => false,
            Some("wss") => true,
            _ => {
                return Err(bad(
                    "the scheme must be ws:// (a local hub) or wss:// (hosted)",
                ));
            }
        };
        let authority = uri
            .authority()
            .ok_or_else(|| bad("the URL names no host"))?;
        if authority.as_str().contains('@') {
            return Err(bad("a hub URL carries no user name or password"));
        }
        let host = authority
            .host()
            .trim_start_matches('[')
            .trim_end_matches(']');
        if host.is_empty() {
            return Err(bad("the URL names no host"));
        }
        let loopback = is_loopback_host(host);
        // `localhost` also resolves to [::1], where another user's program could listen while
        // the hub holds 127.0.0.1 (docs/pairing.md): dial the address the hub binds.
        let dialled = tabwire_protocol::local::dialled_host(host, tls);
        let url = if dialled != host {
            let port = authority
                .port_u16()
                .map(|p| format!(":{p}"))
                .unwrap_or_default();
            let path = uri.path_and_query().map(|p| p.as_str()).unwrap_or("/");
            format!("ws://{dialled}{port}{path}")
        } else {
            url.to_owned()
        };
        let token = token.filter(|token| !token.is_empty()).map(Token);
        if token.is_some() && !tls && !loopback {
            return Err(EndpointError::TokenOverPlainText {
                url: url.to_owned(),
            });
        }
        if token.is_some() && !tls && !insecure_http {
            return Err(EndpointError::TokenOverPlainLoopback {
                url: url.to_owned(),
            });
        }
        if token.is_none() && !tls && !loopback {
            return Err(EndpointError::LocalOffLoopback {
                url: url.to_owned(),
            });
        }
        let mode = if tls || token.is_some() {
            Mode::Hosted(token)
        } else {
            Mode::Local
        };
        let tls = if tls {
            Some(Arc::new(tls_config(ca_cert)?))
        } else {
            None
        };
        Ok(HubEndpoint {
            url,
            mode,
            loopback,
            tls,
        })
    }

    /// The URL dialled (`localhost` made `127.0.0.1`); also the key store's name for the hub.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Local or hosted.
    pub fn mode(&self) -> &Mode {
        &self.mode
    }

    /// Whether the hub is on this machine's loopback (so `tabwire-hub pair` can reach its
    /// state).
    pub fn is_loopback(&self) -> bool {
        self.loopback
    }

    /// Opens the WebSocket, with the token when hosted.
    pub async fn connect(&self) -> Result<HubSocket, String> {
        let mut request = self
            .url
            .as_str()
            .into_client_request()
            .map_err(|error| format!("cannot make a request for {}: {error}", self.url))?;
        if let Mode::Hosted(Some(Token(token))) = &self.mode {
            let value = HeaderValue::from_str(&format!("Bearer {token}"))
                .map_err(|_| "the token has characters a header cannot carry".to_owned())?;
            request.headers_mut().insert(header::AUTHORIZATION, value);
        }
        let connector = self.tls.clone().map(Connector::Rustls);
        // A request may carry an app to install (up to `MAX_INSTALL_BYTES`, base64 in one
        // message): tungstenite's default frame limit (16 MiB) would drop the connection.
        let config = WebSocketConfig::default()
            .max_message_size(Some(MAX_HUB_MESSAGE))
            .max_frame_size(Some(MAX_HUB_MESSAGE));
        let connecting = tokio_tungstenite::connect_async_tls_with_config(
            request,
            Some(config),
            true,
            connector,
        );
        match tokio::time::timeout(CONNECT_TIMEOUT, connecting).await {
            Err(_) => Err(format!(
                "{} did not answer within {} s",
                self.url,
                CONNECT_TIMEOUT.as_secs()
            )),
            Ok(Err(error)) => Err(format!(
                "cannot connect to {}: {}",
                self.url,
                describe(&error)
            )),
            Ok(Ok((socket, _response))) => Ok(socket),
        }
    }
}

/// A connection error in words; a refused upgrade says its HTTP status (401: the token).
fn describe(error: &tokio_tungstenite::tungstenite::Error) -> String {
    use tokio_tungstenite::tungstenite::Error;
    match error {
        Error::Http(response) => {
            let status = response.status();
            let body = response
                .body()
                .as_deref()
                .map(String::from_utf8_lossy)
                .unwrap_or_default();
            let body: String = body.trim().chars().take(200).collect();
            let hint = match status.as_u16() {
                401 => " (the token is missing, invalid, expired or revoked)",
                403 => " (the token's role or account may not connect devices)",
                404 => " (no /device endpoint there: is the URL right, and the hub new enough?)",
                _ => "",
            };
            format!("the hub answered HTTP {status}{hint} {body}")
        }
        other => other.to_string(),
    }
}

/// rustls with the platform's roots and the optional private CA.
fn tls_config(ca_cert: Option<&Path>) -> Result<rustls::ClientConfig, EndpointError> {
    let mut roots = rustls::RootCertStore::empty();
    let native = rustls_native_certs::load_native_certs();
    for error in &native.errors {
        tracing::debug!(%error, "a platform certificate could not be loaded");
    }
    let (added, _ignored) = roots.add_parsable_certificates(native.certs);
    if let Some(path) = ca_cert {
        let shown = path.display().to_string();
        let ca_error = |reason: String| EndpointError::CaCert {
            path: shown.clone(),
            reason,
        };
        let pem = std::fs::read(path).map_err(|error| ca_error(error.to_string()))?;
        use rustls_pki_types::CertificateDer;
        use rustls_pki_types::pem::PemObject;
        let mut count = 0;
        for cert in CertificateDer::pem_slice_iter(&pem) {
            let cert = cert.map_err(|error| ca_error(format!("not PEM certificates: {error}")))?;
            roots
                .add(cert)
                .map_err(|error| ca_error(format!("not a usable certificate: {error}")))?;
            count += 1;
        }
        if count == 0 {
            return Err(ca_error("holds no PEM certificate".to_owned()));
        }
    } else if added == 0 {
        tracing::warn!(
            "no trusted root certificates found on this system: wss:// connections will fail \
             unless --ca-cert names the hub's certificate authority"
        );
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("ring supports the default protocol versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(config)
}

#[cfg(test)]
#[path = "endpoint_tls_tests.rs"]
mod tls_tests;

/// A secret (a token, a pairing code) from the file at `path`: a regular file of the user's
/// that no one else may open, holding one line.
pub fn read_secret_file(path: &Path) -> Result<String, String> {
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(|error| error.to_string())?;
    let meta = file.metadata().map_err(|error| error.to_string())?;
    if let Some(problem) = secret_file_problem(&meta, current_uid()) {
        return Err(problem.to_string());
    }
    let mut text = String::new();
    file.take(64 * 1024)
        .read_to_string(&mut text)
        .map_err(|error| error.to_string())?;
    let secret = text.trim();
    if secret.is_empty() {
        return Err("the file is empty".to_owned());
    }
    if secret.lines().count() > 1 {
        return Err("the file holds more than one line; put the secret alone in it".to_owned());
    }
    Ok(secret.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_and_hosted_are_told_apart() {
        let local = HubEndpoint::new(DEFAULT_HUB, None, None, false).unwrap();
        assert_eq!(local.mode(), &Mode::Local);
        assert!(local.is_loopback());
        let hosted = HubEndpoint::new(
            "wss://hub.example.com/device",
            Some("t".into()),
            None,
            false,
        )
        .unwrap();
        assert!(matches!(hosted.mode(), Mode::Hosted(Some(_))));
        assert!(!hosted.is_loopback());
        // A token to a loopback ws:// hub (a hosted hub on this machine) only when asked for.
        assert_eq!(
            HubEndpoint::new("ws://[::1]:9/device", Some("t".into()), None, false).unwrap_err(),
            EndpointError::TokenOverPlainLoopback {
                url: "ws://[::1]:9/device".into()
            }
        );
        let loop_hosted =
            HubEndpoint::new("ws://[::1]:9/device", Some("t".into()), None, true).unwrap();
        assert!(matches!(loop_hosted.mode(), Mode::Hosted(Some(_))));
        let said = HubEndpoint::new(
            "ws://localhost:9/device",
            Some("s3cret".into()),
            None,
            false,
        )
        .unwrap_err()
        .to_string();
        assert!(
            said.contains("--insecure-http") && !said.contains("s3cret"),
            "{said}"
        );
        // An empty token is no token.
        assert_eq!(
            HubEndpoint::new(DEFAULT_HUB, Some(String::new()), None, false)
                .unwrap()
                .mode(),
            &Mode::Local
        );
    }

    #[test]
    fn a_token_is_never_sent_over_plain_ws_to_another_machine() {
        for url in [
            "ws://hub.example.com/device",
            "ws://192.168.1.10:17841/device",
            "ws://0.0.0.0:17841/device",
        ] {
            assert_eq!(
                HubEndpoint::new(url, Some("secret".into()), None, false).unwrap_err(),
                EndpointError::TokenOverPlainText { url: url.into() },
                "{url}"
            );
        }
        let error = HubEndpoint::new(
            "ws://hub.example.com/device",
            Some("secret".into()),
            None,
            false,
        )
        .unwrap_err()
        .to_string();
        assert!(!error.contains("secret"), "{error}");
    }

    #[test]
    fn local_mode_is_refused_off_loopback() {
        for url in [
            "ws://hub.example.com/device",
            "ws://192.168.1.10:17841/device",
            "ws://0.0.0.0:17841/device",
            "ws://[fe80::1]:17841/device",
        ] {
            let error = HubEndpoint::new(url, None, None, false).unwrap_err();
            assert_eq!(
                error,
                EndpointError::LocalOffLoopback { url: url.into() },
                "{url}"
            );
            let said = error.to_string();
            assert!(said.contains("wss://") && said.contains("SSH"), "{said}");
        }
        for url in [
            "ws://127.0.0.1:17841/device",
            "ws://127.1.2.3:9/device",
            "ws://[::1]:9/device",
            "ws://localhost/device",
        ] {
            assert_eq!(
                HubEndpoint::new(url, None, None, false).unwrap().mode(),
                &Mode::Local,
                "{url}"
            );
        }
        // Hosted over TLS needs no loopback.
        assert!(HubEndpoint::new("wss://hub.example.com/device", None, None, false).is_ok());
    }

    #[test]
    fn localhost_is_dialled_as_127_0_0_1() {
        let endpoint = HubEndpoint::new("ws://localhost:17841/device", None, None, false).unwrap();
        assert_eq!(endpoint.url(), "ws://127.0.0.1:17841/device");
        let endpoint = HubEndpoint::new("ws://LOCALHOST/device", None, None, false).unwrap();
        assert_eq!(endpoint.url(), "ws://127.0.0.1/device");
    }

    #[test]
    fn bad_urls_are_refused_with_reasons() {
        for (url, words) in [
            ("http://127.0.0.1:17841/device", "scheme"),
            ("127.0.0.1:17841", "scheme"),
            ("ws://user:pw@127.0.0.1/device", "password"),
            ("ws://127.0.0.1/device#x", "fragment"),
            ("not a url", "URL"),
        ] {
            let error = HubEndpoint::new(url, None, None, false)
                .unwrap_err()
                .to_string();
            assert!(error.contains(words), "{url}: {error}");
        }
    }

    #[test]
    fn secret_files_are_the_users_alone_and_hold_one_line() {
        use std::os::unix::fs::PermissionsExt;
        let dir =
            std::env::temp_dir().join(format!("tabwire-android-secret-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("code");
        std::fs::write(&file, "7KQ2M-H9D4X-0RB6T-WC3NP\n").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(read_secret_file(&file).unwrap(), "7KQ2M-H9D4X-0RB6T-WC3NP");
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o640)).unwrap();
        let refused = read_secret_file(&file).unwrap_err();
        assert!(
            refused.contains("chmod 600") && !refused.contains("7KQ2M"),
            "{refused}"
        );
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        std::fs::write(&file, "a\nb\n").unwrap();
        assert!(read_secret_file(&file).unwrap_err().contains("one line"));
        std::fs::write(&file, "\n").unwrap();
        assert!(read_secret_file(&file).unwrap_err().contains("empty"));
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_ca_cert_file_must_hold_certificates() {
        let dir = std::env::temp_dir().join(format!("tabwire-android-ca-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let empty = dir.join("empty.pem");
        std::fs::write(&empty, "nothing here\n").unwrap();
        let error = HubEndpoint::new("wss://hub.example.com/device", None, Some(&empty), false)
            .unwrap_err();
        assert!(matches!(error, EndpointError::CaCert { .. }), "{error}");
        let missing = HubEndpoint::new(
            "wss://hub.example.com/device",
            None,
            Some(&dir.join("missing.pem")),
            false,
        );
        assert!(matches!(missing, Err(EndpointError::CaCert { .. })));
        std::fs::remove_dir_all(dir).unwrap();
    }
}
