//! `wss://` for real: a hub played behind TLS with a certificate from a private CA (made with
//! the `openssl` CLI), reached with `--ca-cert`, carrying the token; and refused without it.

use std::path::{Path, PathBuf};
use std::process::Command;

use futures_util::StreamExt;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::TcpListener;
use tokio_tungstenite::tungstenite::handshake::server::{Request, Response};

use super::*;

/// A CA and a leaf for `localhost` and 127.0.0.1, in `dir`.
fn make_certificates(dir: &Path) {
    let script = r#"
        set -e
        openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 \
            -subj '/CN=tabwire-android test CA' \
            -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign \
            -keyout ca.key -out ca.pem 2>/dev/null
        openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
            -subj '/CN=localhost' -keyout leaf.key -out leaf.csr 2>/dev/null
        printf 'basicConstraints=critical,CA:FALSE\nextendedKeyUsage=serverAuth\nsubjectAltName=DNS:localhost,IP:127.0.0.1\n' > leaf.ext
        openssl x509 -req -in leaf.csr -CA ca.pem -CAkey ca.key -set_serial 7 -days 1 \
            -extfile leaf.ext -out leaf.pem 2>/dev/null
    "#;
    let status = Command::new("sh")
        .args(["-c", script])
        .current_dir(dir)
        .status()
        .expect("the openssl CLI (Debian package openssl) makes the test's certificates");
    assert!(status.success(), "openssl failed");
}

fn scratch() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tabwire-android-tls-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Accepts TLS connections with the leaf; reports each upgrade's `Authorization` header.
async fn tls_hub(dir: &Path) -> (String, tokio::sync::mpsc::UnboundedReceiver<Option<String>>) {
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(dir.join("leaf.pem"))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let key = PrivateKeyDer::from_pem_file(dir.join("leaf.key")).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let (seen, headers) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            let seen = seen.clone();
            tokio::spawn(async move {
                // A client that does not trust the certificate aborts here.
                let Ok(tls) = acceptor.accept(stream).await else {
                    return;
                };
                let mut authorization = None;
                #[allow(clippy::result_large_err)]
                let callback = |request: &Request, response: Response| {
                    authorization = request
                        .headers()
                        .get("authorization")
                        .map(|value| value.to_str().unwrap().to_owned());
                    Ok(response)
                };
                if let Ok(mut socket) = tokio_tungstenite::accept_hdr_async(tls, callback).await {
                    let _ = seen.send(authorization);
                    while socket.next().await.is_some() {}
                }
            });
        }
    });
    (format!("wss://localhost:{port}/device"), headers)
}

#[tokio::test]
async fn a_private_ca_carries_wss_and_the_token() {
    let dir = scratch();
    make_certificates(&dir);
    let (url, mut headers) = tls_hub(&dir).await;

    let trusted =
        HubEndpoint::new(&url, Some("tok-9".into()), Some(&dir.join("ca.pem")), false).unwrap();
    assert!(matches!(trusted.mode(), Mode::Hosted(Some(_))));
    let socket = trusted.connect().await.unwrap();
    assert_eq!(
        headers.recv().await.unwrap().as_deref(),
        Some("Bearer tok-9")
    );
    drop(socket);

    // Without the CA the hub's certificate is not trusted: no connection, so no token sent.
    let untrusted = HubEndpoint::new(&url, Some("tok-9".into()), None, false).unwrap();
    let error = untrusted.connect().await.unwrap_err();
    assert!(error.contains("certificate"), "{error}");
    assert!(headers.try_recv().is_err());
    std::fs::remove_dir_all(dir).unwrap();
}
