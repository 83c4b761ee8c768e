//! The floor under a click on the big pages: the same click as the click step, sent straight
//! through Chromium's DevTools protocol with nothing around it (no checks, no pause for the
//! hover, no observation), on the page the steps left loaded in tabwire's browser. What it
//! takes is the browser's own time for the click, which any tool pays.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::json;

use super::tabwire::Tabwire;
use crate::browser::DevToolsPage;

/// `rounds` timed clicks after one warm-up, alternating between the buttons of the two `rows`
/// as the click step does, each brought to the middle of the view first (untimed); timed: the
/// move, the press, the release, and reading the status line, which must name the row.
pub async fn bare_click(tabwire: &Tabwire, rows: [u32; 2], rounds: usize) -> Result<Vec<Duration>> {
    let page = tabwire.browser().page_ws("rows.html").await;
    let mut devtools = DevToolsPage::connect(&page).await?;
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
