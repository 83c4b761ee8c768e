//! Hub replicas for the cluster benchmark and tests: a `nats-server` ([`crate::nats`]) and N
//! hosted `tabwire-hub --cluster nats://… --node-id nK` processes ([`HubProcess`]) on loopback,
//! sharing one auth directory (one secret, one revocation list) and one public origin (the
//! address of whatever stands in front of them: a balancer, nginx, or nothing), each with its
//! own audit directory (docs/cluster.md).

use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::load::{HubProcess, Options};
use crate::nats::NatsServer;
use crate::scratch::Scratch;

/// The line a replica logs once it is on NATS (`cluster: node ID joined nats://…`).
pub const JOINED: &str = "joined nats://";

/// The node ID of replica `index` (0-based): `n1`, `n2`, … (deploy/nginx-replicas.conf routes
/// on these).
pub fn node_id(index: usize) -> String {
    format!("n{}", index + 1)
}

/// How to start the replicas.
#[derive(Debug, Clone)]
pub struct Setup {
    /// The `tabwire-hub` binary.
    pub hub: PathBuf,
    /// How many.
    pub replicas: usize,
    /// Their shared `--public-origin`.
    pub origin: String,
    /// More flags for each (limits).
    pub flags: Vec<String>,
    /// `TABWIRE_LOG`.
    pub log: String,
    /// Forward their log lines to the test's output (as `hub-n1`, …).
    pub forward_logs: bool,
}

/// The running replicas and their NATS server; everything stops when dropped.
pub struct Replicas {
    /// The replicas, `hubs[i]` with node ID [`node_id`]`(i)`; dropped before NATS.
    pub hubs: Vec<HubProcess>,
    /// Their NATS server.
    pub nats: NatsServer,
    /// The shared auth directory.
    pub auth_dir: PathBuf,
    setup: Setup,
    dir: Scratch,
}

impl Replicas {
    /// Starts NATS, makes the auth directory's secret (the first `token issue`), then starts
    /// the replicas one after the other, each waited for until it has joined.
    pub fn start(setup: Setup) -> anyhow::Result<Replicas> {
        let nats = NatsServer::start()?;
        let dir = Scratch::new("replicas");
        let auth_dir = dir.path().join("auth");
        crate::load::issue(&setup.hub, &auth_dir, "setup", "agent")?;
        let mut replicas = Replicas {
            hubs: Vec::new(),
            nats,
            auth_dir,
            setup,
            dir,
        };
        for index in 0..replicas.setup.replicas {
            let hub = replicas.start_one(index)?;
            replicas.hubs.push(hub);
        }
        Ok(replicas)
    }

    fn start_one(&self, index: usize) -> anyhow::Result<HubProcess> {
        let mut flags = vec![
            "--cluster".to_owned(),
            self.nats.url(),
            "--node-id".to_owned(),
            node_id(index),
            "--audit-dir".to_owned(),
            self.audit_dir(index).display().to_string(),
        ];
        flags.extend(self.setup.flags.iter().cloned());
        let options = Options {
            public_origin: Some(self.setup.origin.clone()),
            log: Some(self.setup.log.clone()),
            wait_for: Some(JOINED.to_owned()),
            forward_as: self
                .setup
                .forward_logs
                .then(|| format!("hub-{}", node_id(index))),
        };
        HubProcess::start_with(&self.setup.hub, &self.auth_dir, &flags, options)
            .with_context(|| format!("start replica {}", node_id(index)))
    }

    /// Replica `index`'s audit directory.
    pub fn audit_dir(&self, index: usize) -> PathBuf {
        self.dir.path().join(format!("audit-{}", node_id(index)))
    }

    /// `token issue` for `account` with `role` (`agent`, `browser`, `device`).
    pub fn issue(&self, account: &str, role: &str) -> anyhow::Result<String> {
        crate::load::issue(&self.setup.hub, &self.auth_dir, account, role)
    }

    /// The `Host` of the shared public origin.
    pub fn host(&self) -> &str {
        &self.hubs[0].host
    }

    /// The hub binary.
    pub fn program(&self) -> &Path {
        &self.setup.hub
    }

    /// `kill -9` replica `index`.
    pub fn kill(&mut self, index: usize) {
        self.hubs[index].kill();
    }
}

/// An MCP session (rmcp's streamable HTTP client, calling itself `name`) with replica `addr`
/// directly, sending `host` (the shared public origin's) as `Host`.
pub async fn agent(
    addr: std::net::SocketAddr,
    host: &str,
    token: &str,
    name: &str,
) -> crate::client::McpClient {
    use rmcp::ServiceExt;
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

    crate::hosted::install_crypto();
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert(reqwest::header::HOST, host.parse().expect("a Host header"));
    let client = reqwest::Client::builder()
        .default_headers(headers)
        .no_proxy()
        .build()
        .expect("plain HTTP client");
    let url = format!("http://{addr}/mcp");
    let config = StreamableHttpClientTransportConfig::with_uri(url.clone()).auth_header(token);
    let transport = StreamableHttpClientTransport::with_client(client, config);
    let service = crate::client::Listener::named(name)
        .serve(transport)
        .await
        .unwrap_or_else(|error| panic!("MCP initialize at {url}: {error}"));
    crate::client::McpClient::from_service(service)
}
