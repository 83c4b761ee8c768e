//! What is measured, per screen and server: the element list (its characters and whether every
//! actionable element is in it), a tap with its observation (adb invocations, time), and the
//! time of each call beside the time adb itself ran during it.
//!
//! adb's time comes from the fake's `calls.log`: every invocation records when its process
//! started and ended. A call's own time is its round trip minus the union of the intervals of
//! the adb invocations addressed to the phone (`-s SERIAL`) that ran within it; the backend's
//! device polling (`adb devices -l`, no serial) is left out of both. The time to start each
//! adb process, before its first instruction, counts as the server's: real adb pays it too.

use std::time::Duration;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use tokio::process::Command;

use super::peer::{MobileMcp, element_rects};
use super::screens::{Actionable, SCREENS, actionable, missing};
use super::{Options, Server};
use crate::artifacts::artifacts;
use crate::bench::session::{Exchange, Session};
use crate::device::{Android, PIXEL_ID, Phone, Phones};
use crate::fake_adb::scenario::{CallKind, CallRecord, now_us};
use crate::hub::Hub;

/// The phone both servers drive.
pub const SERIAL: &str = "emulator-5554";

/// One timed call (or pair of calls) and what adb did meanwhile.
#[derive(Debug, Clone, Copy, Default)]
pub struct Sample {
    /// Start, microseconds since the epoch.
    pub start_us: u64,
    /// End.
    pub end_us: u64,
    /// adb invocations addressed to the phone within it (filled in afterwards).
    pub invocations: usize,
    /// Microseconds during which at least one of them ran.
    pub adb_us: u64,
}

impl Sample {
    /// The round trip.
    pub fn total(&self) -> Duration {
        Duration::from_micros(self.end_us - self.start_us)
    }

    /// adb's share.
    pub fn adb(&self) -> Duration {
        Duration::from_micros(self.adb_us)
    }

    /// The server's own share: the round trip without adb's.
    pub fn own(&self) -> Duration {
        self.total().saturating_sub(self.adb())
    }
}

/// One screen's figures for one server.
#[derive(Debug, Clone, Default)]
pub struct ScreenFigures {
    /// The fixture.
    pub screen: &'static str,
    /// Actionable elements in it.
    pub actionable: usize,
    /// Characters of the element list's text (what the model reads).
    pub chars: usize,
    /// Actionable elements the list does not reach.
    pub missing: Vec<String>,
    /// The element list, timed.
    pub snapshots: Vec<Sample>,
    /// A tap with its observation, timed; empty when the tapped element was not listed.
    pub taps: Vec<Sample>,
    /// The element list's text, for the report's appendix.
    pub text: String,
}

/// One server's run.
#[derive(Debug, Clone)]
pub struct ServerFigures {
    /// Which.
    pub server: Server,
    /// How it was set up.
    pub note: String,
    /// Per screen, in [`SCREENS`] order.
    pub screens: Vec<ScreenFigures>,
}

/// The element tapped on a screen: the first clickable one that is not a text field (which
/// would bring the keyboard up) or a scrolling container.
pub fn tap_target(elements: &[Actionable], xml: &str) -> Option<Actionable> {
    let nodes = crate::fake_adb::hierarchy::nodes(xml);
    elements
        .iter()
        .find(|element| {
            nodes.iter().any(|node| {
                node.bounds().is_some_and(|b| b == element.rect)
                    && node.flag("clickable")
                    && !node.flag("scrollable")
                    && !node.get("class").ends_with("EditText")
            })
        })
        .cloned()
}

/// Fills in each sample's adb invocations and time from the calls log.
pub fn attribute(samples: &mut [Sample], calls: &[CallRecord]) {
    for sample in samples {
        let mut spans: Vec<(u64, u64)> = calls
            .iter()
            .filter(|c| c.kind == CallKind::Adb && c.serial.as_deref() == Some(SERIAL))
            .filter_map(|c| Some((c.start_us, c.end_us?)))
            .filter(|&(start, end)| start >= sample.start_us && end <= sample.end_us)
            .collect();
        sample.invocations = spans.len();
        spans.sort();
        let (mut covered, mut reach) = (0, 0);
        for (start, end) in spans {
            let start = start.max(reach);
            if end > start {
                covered += end - start;
            }
            reach = reach.max(end);
        }
        sample.adb_us = covered;
    }
}

async fn timed(session: &Session, tool: &str, args: Value) -> Result<(Exchange, Sample)> {
    let start_us = now_us();
    let exchange = session.call(tool, args).await?;
    let end_us = now_us();
    if exchange.is_error {
        bail!(
            "{tool} failed: {}",
            crate::bench::session::clip(&exchange.text)
        );
    }
    Ok((
        exchange,
        Sample {
            start_us,
            end_us,
            ..Sample::default()
        },
    ))
}

/// A scenario with the phone, showing the first screen, with no transitions: a tap leaves the
/// screen as it is, so every round measures the same thing.
pub fn phones() -> Phones {
    let phones = Phones::new();
    phones.attach(Phone::pixel(SERIAL).showing(SCREENS[0]));
    phones
}

fn screen_elements(phones: &Phones, screen: &str) -> Result<(String, Vec<Actionable>)> {
    let xml = phones
        .dir()
        .screen_xml(screen)
        .with_context(|| format!("no screen {screen}"))?;
    let [w, h] = phones.dir().config(SERIAL).screen_size();
    let elements = actionable(&xml, i64::from(w), i64::from(h));
    Ok((xml, elements))
}

/// tabwire: a local hub, the backend paired by itself, a metered session through the shim.
pub async fn tabwire(phones: &Phones, options: &Options) -> Result<ServerFigures> {
    let (hub, _android) = tokio::task::block_in_place(|| {
        let hub = Hub::spawn();
        let android = Android::local(&hub, phones, &[]);
        (hub, android)
    });
    let mut command = Command::new(&artifacts().shim);
    command.arg("--socket").arg(&hub.socket);
    let session = Session::start("tabwire-mcp", command).await?;
    tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let reply = session.call("list_devices", json!({})).await?;
            let connected = reply.data()?["devices"].as_array().is_some_and(|all| {
                all.iter()
                    .any(|d| d["deviceId"] == PIXEL_ID && d["connected"] == true)
            });
            if connected {
                return anyhow::Ok(());
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    })
    .await
    .context("the phone did not connect within 30 s")??;
    let mut screens = Vec::new();
    for &screen in SCREENS {
        phones.show(SERIAL, screen);
        let (xml, elements) = screen_elements(phones, screen)?;
        let mut figures = ScreenFigures {
            screen,
            actionable: elements.len(),
            ..ScreenFigures::default()
        };
        session.call("device_snapshot", json!({})).await?;
        let mut last = None;
        for _ in 0..options.rounds {
            let (exchange, sample) = timed(&session, "device_snapshot", json!({})).await?;
            figures.snapshots.push(sample);
            last = Some(exchange);
        }
        let last = last.expect("at least one round");
        let nodes = last.data()?["nodes"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let rect = |node: &Value| -> [i64; 4] {
            let b = &node["bounds"];
            ["left", "top", "right", "bottom"].map(|k| b[k].as_i64().unwrap_or(0))
        };
        let entries: Vec<[i64; 4]> = nodes.iter().map(rect).collect();
        figures.missing = missing(&elements, &entries)
            .iter()
            .map(|e| e.label.clone())
            .collect();
        figures.chars = last.text_chars();
        figures.text = last.text.clone();
        if let Some(target) = tap_target(&elements, &xml) {
            let node = nodes.iter().find(|node| {
                let [l, t, r, b] = rect(node);
                let [tl, tt, tr, tb] = target.rect;
                l >= tl && t >= tt && r <= tr && b <= tb && r > l && b > t
            });
            if let Some(node_ref) = node.and_then(|n| n["ref"].as_str()) {
                let args = json!({"ref": node_ref});
                // The first action after a look also reads the app in front.
                timed(&session, "device_tap", args.clone()).await?;
                for _ in 0..options.rounds {
                    let (_, sample) = timed(&session, "device_tap", args.clone()).await?;
                    figures.taps.push(sample);
                }
            }
        }
        screens.push(figures);
    }
    session.close().await;
    let calls = phones.calls();
    for figures in &mut screens {
        attribute(&mut figures.snapshots, &calls);
        attribute(&mut figures.taps, &calls);
    }
    Ok(ServerFigures {
        server: Server::Tabwire,
        note: "hub + tabwire-android (local mode, paired) through tabwire-mcp; device_snapshot \
               with its defaults; device_tap with its default observation"
            .into(),
        screens,
    })
}

/// mobile-mcp with its legacy adb robot.
pub async fn mobile_mcp(phones: &Phones, options: &Options) -> Result<ServerFigures> {
    let peer = MobileMcp::start(phones).await?;
    let session = &peer.session;
    let device = json!({"device": SERIAL});
    let devices = session
        .call("mobile_list_available_devices", json!({}))
        .await?;
    if !devices.text.contains(SERIAL) {
        bail!("mobile-mcp does not list the phone: {}", devices.text);
    }
    let mut screens = Vec::new();
    for &screen in SCREENS {
        phones.show(SERIAL, screen);
        let (xml, elements) = screen_elements(phones, screen)?;
        let mut figures = ScreenFigures {
            screen,
            actionable: elements.len(),
            ..ScreenFigures::default()
        };
        session
            .call("mobile_list_elements_on_screen", device.clone())
            .await?;
        let mut last = None;
        for _ in 0..options.rounds {
            let (exchange, sample) =
                timed(session, "mobile_list_elements_on_screen", device.clone()).await?;
            figures.snapshots.push(sample);
            last = Some(exchange);
        }
        let last = last.expect("at least one round");
        let entries = element_rects(&last.text);
        figures.missing = missing(&elements, &entries)
            .iter()
            .map(|e| e.label.clone())
            .collect();
        figures.chars = last.text_chars();
        figures.text = last.text.clone();
        if let Some(target) = tap_target(&elements, &xml) {
            let reached = missing(std::slice::from_ref(&target), &entries).is_empty();
            if reached {
                let [l, t, r, b] = target.rect;
                let click = json!({"device": SERIAL, "x": (l + r) / 2, "y": (t + b) / 2});
                for round in 0..=options.rounds {
                    let (_, clicked) = timed(
                        session,
                        "mobile_click_on_screen_at_coordinates",
                        click.clone(),
                    )
                    .await?;
                    let (_, listed) =
                        timed(session, "mobile_list_elements_on_screen", device.clone()).await?;
                    if round > 0 {
                        figures.taps.push(Sample {
                            start_us: clicked.start_us,
                            end_us: listed.end_us,
                            ..Sample::default()
                        });
                    }
                }
            }
        }
        screens.push(figures);
    }
    let note = peer.setup_note();
    peer.session.close().await;
    let calls = phones.calls();
    for figures in &mut screens {
        attribute(&mut figures.snapshots, &calls);
        attribute(&mut figures.taps, &calls);
    }
    Ok(ServerFigures {
        server: Server::MobileMcp,
        note: format!(
            "{note}; MOBILEMCP_LEGACY_ROBOT=1, ANDROID_HOME/platform-tools/adb = the fake adb; \
             mobile_list_elements_on_screen (text format); a tap with observation is \
             mobile_click_on_screen_at_coordinates then mobile_list_elements_on_screen"
        ),
        screens,
    })
}
