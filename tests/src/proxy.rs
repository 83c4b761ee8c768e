//! A real TLS reverse proxy in front of a hosted hub: nginx (Debian's, run unprivileged-style
//! with its own prefix) and a throwaway certificate authority made with the `openssl` CLI.
//!
//! The server block is written here; the locations come from the repository's own
//! `deploy/nginx/tabwire-locations.conf`, so the tests exercise the configuration operators use.

use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::artifacts::repo_root;
use crate::scratch::Scratch;

/// The nginx binary (Debian's `nginx` / `nginx-light` package).
pub const NGINX: &str = "/usr/sbin/nginx";

/// The path prefix the test's nginx also serves tabwire under, as `deploy/nginx/tabwire.conf`
/// shows: a `rewrite … last` to the same locations.
pub const PREFIX: &str = "/team";

/// The repository's nginx locations for tabwire, included by the test's server block.
pub fn locations_conf() -> PathBuf {
    repo_root().join("deploy/nginx/tabwire-locations.conf")
}

/// A test certificate authority and a leaf for `localhost` / `127.0.0.1` that it signed.
pub struct Certificates {
    /// The CA certificate (PEM), for clients to trust.
    pub ca_pem: Vec<u8>,
    /// The leaf certificate file (PEM), for the proxy.
    pub leaf: PathBuf,
    /// The leaf's private key file (PEM), for the proxy.
    pub leaf_key: PathBuf,
}

impl Certificates {
    /// Makes a CA and a leaf in `dir` with the `openssl` CLI (P-256 keys, valid two days). The
    /// leaf says `CA:FALSE`: rustls refuses a CA certificate used as an end entity (PLATFORM.md).
    pub fn make(dir: &Path) -> Certificates {
        let path = |name: &str| dir.join(name);
        openssl(&[
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-days",
            "2",
            "-subj",
            "/CN=tabwire e2e test CA",
            "-addext",
            "basicConstraints=critical,CA:TRUE",
            "-addext",
            "keyUsage=critical,keyCertSign,cRLSign",
            "-keyout",
            path_str(&path("ca.key")),
            "-out",
            path_str(&path("ca.pem")),
        ]);
        openssl(&[
            "req",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-subj",
            "/CN=localhost",
            "-keyout",
            path_str(&path("leaf.key")),
            "-out",
            path_str(&path("leaf.csr")),
        ]);
        std::fs::write(
            path("leaf.ext"),
            "basicConstraints=critical,CA:FALSE\n\
             keyUsage=critical,digitalSignature\n\
             extendedKeyUsage=serverAuth\n\
             subjectAltName=DNS:localhost,IP:127.0.0.1\n",
        )
        .unwrap();
        openssl(&[
            "x509",
            "-req",
            "-in",
            path_str(&path("leaf.csr")),
            "-CA",
            path_str(&path("ca.pem")),
            "-CAkey",
            path_str(&path("ca.key")),
            "-set_serial",
            "2",
            "-days",
            "2",
            "-extfile",
            path_str(&path("leaf.ext")),
            "-out",
            path_str(&path("leaf.pem")),
        ]);
        Certificates {
            ca_pem: std::fs::read(path("ca.pem")).unwrap(),
            leaf: path("leaf.pem"),
            leaf_key: path("leaf.key"),
        }
    }
}

fn path_str(path: &Path) -> &str {
    path.to_str().expect("scratch paths are UTF-8")
}

fn openssl(args: &[&str]) {
    let output = Command::new("openssl")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run the openssl CLI (package openssl)");
    assert!(
        output.status.success(),
        "openssl {} failed: {}",
        args[0],
        String::from_utf8_lossy(&output.stderr)
    );
}

/// A free loopback port: bound, read and released (a later bind by another process is
/// unlikely to lose the race on a test machine).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A running nginx terminating TLS on a loopback port and proxying to one upstream hub. Its
/// process group is killed when dropped.
pub struct Nginx {
    child: Option<Child>,
    /// Where it listens (TLS).
    pub addr: SocketAddr,
    /// The certificates it serves.
    pub certs: Certificates,
    _dir: Scratch,
}

impl Nginx {
    /// Starts nginx on `port` (see [`free_port`]) with TLS for `localhost`, proxying the
    /// repository's locations to the hub at `upstream`, and waits until it accepts connections.
    pub fn start(port: u16, upstream: SocketAddr) -> Nginx {
        let (dir, certs, temp) = Nginx::prefix();
        let prefix = dir.path();
        let locations = locations_conf();
        assert!(
            locations.exists(),
            "{} is missing: the tests proxy through the repository's nginx locations",
            locations.display()
        );
        let p = |name: &str| prefix.join(name).display().to_string();
        let config = format!(
            "worker_processes 1;\n\
             pid {pid};\n\
             error_log stderr notice;\n\
             events {{ worker_connections 512; }}\n\
             http {{\n\
             \x20 log_format tabwire '$request_method $request_uri $status $body_bytes_sent \
             host=$http_host rt=$request_time urt=$upstream_response_time';\n\
             \x20 access_log /dev/stderr tabwire;\n\
             \x20 client_body_temp_path {t}/client_body;\n\
             \x20 proxy_temp_path {t}/proxy;\n\
             \x20 fastcgi_temp_path {t}/fastcgi;\n\
             \x20 uwsgi_temp_path {t}/uwsgi;\n\
             \x20 scgi_temp_path {t}/scgi;\n\
             \x20 upstream tabwire_hub {{ server {upstream}; keepalive 8; }}\n\
             \x20 server {{\n\
             \x20   listen 127.0.0.1:{port} ssl;\n\
             \x20   server_name localhost;\n\
             \x20   ssl_certificate {leaf};\n\
             \x20   ssl_certificate_key {key};\n\
             \x20   location ^~ {prefix}/ {{ rewrite ^{prefix}(/.*)$ $1 last; }}\n\
             \x20   include {locations};\n\
             \x20 }}\n\
             }}\n",
            pid = p("nginx.pid"),
            t = temp.display(),
            leaf = certs.leaf.display(),
            key = certs.leaf_key.display(),
            locations = locations.display(),
            prefix = PREFIX,
        );
        Nginx::launch(dir, port, certs, &config)
    }

    /// A prefix directory nginx's workers can use, with the test CA's certificates and the
    /// temp directories; returns it, the certificates and the temp directory.
    fn prefix() -> (Scratch, Certificates, PathBuf) {
        let dir = Scratch::new("nginx");
        // Workers run as `nobody` when the test runs as root: they need to reach the prefix
        // and write its temp dirs. The master (root) reads the config and the key.
        let prefix = dir.path();
        std::fs::set_permissions(prefix, std::fs::Permissions::from_mode(0o755)).unwrap();
        let certs = Certificates::make(prefix);
        let temp = prefix.join("temp");
        for name in ["client_body", "proxy", "fastcgi", "uwsgi", "scgi"] {
            let path = temp.join(name);
            std::fs::create_dir_all(&path).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o777)).unwrap();
        }
        std::fs::create_dir_all(prefix.join("logs")).unwrap();
        (dir, certs, temp)
    }

    /// Writes `config` as the prefix's `nginx.conf`, starts nginx on it and waits until it
    /// accepts connections on `port`.
    fn launch(dir: Scratch, port: u16, certs: Certificates, config: &str) -> Nginx {
        let prefix = dir.path();
        let locations = locations_conf();
        let conf = prefix.join("nginx.conf");
        std::fs::write(&conf, config).unwrap();
        // A relative `include` inside the locations file resolves against the config's
        // directory (the prefix): make the file's siblings available there too (never over a
        // file written here).
        link_siblings(&locations, prefix);
        let mut child = Command::new(NGINX)
            .arg("-p")
            .arg(prefix)
            .arg("-c")
            .arg(&conf)
            .args(["-e", "stderr", "-g", "daemon off;"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            // Its own process group: killing it takes the workers along.
            .process_group(0)
            .spawn()
            .expect("start nginx (package nginx-light or nginx)");
        let stderr = child.stderr.take().expect("piped stderr");
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                crate::logs::forward_log("nginx", &line);
            }
        });
        let addr: SocketAddr = ([127, 0, 0, 1], port).into();
        let mut nginx = Nginx {
            child: Some(child),
            addr,
            certs,
            _dir: dir,
        };
        let give_up = Instant::now() + Duration::from_secs(10);
        loop {
            if TcpStream::connect(addr).is_ok() {
                break;
            }
            if let Some(status) = nginx.child.as_mut().unwrap().try_wait().unwrap() {
                panic!("nginx exited at start ({status}); its log is above");
            }
            assert!(Instant::now() < give_up, "nginx did not listen on {addr}");
            std::thread::sleep(Duration::from_millis(50));
        }
        nginx
    }

    /// Starts nginx on `port` with the repository's `deploy/nginx-replicas.conf` for three hub
    /// replicas at `replicas` (node IDs n1, n2, n3): its addresses, certificate paths and
    /// listening ports replaced by the test's, everything else as operators use it. Panics when
    /// the file no longer has what is replaced (the test would not be running it).
    pub fn start_replicas(port: u16, replicas: &[SocketAddr]) -> Nginx {
        assert_eq!(
            replicas.len(),
            3,
            "deploy/nginx-replicas.conf is for 3 replicas"
        );
        let (dir, certs, temp) = Nginx::prefix();
        let file = repo_root().join("deploy/nginx-replicas.conf");
        let mut site = std::fs::read_to_string(&file)
            .unwrap_or_else(|error| panic!("read {}: {error}", file.display()));
        let mut replace = |from: &str, to: &str| {
            assert!(
                site.contains(from),
                "{} no longer contains {from:?}: adapt the test",
                file.display()
            );
            site = site.replace(from, to);
        };
        for (n, replica) in replicas.iter().enumerate() {
            replace(&format!("127.0.0.1:{}", 17841 + n), &replica.to_string());
        }
        replace("    listen [::]:80;\n", "");
        replace("    listen [::]:443 ssl http2;\n", "");
        replace("listen 80;", &format!("listen 127.0.0.1:{};", free_port()));
        replace(
            "listen 443 ssl http2;",
            &format!("listen 127.0.0.1:{port} ssl;"),
        );
        replace("server_name tabwire.example.com;", "server_name localhost;");
        replace(
            "/etc/letsencrypt/live/tabwire.example.com/fullchain.pem",
            &certs.leaf.display().to_string(),
        );
        replace(
            "/etc/letsencrypt/live/tabwire.example.com/privkey.pem",
            &certs.leaf_key.display().to_string(),
        );
        let site_path = dir.path().join("replicas.conf");
        std::fs::write(&site_path, site).unwrap();
        let config = format!(
            "worker_processes 1;\n\
             pid {pid};\n\
             error_log stderr notice;\n\
             events {{ worker_connections 512; }}\n\
             http {{\n\
             \x20 log_format tabwire '$request_method $request_uri $status sid=$http_mcp_session_id \
             upstream=$upstream_addr';\n\
             \x20 access_log /dev/stderr tabwire;\n\
             \x20 client_body_temp_path {t}/client_body;\n\
             \x20 proxy_temp_path {t}/proxy;\n\
             \x20 fastcgi_temp_path {t}/fastcgi;\n\
             \x20 uwsgi_temp_path {t}/uwsgi;\n\
             \x20 scgi_temp_path {t}/scgi;\n\
             \x20 include {site};\n\
             }}\n",
            pid = dir.path().join("nginx.pid").display(),
            t = temp.display(),
            site = site_path.display(),
        );
        Nginx::launch(dir, port, certs, &config)
    }

    /// The public origin clients use: `https://localhost:PORT`.
    pub fn origin(&self) -> String {
        format!("https://localhost:{}", self.addr.port())
    }

    /// Stops nginx: SIGTERM to the master (a fast shutdown that reaps its workers), then, after
    /// 3 s or once the master is gone, SIGKILL to its process group for anything left.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let pid = child.id() as i32;
            // SAFETY: signalling the process we started, then its process group (created for
            // it); no memory is involved.
            unsafe {
                libc::kill(pid, libc::SIGTERM);
            }
            let give_up = Instant::now() + Duration::from_secs(3);
            while matches!(child.try_wait(), Ok(None)) && Instant::now() < give_up {
                std::thread::sleep(Duration::from_millis(20));
            }
            unsafe {
                libc::kill(-pid, libc::SIGKILL);
            }
            let _ = child.wait();
        }
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        self.kill();
    }
}

fn link_siblings(file: &Path, prefix: &Path) {
    let Some(parent) = file.parent() else {
        return;
    };
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let target = prefix.join(entry.file_name());
        if !target.exists() {
            let _ = std::os::unix::fs::symlink(entry.path(), target);
        }
    }
}
