//! The floor under a click on the big pages: the same click as the click step, sent straight
//! through Chromium's DevTools protocol with nothing around it (no checks, no pause for the
//! hover, no observation), on the page the steps left loaded in tabwire's browser. What it
//! takes is the browser's own time for the click, which any tool pays.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

use super::tabwire::Tabwire;

/// One DevTools session on a page, commands answered in turn.
struct DevTools {
    socket: tokio_tungstenite::WebSocketStream<
        tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>,
    >,
    next: u64,
}

impl DevTools {
    async fn connect(page_ws: &str) -> Result<DevTools> {
        let (socket, _) = tokio_tungstenite::connect_async(page_ws)
            .await
            .context("connecting to the page's DevTools socket")?;
        Ok(DevTools { socket, next: 0 })
    }

    /// Sends `method` and waits for its answer (events meanwhile are skipped).
    async fn call(&mut self, method: &str, params: Value) -> Result<Value> {
        self.next += 1;
        let id = self.next;
        let call = json!({"id": id, "method": method, "params": params});
        self.socket
            .send(Message::Text(call.to_string().into()))
            .await?;
        while let Some(message) = self.socket.next().await {
            let Ok(text) = message?.into_text() else {
                continue;
            };
            let reply: Value = serde_json::from_str(&text)?;
            if reply["id"] == id {
                if let Some(error) = reply.get("error") {
                    bail!("{method}: {error}");
                }
                return Ok(reply["result"].clone());
            }
        }
        bail!("DevTools closed before answering {method}")
    }

    /// The value of `expression` in the page's own world.
    async fn evaluate(&mut self, expression: &str) -> Result<Value> {
        let result = self
            .call(
                "Runtime.evaluate",
                json!({"expression": expression, "returnByValue": true}),
            )
            .await?;
        Ok(result["result"]["value"].clone())
    }
}

/// `rounds` timed clicks after one warm-up, alternating between the buttons of the two `rows`
/// as the click step does, each brought to the middle of the view first (untimed); timed: the
/// move, the press, the release, and reading the status line, which must name the row.
pub async fn bare_click(tabwire: &Tabwire, rows: [u32; 2], rounds: usize) -> Result<Vec<Duration>> {
    let page = tabwire.browser().page_ws("rows.html").await;
    let mut devtools = DevTools::connect(&page).await?;
    let mut samples = Vec::with_capacity(rounds);
    for round in 0..=rounds {
        let row = rows[round % 2];
        let centre = devtools
            .evaluate(&format!(
                "(() => {{ const button = document.querySelector('button[data-row=\"{row}\"]'); \
                 button.scrollIntoView({{block: 'center'}}); const box = \
                 button.getBoundingClientRect(); return [box.x + box.width / 2, box.y + \
                 box.height / 2]; }})()"
            ))
            .await?;
        let (x, y) = (
            centre[0].as_f64().context("the button's centre")?,
            centre[1].as_f64().context("the button's centre")?,
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
        let started = Instant::now();
        for (kind, button, buttons) in [
            ("mouseMoved", "none", 0),
            ("mousePressed", "left", 1),
            ("mouseReleased", "left", 0),
        ] {
            let event = json!({"type": kind, "x": x, "y": y, "button": button,
                "buttons": buttons, "clickCount": u8::from(kind != "mouseMoved")});
            devtools.call("Input.dispatchMouseEvent", event).await?;
        }
        let status = devtools
            .evaluate("document.getElementById('status').textContent")
            .await?;
        let elapsed = started.elapsed();
        if status.as_str() != Some(format!("Selected entry {row}").as_str()) {
            bail!("the bare click on row {row} did not land: the status line says {status}");
        }
        // The first round is a warm-up, as in the steps.
        if round > 0 {
            samples.push(elapsed);
        }
    }
    Ok(samples)
}
