//! A small TCP balancer for the cluster tests: it accepts on one loopback port and forwards each
//! new connection to the first replica of its list that accepts it, then copies bytes both ways
//! until either side ends. A replica that dies ends the connections it carried; the client
//! (the extension) reconnects to the balancer, which now picks the next replica.
//!
//! This is how the tests give one browser several replicas: the extension keeps one server URL
//! (the balancer's), rather than learning a list of server URLs — what a deployment does with
//! nginx or Caddy in front (deploy/nginx-replicas.conf), in a few lines. The extension sends its
//! token only over `wss://`, so [`Balancer::start_tls`] also terminates TLS (a test CA's
//! certificate for `localhost`), as the proxy of a deployment does.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;
use tokio_rustls::TlsAcceptor;

use crate::proxy::Certificates;
use crate::scratch::Scratch;

/// A running balancer; it stops (and drops every connection it carries) when dropped.
pub struct Balancer {
    /// Where it accepts.
    pub addr: SocketAddr,
    backends: Arc<Mutex<Vec<SocketAddr>>>,
    routed: Arc<Mutex<Vec<SocketAddr>>>,
    tasks: Arc<Mutex<Vec<JoinHandle<()>>>>,
    accept: JoinHandle<()>,
    _certificates: Option<Scratch>,
}

impl Balancer {
    /// Listens on a free loopback port, forwarding to `backends` in order of preference (see
    /// [`Balancer::set_backends`] to give them once they are started).
    pub async fn start(backends: Vec<SocketAddr>) -> Balancer {
        Balancer::listen(backends, None).await
    }

    /// The same, taking TLS connections (a certificate for `localhost` from a test CA that
    /// nobody trusts: Chromium runs with `--ignore-certificate-errors`) and forwarding what is
    /// inside them as plain HTTP, as a TLS-terminating proxy does.
    pub async fn start_tls(backends: Vec<SocketAddr>) -> Balancer {
        use rustls::pki_types::pem::PemObject;
        use rustls::pki_types::{CertificateDer, PrivateKeyDer};

        crate::hosted::install_crypto();
        let dir = Scratch::new("balancer");
        let certs = Certificates::make(dir.path());
        let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&certs.leaf)
            .expect("the leaf certificate")
            .map(|cert| cert.expect("a PEM certificate"))
            .collect();
        let key = PrivateKeyDer::from_pem_file(&certs.leaf_key).expect("the leaf's key");
        let config = rustls::ServerConfig::builder()
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .expect("a TLS server configuration");
        let mut balancer =
            Balancer::listen(backends, Some(TlsAcceptor::from(Arc::new(config)))).await;
        balancer._certificates = Some(dir);
        balancer
    }

    async fn listen(backends: Vec<SocketAddr>, tls: Option<TlsAcceptor>) -> Balancer {
        let backends = Arc::new(Mutex::new(backends));
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the balancer on loopback");
        let addr = listener.local_addr().unwrap();
        let routed = Arc::new(Mutex::new(Vec::new()));
        let tasks = Arc::new(Mutex::new(Vec::<JoinHandle<()>>::new()));
        let accept = {
            let (backends, routed, tasks) = (backends.clone(), routed.clone(), tasks.clone());
            tokio::spawn(async move {
                while let Ok((client, _)) = listener.accept().await {
                    let backends = backends.lock().unwrap().clone();
                    let (routed, tls) = (routed.clone(), tls.clone());
                    let task = tokio::spawn(async move {
                        let _ = client.set_nodelay(true);
                        match tls {
                            Some(tls) => {
                                if let Ok(client) = tls.accept(client).await {
                                    forward(client, &backends, &routed).await;
                                }
                            }
                            None => forward(client, &backends, &routed).await,
                        }
                    });
                    let mut tasks = tasks.lock().unwrap();
                    tasks.retain(|task| !task.is_finished());
                    tasks.push(task);
                }
            })
        };
        Balancer {
            addr,
            backends,
            routed,
            tasks,
            accept,
            _certificates: None,
        }
    }

    /// Forwards new connections to `backends` from now on.
    pub fn set_backends(&self, backends: Vec<SocketAddr>) {
        *self.backends.lock().unwrap() = backends;
    }

    /// The replica each connection went to, in the order they came.
    pub fn routed(&self) -> Vec<SocketAddr> {
        self.routed.lock().unwrap().clone()
    }
}

/// Copies between `client` and the first of `backends` that accepts, until either ends.
async fn forward<S: AsyncRead + AsyncWrite + Unpin>(
    mut client: S,
    backends: &[SocketAddr],
    routed: &Mutex<Vec<SocketAddr>>,
) {
    let Some((backend, mut upstream)) = first_accepting(backends).await else {
        return; // No replica accepts: the client sees its connection close.
    };
    routed.lock().unwrap().push(backend);
    let _ = upstream.set_nodelay(true);
    let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
}

/// The first of `backends` that accepts a connection within a second.
async fn first_accepting(backends: &[SocketAddr]) -> Option<(SocketAddr, TcpStream)> {
    for &backend in backends {
        let dial = tokio::time::timeout(Duration::from_secs(1), TcpStream::connect(backend));
        if let Ok(Ok(stream)) = dial.await {
            return Some((backend, stream));
        }
    }
    None
}

impl Drop for Balancer {
    fn drop(&mut self) {
        self.accept.abort();
        for task in self.tasks.lock().unwrap().drain(..) {
            task.abort();
        }
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    /// A server that writes `name` to each connection and closes it.
    async fn naming(name: &'static str) -> (SocketAddr, JoinHandle<()>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let task = tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let _ = stream.write_all(name.as_bytes()).await;
            }
        });
        (addr, task)
    }

    async fn read_all(addr: SocketAddr) -> String {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        let mut text = String::new();
        let _ = stream.read_to_string(&mut text).await;
        text
    }

    #[tokio::test]
    async fn each_connection_goes_to_the_first_replica_that_accepts() {
        let (one, one_task) = naming("one").await;
        let (two, _two_task) = naming("two").await;
        let balancer = Balancer::start(vec![one, two]).await;
        assert_eq!(read_all(balancer.addr).await, "one");
        one_task.abort();
        let _ = one_task.await;
        // Its listener is closed now: the next connection goes to the second.
        assert_eq!(read_all(balancer.addr).await, "two");
        assert_eq!(balancer.routed(), [one, two]);
    }
}
