//! The iOS side by side: tabwire (hub, `tabwire-ios`, `tabwire-mcp`) and mobile-mcp's iOS robot
//! driving the same scripted WebDriverAgent (`tabwire_ios::scripted`) over the same real
//! XCUITest page sources (devices/ios/testdata/), one screen at a time.
//!
//! mobile-mcp finds iPhones with go-ios (`GO_IOS_PATH`), here a small script that lists one
//! device on iOS 16 (17 and later would want go-ios's tunnel), and reaches its WDA on
//! `localhost:8100`, where the scripted WDA listens for it (the port must be free). Its element
//! list is `mobile_list_elements_on_screen`, which reads `/source?format=json`; its tap is
//! `mobile_click_on_screen_at_coordinates`.
//!
//! What an element list must reach is decided here, from the source, not by either server:
//! every control on the screen that is shown, enabled, and a button, field, switch, slider,
//! link or table row, or a childless `Other` with a label (React Native's touchables). A list
//! reaches one when one of its entries lies inside it.

use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use tabwire_ios::scripted::{Recorded, Script, ScriptScreen, ScriptedWda, sources};
use tokio::process::Command;

use super::peer::{element_rects, ensure_installed, package_dir};
use crate::artifacts::artifacts;
use crate::bench::session::Session;
use crate::hub::Hub;
use crate::ios::{IPHONE_ID, Ios};
use crate::scratch::Scratch;

/// The screens, by their test data's names.
pub const SCREENS: &[(&str, &str)] = &[
    ("settings-zh-list", sources::SETTINGS_ZH),
    ("theapp-login", sources::THEAPP_LOGIN),
    ("registration-statusbar", sources::REGISTRATION),
    ("settings-top-en", sources::SETTINGS_EN),
    ("calendar-day-ja", sources::CALENDAR_JA),
];

/// The UDID the fake go-ios lists.
const UDID: &str = "00008110-001A2B3C4D5E801E";

/// One screen's figures for one server.
#[derive(Debug, Clone, Default)]
pub struct IosScreen {
    /// Characters of the element list the model reads.
    pub chars: usize,
    /// Actionable elements on the screen, and those the list does not reach.
    pub actionable: usize,
    /// Labels of the ones not reached.
    pub missing: Vec<String>,
    /// WDA requests of a tap with its observation (tabwire: `device_tap`; mobile-mcp: its click
    /// and its element list), when a tap was made.
    pub tap_calls: Option<usize>,
    /// Milliseconds of that tap with its observation.
    pub tap_ms: Option<f64>,
}

/// A control an element list should reach.
#[derive(Debug, Clone)]
struct Control {
    label: String,
    rect: [i64; 4],
    kind: String,
    /// Whether it has a label of its own (what a scripted tap is matched by).
    labelled: bool,
}

/// `xml` with one more line of text: the screen a tap leads to, so that the tap's observation
/// sees a change (as a real app's would) and measures one look, not the extra one a screen
/// that did not change gets.
fn after_tap(xml: &str) -> String {
    const TAPPED: &str = r#"<XCUIElementTypeStaticText type="XCUIElementTypeStaticText" value="Tapped" name="Tapped" label="Tapped" enabled="true" visible="true" accessible="true" x="10" y="100" width="80" height="20"/>"#;
    match xml.find("</XCUIElementTypeWindow>") {
        Some(at) => format!("{}{TAPPED}{}", &xml[..at], &xml[at..]),
        None => xml.to_owned(),
    }
}

fn script() -> Script {
    let mut screens = std::collections::BTreeMap::new();
    for (name, xml) in SCREENS {
        let mut screen = ScriptScreen::new("com.example.bench", *xml);
        if let Some(target) = tap_target(&controls(xml)) {
            screen = screen.tap(&target.label, &format!("{name}-tapped"));
        }
        screens.insert((*name).to_owned(), screen);
        screens.insert(
            format!("{name}-tapped"),
            ScriptScreen::new("com.example.bench", after_tap(xml)),
        );
    }
    Script {
        screens,
        start: SCREENS[0].0.into(),
        apps: Default::default(),
        uuid: "8C2E5B7A-1D34-4F6B-9A0E-3B5C7D9E1F20".into(),
        size: (414, 896),
    }
}

/// The controls of a source, decided from its XML alone.
fn controls(xml: &str) -> Vec<Control> {
    let Ok(doc) = roxmltree::Document::parse(xml) else {
        return Vec::new();
    };
    let app = doc
        .descendants()
        .find(|n| n.tag_name().name() == "XCUIElementTypeApplication");
    let number = |n: &roxmltree::Node, a: &str| -> i64 {
        n.attribute(a)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
            .round() as i64
    };
    let (width, height) = app.map_or((414, 896), |a| (number(&a, "width"), number(&a, "height")));
    doc.descendants()
        .filter_map(|n| {
            let kind = n.tag_name().name().strip_prefix("XCUIElementType")?;
            // The status bar and the keyboard's keys are not the app's controls.
            if n.ancestors().any(|a| {
                matches!(
                    a.tag_name().name(),
                    "XCUIElementTypeStatusBar" | "XCUIElementTypeKeyboard"
                )
            }) {
                return None;
            }
            let label = n.attribute("label").unwrap_or("").trim();
            let leaf_other = kind == "Other"
                && !label.is_empty()
                && n.children().all(|c| !c.is_element())
                && n.attribute("accessible") != Some("false");
            let control = matches!(
                kind,
                "Button"
                    | "TextField"
                    | "SecureTextField"
                    | "SearchField"
                    | "TextView"
                    | "Switch"
                    | "Slider"
                    | "Link"
                    | "Cell"
            ) || leaf_other;
            if !control
                || n.attribute("visible") == Some("false")
                || n.attribute("enabled") == Some("false")
            {
                return None;
            }
            let (x, y) = (number(&n, "x"), number(&n, "y"));
            let (w, h) = (number(&n, "width"), number(&n, "height"));
            let rect = [x.max(0), y.max(0), (x + w).min(width), (y + h).min(height)];
            (rect[2] > rect[0] && rect[3] > rect[1]).then(|| Control {
                label: if label.is_empty() {
                    n.attribute("name").unwrap_or(kind).to_owned()
                } else {
                    label.to_owned()
                },
                rect,
                kind: kind.to_owned(),
                labelled: !label.is_empty(),
            })
        })
        .collect()
}

/// The controls no entry lies inside.
fn missing(controls: &[Control], entries: &[[i64; 4]]) -> Vec<String> {
    controls
        .iter()
        .filter(|c| {
            !entries.iter().any(|[l, t, r, b]| {
                let (x, y) = ((l + r) / 2, (t + b) / 2);
                c.rect[0] <= x && x < c.rect[2] && c.rect[1] <= y && y < c.rect[3]
            })
        })
        .map(|c| c.label.clone())
        .collect()
}

/// The control tapped on a screen: the first button or row (not a field, which would bring the
/// keyboard up).
fn tap_target(controls: &[Control]) -> Option<&Control> {
    controls
        .iter()
        .find(|c| c.labelled && matches!(c.kind.as_str(), "Button" | "Cell" | "Other"))
}

fn sent(recorded: &[Recorded], from: usize) -> usize {
    recorded.len().saturating_sub(from)
}

/// tabwire against the scripted WDA.
pub async fn tabwire() -> Result<Vec<IosScreen>> {
    let hub = tokio::task::block_in_place(Hub::spawn);
    let ios = Ios::local(&hub, script(), &[]).await;
    let mut command = Command::new(&artifacts().shim);
    command.arg("--socket").arg(&hub.socket);
    let session = Session::start("tabwire-mcp", command).await?;
    tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let reply = session.call("list_devices", json!({})).await?;
            if reply.data()?["devices"].as_array().is_some_and(|all| {
                all.iter()
                    .any(|d| d["deviceId"] == IPHONE_ID && d["connected"] == true)
            }) {
                return anyhow::Ok(());
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    })
    .await
    .context("the iPhone did not connect within 30 s")??;
    let mut figures = Vec::new();
    for (name, xml) in SCREENS {
        ios.wda.show(name);
        let controls = controls(xml);
        let listed = session.call("device_snapshot", json!({})).await?;
        let nodes = listed.data()?["nodes"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let rect = |node: &Value| -> [i64; 4] {
            let b = &node["bounds"];
            ["left", "top", "right", "bottom"].map(|k| b[k].as_i64().unwrap_or(0))
        };
        let entries: Vec<[i64; 4]> = nodes.iter().map(rect).collect();
        let mut screen = IosScreen {
            chars: listed.text_chars(),
            actionable: controls.len(),
            missing: missing(&controls, &entries),
            ..IosScreen::default()
        };
        if let Some(target) = tap_target(&controls)
            && let Some(node_ref) = nodes
                .iter()
                .find(|n| {
                    let [l, t, r, b] = rect(n);
                    let (x, y) = ((l + r) / 2, (t + b) / 2);
                    target.rect[0] <= x
                        && x < target.rect[2]
                        && target.rect[1] <= y
                        && y < target.rect[3]
                })
                .and_then(|n| n["ref"].as_str())
        {
            let before = ios.wda.recorded().len();
            let started = Instant::now();
            let tapped = session.call("device_tap", json!({"ref": node_ref})).await?;
            if tapped.is_error {
                bail!("device_tap on {name}: {}", tapped.text);
            }
            screen.tap_ms = Some(started.elapsed().as_secs_f64() * 1000.0);
            screen.tap_calls = Some(sent(&ios.wda.recorded(), before));
            if ios.wda.screen() != format!("{name}-tapped") {
                bail!("the tap on {name} did not reach {}", target.label);
            }
        }
        figures.push(screen);
    }
    session.close().await;
    Ok(figures)
}

/// The fake go-ios: one iPhone on iOS 16.
fn fake_go_ios(dir: &std::path::Path) -> Result<std::path::PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join("ios");
    std::fs::write(
        &path,
        format!(
            "#!/bin/sh\n# go-ios as mobile-mcp calls it: version, list, info.\nfor a in \"$@\"; do\n  case \"$a\" in\n    version) echo '{{\"version\":\"v1.0.150\"}}'; exit 0;;\n    list) echo '{{\"deviceList\":[\"{UDID}\"]}}'; exit 0;;\n    info) echo '{{\"DeviceName\":\"Test iPhone\",\"ProductVersion\":\"16.7\",\"ProductType\":\"iPhone12,1\"}}'; exit 0;;\n  esac\ndone\necho '{{}}'\n"
        ),
    )?;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))?;
    Ok(path)
}

/// mobile-mcp's iOS robot against the scripted WDA on port 8100.
pub async fn mobile_mcp() -> Result<Vec<IosScreen>> {
    ensure_installed().await?;
    let wda = ScriptedWda::start_at(script(), 8100)
        .await
        .context("mobile-mcp reaches WDA on 127.0.0.1:8100 only, and it is taken")?;
    let scratch = Scratch::new("bench-ios");
    let go_ios = fake_go_ios(scratch.path())?;
    let mut command = Command::new("node");
    command
        .arg(package_dir().join("lib/index.js"))
        .env("MOBILEMCP_LEGACY_ROBOT", "1")
        .env("MOBILEMCP_DISABLE_TELEMETRY", "1")
        .env("GO_IOS_PATH", &go_ios)
        .current_dir(scratch.path());
    let session = Session::start("mobile-mcp", command).await?;
    let devices = session
        .call("mobile_list_available_devices", json!({}))
        .await?;
    if !devices.text.contains(UDID) {
        bail!("mobile-mcp does not list the iPhone: {}", devices.text);
    }
    let device = json!({"device": UDID});
    let mut figures = Vec::new();
    for (name, xml) in SCREENS {
        wda.show(name);
        let controls = controls(xml);
        let listed = session
            .call("mobile_list_elements_on_screen", device.clone())
            .await?;
        if listed.is_error {
            bail!("mobile_list_elements_on_screen on {name}: {}", listed.text);
        }
        let entries = element_rects(&listed.text);
        let mut screen = IosScreen {
            chars: listed.text_chars(),
            actionable: controls.len(),
            missing: missing(&controls, &entries),
            ..IosScreen::default()
        };
        if let Some(target) = tap_target(&controls)
            && missing(std::slice::from_ref(target), &entries).is_empty()
        {
            let [l, t, r, b] = target.rect;
            let click = json!({"device": UDID, "x": (l + r) / 2, "y": (t + b) / 2});
            let before = wda.recorded().len();
            let started = Instant::now();
            let clicked = session
                .call("mobile_click_on_screen_at_coordinates", click)
                .await?;
            if clicked.is_error {
                bail!("click on {name}: {}", clicked.text);
            }
            session
                .call("mobile_list_elements_on_screen", device.clone())
                .await?;
            screen.tap_ms = Some(started.elapsed().as_secs_f64() * 1000.0);
            screen.tap_calls = Some(sent(&wda.recorded(), before));
            if wda.screen() != format!("{name}-tapped") {
                bail!("mobile-mcp's tap on {name} did not reach {}", target.label);
            }
        }
        figures.push(screen);
    }
    session.close().await;
    Ok(figures)
}

/// Prints the iOS table.
pub fn print(tabwire: &Result<Vec<IosScreen>>, peer: &Result<Vec<IosScreen>>) {
    println!(
        "\niOS: element list per screen (the scripted WDA serving real page sources; tokens = \
         characters / 4), and a tap with its observation (tabwire: device_tap; mobile-mcp: its \
         click, then its element list) on a tap that changes the screen"
    );
    println!();
    println!(
        "| screen | actionable | tabwire tokens | missed | mobile-mcp tokens | missed | tabwire ÷ mobile-mcp | tabwire WDA calls per tap+look | mobile-mcp WDA calls |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    let (mut ours_total, mut theirs_total) = (0, 0);
    for (index, (name, _)) in SCREENS.iter().enumerate() {
        let ours = tabwire.as_ref().ok().and_then(|all| all.get(index));
        let theirs = peer.as_ref().ok().and_then(|all| all.get(index));
        let tokens =
            |s: Option<&IosScreen>| s.map_or("—".to_owned(), |s| (s.chars / 4).to_string());
        let missed = |s: Option<&IosScreen>| {
            s.map_or("—".to_owned(), |s| {
                if s.missing.is_empty() {
                    "0".to_owned()
                } else {
                    format!(
                        "{} ({})",
                        s.missing.len(),
                        s.missing.join(", ").chars().take(60).collect::<String>()
                    )
                }
            })
        };
        let calls = |s: Option<&IosScreen>| {
            s.and_then(|s| s.tap_calls)
                .map_or("—".to_owned(), |n| n.to_string())
        };
        let ratio = match (ours, theirs) {
            (Some(a), Some(b)) if b.chars > 0 => format!("{:.2}", a.chars as f64 / b.chars as f64),
            _ => "—".into(),
        };
        ours_total += ours.map_or(0, |s| s.chars);
        theirs_total += theirs.map_or(0, |s| s.chars);
        println!(
            "| {name} | {} | {} | {} | {} | {} | {ratio} | {} | {} |",
            ours.or(theirs).map_or(0, |s| s.actionable),
            tokens(ours),
            missed(ours),
            tokens(theirs),
            missed(theirs),
            calls(ours),
            calls(theirs),
        );
    }
    if ours_total > 0 && theirs_total > 0 {
        println!(
            "| all screens | | {} | | {} | | {:.2} | | |",
            ours_total / 4,
            theirs_total / 4,
            ours_total as f64 / theirs_total as f64
        );
    }
    for (server, result) in [("tabwire", tabwire), ("mobile-mcp", peer)] {
        if let Err(error) = result {
            println!("\n{server} on iOS did not run: {error:#}");
        }
    }
}
