//! Real saved web pages for the benchmark: news, magazine and blog articles saved in 2019–2020,
//! from the test cache (`tests/cache/`) of the source distribution of `trafilatura` 0.9.0 on
//! PyPI (the last versions that ship it).
//!
//! The package is GPL-3.0-or-later and the pages themselves belong to their publishers, so they
//! are not committed: the first run downloads the sdist with `pip download` (the ordinary
//! client) into the git-ignored `target/bench-corpus/`, as the peer module installs
//! playwright-mcp, and later runs reuse it.
//!
//! The pages are served from memory by a loopback server of their own, made offline and
//! deterministic: every `<script>` element is removed (saved pages' scripts load trackers and
//! ads from the network, and the rest would run against a page they were not written for), and
//! a Content-Security-Policy `<meta>` restricts every other load (stylesheets, images, fonts,
//! frames) to the server itself, which answers 404 for what it does not hold. Bytes are served
//! as saved, with no charset in the header, so the page's own `<meta charset>` decides.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use axum::Router;
use axum::extract::{Path as UrlPath, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use tokio::process::Command;

use super::server::Server;
use super::stats::{Outcome, SnapshotFigures, time_calls};
use crate::artifacts::repo_root;

/// The PyPI package whose sdist holds the pages.
pub const PACKAGE: &str = "trafilatura";
/// Its version (later ones no longer ship `tests/cache/`).
pub const VERSION: &str = "0.9.0";
/// Its licence, for the report.
pub const LICENCE: &str = "GPL-3.0-or-later; pages © their publishers";
/// The pages measured: the eleven largest of the cache, then five smaller ones of different
/// sites and layouts.
pub const PAGES: [&str; 16] = [
    "faz.net.streaming.html",
    "theguardian.com.academics.html",
    "modepilot.de.duschkopf.html",
    "correctiv.org.zusage.html",
    "chineselyrics4u.com.zhineng.html",
    "scmp.com.playbook.html",
    "spektrum.de.engelbart.html",
    "reuters.com.parasite.html",
    "vice.com.amazon.html",
    "meedia.de.freenet.html",
    "vancouversun.com.microsoft.html",
    "theverge.com.ios13.html",
    "heise.de.lithium.html",
    "dw.com.colonial.html",
    "computerbase.de.htc.html",
    "die-partei.net.luebeck.html",
];

/// What every page gets at the start of its `<head>`: loads only from the server itself.
const OFFLINE_POLICY: &[u8] = b"<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'self' 'unsafe-inline' data:\">";

/// Where the sdist and the extracted pages are kept.
pub fn cache_dir() -> PathBuf {
    repo_root().join("target").join("bench-corpus")
}

/// One page as served.
#[derive(Debug, Clone)]
pub struct Page {
    /// Its file name in the cache, also its path on the server.
    pub name: &'static str,
    /// Size as saved.
    pub saved_bytes: usize,
    /// The HTML served (scripts removed, offline policy added).
    pub html: Vec<u8>,
}

/// The pages, downloaded and extracted if needed, made offline.
pub async fn load() -> Result<Vec<Page>> {
    let dir = cache_dir();
    let root = dir.join(format!("{PACKAGE}-{VERSION}"));
    let missing: Vec<&str> = PAGES
        .iter()
        .copied()
        .filter(|name| !page_path(&root, name).exists())
        .collect();
    if !missing.is_empty() {
        let sdist = download(&dir).await?;
        let mut tar = Command::new("tar");
        tar.arg("xzf").arg(&sdist).arg("-C").arg(&dir);
        for name in &missing {
            tar.arg(format!("{PACKAGE}-{VERSION}/tests/cache/{name}"));
        }
        let status = tar.status().await.context("cannot run tar")?;
        if !status.success() {
            bail!(
                "tar could not extract the pages from {} ({status})",
                sdist.display()
            );
        }
    }
    PAGES
        .iter()
        .map(|&name| {
            let path = page_path(&root, name);
            let saved = std::fs::read(&path).with_context(|| format!("read {}", path.display()))?;
            Ok(Page {
                name,
                saved_bytes: saved.len(),
                html: offline(&saved),
            })
        })
        .collect()
}

fn page_path(root: &Path, name: &str) -> PathBuf {
    root.join("tests").join("cache").join(name)
}

/// The sdist in `dir`, downloaded with pip unless it is there already.
async fn download(dir: &Path) -> Result<PathBuf> {
    let sdist = dir.join(format!("{PACKAGE}-{VERSION}.tar.gz"));
    if sdist.exists() {
        return Ok(sdist);
    }
    eprintln!("bench: downloading {PACKAGE}=={VERSION} (sdist) into target/bench-corpus/ …");
    std::fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
    let status = Command::new("python3")
        .args([
            "-m",
            "pip",
            "download",
            "--quiet",
            "--no-deps",
            "--no-binary",
            ":all:",
        ])
        .arg("--dest")
        .arg(dir)
        .arg(format!("{PACKAGE}=={VERSION}"))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .kill_on_drop(true)
        .status()
        .await
        .context("cannot run python3 -m pip (pip is needed for the corpus)")?;
    if !status.success() || !sdist.exists() {
        bail!("pip download {PACKAGE}=={VERSION} failed ({status})");
    }
    Ok(sdist)
}

/// `html` with every `<script>` element removed and [`OFFLINE_POLICY`] added at the start of
/// its `<head>` (or of the document when it has no `<head>` tag).
pub fn offline(html: &[u8]) -> Vec<u8> {
    let stripped = strip_scripts(html);
    let at = find_tag(&stripped, b"<head", 0)
        .and_then(|start| {
            stripped[start..]
                .iter()
                .position(|&b| b == b'>')
                .map(|end| start + end + 1)
        })
        .unwrap_or(0);
    let mut out = Vec::with_capacity(stripped.len() + OFFLINE_POLICY.len());
    out.extend_from_slice(&stripped[..at]);
    out.extend_from_slice(OFFLINE_POLICY);
    out.extend_from_slice(&stripped[at..]);
    out
}

/// `html` without its `<script …>…</script>` elements (an unclosed one runs to the end, as the
/// HTML parser reads it).
pub fn strip_scripts(html: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(html.len());
    let mut from = 0;
    while let Some(open) = find_tag(html, b"<script", from) {
        out.extend_from_slice(&html[from..open]);
        from = match find_tag(html, b"</script", open) {
            Some(close) => html[close..]
                .iter()
                .position(|&b| b == b'>')
                .map_or(html.len(), |end| close + end + 1),
            None => html.len(),
        };
    }
    out.extend_from_slice(&html[from..]);
    out
}

/// The first `tag` (ASCII case-insensitive, e.g. `<script`) at or after `from` that is a whole
/// tag name: followed by whitespace, `>` or `/` (so `<scripts` and `<header` do not count).
fn find_tag(html: &[u8], tag: &[u8], from: usize) -> Option<usize> {
    let mut at = from;
    while at + tag.len() <= html.len() {
        let found = html[at..]
            .windows(tag.len())
            .position(|window| window.eq_ignore_ascii_case(tag))?;
        let start = at + found;
        let end = start + tag.len();
        match html.get(end) {
            None => return Some(start),
            Some(b) if b.is_ascii_whitespace() || matches!(b, b'>' | b'/') => return Some(start),
            _ => at = start + 1,
        }
    }
    None
}

/// The loopback server the pages are read from; stops when dropped.
pub struct CorpusServer {
    /// Where it listens.
    pub addr: SocketAddr,
    /// The pages, in [`PAGES`] order.
    pub pages: Vec<(&'static str, usize)>,
    task: tokio::task::JoinHandle<()>,
}

impl CorpusServer {
    /// Serves `pages` by name.
    pub async fn serve(pages: Vec<Page>) -> Result<CorpusServer> {
        let list = pages
            .iter()
            .map(|page| (page.name, page.saved_bytes))
            .collect();
        let by_name: HashMap<String, Vec<u8>> = pages
            .into_iter()
            .map(|page| (page.name.to_owned(), page.html))
            .collect();
        let app = Router::new()
            .route("/{name}", get(serve_page))
            .with_state(Arc::new(by_name));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .context("bind the corpus server")?;
        let addr = listener.local_addr()?;
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(CorpusServer {
            addr,
            pages: list,
            task,
        })
    }

    /// The URL of a page.
    pub fn url(&self, name: &str) -> String {
        format!("http://{}/{name}", self.addr)
    }
}

impl Drop for CorpusServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve_page(
    State(pages): State<Arc<HashMap<String, Vec<u8>>>>,
    UrlPath(name): UrlPath<String>,
) -> Response {
    match pages.get(&name) {
        Some(html) => ([(header::CONTENT_TYPE, "text/html")], html.clone()).into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

/// One page's default snapshot on one server.
#[derive(Debug, Clone)]
pub struct CorpusPage {
    /// The page.
    pub name: &'static str,
    /// Its size as saved.
    pub saved_bytes: usize,
    /// Size and latency of the default snapshot.
    pub snapshot: Outcome<SnapshotFigures>,
}

/// The corpus on one server.
#[derive(Debug, Clone)]
pub struct CorpusFigures {
    /// One entry per served page.
    pub pages: Vec<CorpusPage>,
}

/// The default snapshot of every page: navigate, one warm-up call, `rounds` timed ones.
pub async fn measure(server: &Server, corpus: &CorpusServer, rounds: usize) -> CorpusFigures {
    let mut pages = Vec::with_capacity(corpus.pages.len());
    for &(name, saved_bytes) in &corpus.pages {
        eprintln!("bench: {} corpus {name} …", server.kind().name());
        let snapshot = async {
            server.navigate(&corpus.url(name)).await?;
            time_calls(rounds, || server.snapshot()).await
        }
        .await
        .map(|(figures, _)| figures)
        .map_err(|error| format!("{error:#}").replace('\n', " "));
        pages.push(CorpusPage {
            name,
            saved_bytes,
            snapshot,
        });
    }
    CorpusFigures { pages }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(bytes: Vec<u8>) -> String {
        String::from_utf8(bytes).unwrap()
    }

    #[test]
    fn scripts_are_removed_whatever_their_case_and_attributes() {
        let html = b"<p>a</p><SCRIPT src=\"x.js\"></script ><p>b</p><script>if (a<b) x('</p>');</Script><p>c</p>";
        assert_eq!(text(strip_scripts(html)), "<p>a</p><p>b</p><p>c</p>");
    }

    #[test]
    fn only_whole_script_tags_are_removed() {
        let html = b"<scripts>keep</scripts><noscript>kept</noscript><p>script</p>";
        assert_eq!(text(strip_scripts(html)), String::from_utf8_lossy(html));
    }

    #[test]
    fn an_unclosed_script_runs_to_the_end() {
        assert_eq!(text(strip_scripts(b"<p>a</p><script>var x")), "<p>a</p>");
        assert_eq!(text(strip_scripts(b"<p>a</p><script")), "<p>a</p>");
    }

    #[test]
    fn the_policy_goes_into_the_head_or_first() {
        let html = b"<!doctype html><html><HEAD lang=de><title>t</title><header>h</header>";
        let out = text(offline(html));
        let policy = String::from_utf8_lossy(OFFLINE_POLICY);
        assert_eq!(
            out,
            format!(
                "<!doctype html><html><HEAD lang=de>{policy}<title>t</title><header>h</header>"
            )
        );
        let out = text(offline(b"<header>h</header><p>x</p>"));
        assert_eq!(out, format!("{policy}<header>h</header><p>x</p>"));
    }

    #[test]
    fn bytes_that_are_not_utf8_pass_through() {
        let html = b"<p>Gr\xfc\xdfe</p><script>x</script>";
        assert_eq!(strip_scripts(html), b"<p>Gr\xfc\xdfe</p>".to_vec());
    }

    #[test]
    fn the_page_list_has_no_duplicates() {
        let mut names = PAGES.to_vec();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), PAGES.len());
    }
}
