//! The fixture web server: serves `tests/fixtures/` on loopback, plus a few endpoints:
//!
//! - `/slow?ms=N`, a page that takes N milliseconds to arrive (for requests that must still be
//!   running when something breaks). It counts how often `/slow` was requested, which proves
//!   nothing was replayed.
//! - `/json?n=N`, a small JSON document ([`json_body`]), for pages that fire many requests and
//!   for response bodies read back exactly.
//! - `/big?kb=N`, a plain-text body of N KiB ([`big_body`]), for bodies too large to return whole.
//! - `/cookie?name=X&value=Y`, which sets an `HttpOnly` cookie through a `Set-Cookie` header (one
//!   the page's own script cannot see or set).
//! - `/attachment?name=F&kb=N`, [`big_body`]`(N)` sent as a download
//!   (`Content-Disposition: attachment; filename="F"`).

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;

use crate::artifacts::repo_root;

/// A running fixture server; stops when dropped.
pub struct Fixtures {
    /// Where it listens.
    pub addr: SocketAddr,
    hits: Arc<Hits>,
    task: tokio::task::JoinHandle<()>,
}

/// How many times some paths were requested.
#[derive(Default)]
struct Hits {
    slow: AtomicU32,
    json: AtomicU32,
}

#[derive(serde::Deserialize)]
struct SlowQuery {
    ms: u64,
}

impl Fixtures {
    /// Starts the server on a free loopback port.
    pub async fn serve() -> Fixtures {
        let hits = Arc::new(Hits::default());
        let app = Router::new()
            .route("/slow", get(slow))
            .route("/json", get(json))
            .route("/big", get(big))
            .route("/cookie", get(cookie))
            .route("/redirect", get(redirect))
            .route("/attachment", get(attachment))
            .route("/{file}", get(file))
            .with_state(hits.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Fixtures { addr, hits, task }
    }

    /// The URL of a fixture path, e.g. `url("login.html")`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}/{path}", self.addr)
    }

    /// How many times `/slow` has been requested.
    pub fn slow_hits(&self) -> u32 {
        self.hits.slow.load(Ordering::SeqCst)
    }

    /// How many times `/json` has been requested.
    pub fn json_hits(&self) -> u32 {
        self.hits.json.load(Ordering::SeqCst)
    }
}

impl Drop for Fixtures {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn slow(State(hits): State<Arc<Hits>>, Query(query): Query<SlowQuery>) -> Html<String> {
    hits.slow.fetch_add(1, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(query.ms.min(120_000))).await;
    Html("<!doctype html><title>Slow page</title><h1>Finally here</h1>".into())
}

#[derive(serde::Deserialize)]
struct JsonQuery {
    n: u32,
}

/// The body `/json?n=N` answers with: small, valid JSON, with non-ASCII text so that a body read
/// back exactly proves it was decoded as UTF-8.
pub fn json_body(n: u32) -> String {
    format!(r#"{{"n":{n},"name":"item {n}","tags":["alpha","beta"],"note":"café ✓"}}"#)
}

async fn json(State(hits): State<Arc<Hits>>, Query(query): Query<JsonQuery>) -> Response {
    hits.json.fetch_add(1, Ordering::SeqCst);
    (
        [(header::CONTENT_TYPE, "application/json")],
        json_body(query.n),
    )
        .into_response()
}

#[derive(serde::Deserialize)]
struct BigQuery {
    kb: u32,
}

#[derive(serde::Deserialize)]
struct AttachmentQuery {
    name: String,
    kb: u32,
}

async fn attachment(Query(query): Query<AttachmentQuery>) -> Response {
    // A name of letters, digits, dots and dashes only: no header to escape.
    let name: String = query
        .name
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
        .collect();
    (
        [
            (header::CONTENT_TYPE, "text/csv".to_owned()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"{name}\""),
            ),
        ],
        big_body(query.kb.min(10 * 1024)),
    )
        .into_response()
}

/// The body `/big?kb=N` answers with: exactly `kb` KiB of numbered ASCII lines, so any prefix
/// of it can be recognised.
pub fn big_body(kb: u32) -> String {
    let length = kb as usize * 1024;
    let mut body = String::with_capacity(length + 64);
    let mut line = 0;
    while body.len() < length {
        line += 1;
        body.push_str(&format!(
            "line {line:06}: the quick brown fox jumps over the lazy dog\n"
        ));
    }
    body.truncate(length);
    body
}

async fn big(Query(query): Query<BigQuery>) -> Response {
    (
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        big_body(query.kb.min(64 * 1024)),
    )
        .into_response()
}

#[derive(serde::Deserialize)]
struct CookieQuery {
    name: String,
    value: String,
}

#[derive(serde::Deserialize)]
struct RedirectQuery {
    to: String,
}

/// `/redirect?to=URL`: a 302 to `URL` (a loopback one only).
async fn redirect(Query(query): Query<RedirectQuery>) -> Response {
    let loopback = ["http://127.0.0.1:", "http://localhost:"]
        .iter()
        .any(|prefix| query.to.starts_with(prefix));
    if !loopback {
        return StatusCode::BAD_REQUEST.into_response();
    }
    (
        StatusCode::FOUND,
        [(axum::http::header::LOCATION, query.to)],
    )
        .into_response()
}

async fn cookie(Query(query): Query<CookieQuery>) -> Response {
    let plain = |text: &str| {
        !text.is_empty()
            && text
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    };
    if !plain(&query.name) || !plain(&query.value) {
        return StatusCode::BAD_REQUEST.into_response();
    }
    let set = format!(
        "{}={}; Path=/; HttpOnly; SameSite=Lax",
        query.name, query.value
    );
    (
        [
            (header::SET_COOKIE, set),
            (header::CONTENT_TYPE, "text/plain".to_owned()),
        ],
        "cookie set",
    )
        .into_response()
}

async fn file(Path(name): Path<String>) -> Response {
    let valid = !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    let path = repo_root().join("tests/fixtures").join(&name);
    match (valid, std::fs::read(&path)) {
        (true, Ok(body)) => {
            let kind = if name.ends_with(".html") {
                "text/html; charset=utf-8"
            } else if name.ends_with(".js") {
                "text/javascript"
            } else {
                "application/octet-stream"
            };
            ([(header::CONTENT_TYPE, kind)], body).into_response()
        }
        _ => StatusCode::NOT_FOUND.into_response(),
    }
}
