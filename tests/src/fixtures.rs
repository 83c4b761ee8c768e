//! The fixture web server: serves `tests/fixtures/` on loopback, plus `/slow?ms=N`, a page that
//! takes N milliseconds to arrive (for requests that must still be running when something
//! breaks). It counts how often `/slow` was requested, which proves nothing was replayed.

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
    slow_hits: Arc<AtomicU32>,
    task: tokio::task::JoinHandle<()>,
}

#[derive(serde::Deserialize)]
struct SlowQuery {
    ms: u64,
}

impl Fixtures {
    /// Starts the server on a free loopback port.
    pub async fn serve() -> Fixtures {
        let slow_hits = Arc::new(AtomicU32::new(0));
        let app = Router::new()
            .route("/slow", get(slow))
            .route("/{file}", get(file))
            .with_state(slow_hits.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Fixtures {
            addr,
            slow_hits,
            task,
        }
    }

    /// The URL of a fixture path, e.g. `url("login.html")`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}/{path}", self.addr)
    }

    /// How many times `/slow` has been requested.
    pub fn slow_hits(&self) -> u32 {
        self.slow_hits.load(Ordering::SeqCst)
    }
}

impl Drop for Fixtures {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn slow(State(hits): State<Arc<AtomicU32>>, Query(query): Query<SlowQuery>) -> Html<String> {
    hits.fetch_add(1, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(query.ms.min(120_000))).await;
    Html("<!doctype html><title>Slow page</title><h1>Finally here</h1>".into())
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
