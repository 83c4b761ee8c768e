//! `cargo run --release -p tabwire-e2e --bin bench-safety [-- --calls N]`: what the safety layer
//! (issue 14) costs a tool call.
//!
//! Two local hubs run side by side, each with its own headless Chromium showing the same fixture
//! page: one with no policy and file URLs allowed (nothing is looked up; local mode's default
//! since issue 23 denies `file://`, which costs the same lookups as any rule), one with an operator
//! policy of 40 rules whose last one lets the fixture's origin `act` (so every check finds its
//! rule at the end of the list, and every collector command looks its frame's URL up). Two MCP
//! sessions call the same tools, interleaved. Both hubs keep the audit log (it is always on), so
//! its cost is measured on its own: the work a tool call does for it (summarising the
//! arguments, handing the record to the writer's queue), timed in-process over many records at
//! a pace the writer keeps up with. Last, what a screenshot pays for covering frames the policy
//! denies (issue 23 §1): `cover.html`, whose frames of the other loopback name the policy's
//! default denies, against the same page without a policy and a page without frames. Prints
//! medians and 90th percentiles; asserts nothing.

use std::time::{Duration, Instant};

use tabwire_e2e::bench::stats::{ms, p50_p90, timed_tool_call};

use serde_json::json;
use tabwire_e2e::scenario::{connected_browser, loaded_tab};
use tabwire_e2e::scratch::Scratch;
use tabwire_e2e::wait::eventually;
use tabwire_e2e::{Browser, Fixtures, Hub, McpClient};

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let mut calls = 100usize;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match (arg.as_str(), args.next().and_then(|n| n.parse().ok())) {
            ("--calls", Some(n)) if n > 0 => calls = n,
            _ => {
                eprintln!("usage: bench-safety [--calls N]");
                std::process::exit(2);
            }
        }
    }
    tabwire_e2e::quiet_logs();
    audit_cost();

    let fixtures = Fixtures::serve().await;
    let page = fixtures.url("login.html");
    let origin = page.trim_end_matches("/login.html").to_owned();
    let dir = Scratch::new("bench-safety");
    let file = dir.path().join("policy.toml");
    let mut policy = String::from("default = \"deny\"\n");
    for n in 0..39 {
        policy.push_str(&format!(
            "[[rules]]\norigin = \"https://*.site{n}.example\"\naccess = \"{}\"\n",
            ["deny", "read", "ask"][n % 3]
        ));
    }
    policy.push_str(&format!(
        "[[rules]]\norigin = \"{origin}\"\naccess = \"act\"\n"
    ));
    std::fs::write(&file, policy).unwrap();

    let plain_hub = Hub::spawn_with_args(&["--allow-file-urls"]);
    let policy_hub = Hub::spawn_with_args(&["--policy", file.to_str().unwrap()]);
    let _plain_browser = Browser::launch(&plain_hub, "Plain", &page);
    let _policy_browser = Browser::launch(&policy_hub, "Policy", &page);
    let plain = McpClient::connect(&plain_hub).await;
    let checked = McpClient::connect(&policy_hub).await;
    connected_browser(&plain, "Plain").await;
    connected_browser(&checked, "Policy").await;
    loaded_tab(&plain, json!({}), &page).await;
    loaded_tab(&checked, json!({}), &page).await;

    println!(
        "\ntool call latency, local mode: no policy vs a 40-rule operator policy (the page's \
         origin matched by the last rule); {calls} calls each, interleaved, after 5 warm-up calls"
    );
    println!("| tool | no policy p50 | p90 | policy p50 | p90 | added by the policy (p50) |");
    println!("| --- | --- | --- | --- | --- | --- |");
    for (tool, args) in [
        ("list_tabs", json!({})),
        ("read_element_state", json!({ "selector": "#username" })),
        ("get_page_snapshot", json!({ "maxNodes": 20 })),
        (
            "click_element",
            json!({ "selector": "#username", "observe": false }),
        ),
    ] {
        let mut without = Vec::new();
        let mut with = Vec::new();
        for round in 0..calls + 5 {
            let a = timed_tool_call(&plain, tool, &args).await;
            let b = timed_tool_call(&checked, tool, &args).await;
            if round >= 5 {
                without.push(a);
                with.push(b);
            }
        }
        let (a50, a90) = p50_p90(&mut without);
        let (b50, b90) = p50_p90(&mut with);
        let added = b50.as_secs_f64() - a50.as_secs_f64();
        println!(
            "| {tool} | {} | {} | {} | {} | {:+.2} ms |",
            ms(a50),
            ms(a90),
            ms(b50),
            ms(b90),
            added * 1000.0
        );
    }
    screenshot_cost(&plain, &checked, &fixtures, calls).await;
}

/// The median screenshot (the default: webp, 800 pixels wide) of `cover.html` with its three
/// denied frames on screen painted over, against the same page where nothing is denied (no
/// policy) and a page without frames under the policy.
async fn screenshot_cost(
    plain: &McpClient,
    checked: &McpClient,
    fixtures: &Fixtures,
    calls: usize,
) {
    let cover = fixtures.url("cover.html");
    for client in [plain, checked] {
        let opened = client.call("create_tab", json!({ "url": cover })).await;
        assert!(!opened.is_error, "{}", opened.text);
    }
    let plain_tab = loaded_tab(plain, json!({}), &cover).await;
    let covered_tab = loaded_tab(checked, json!({}), &cover).await;
    let login_tab = loaded_tab(checked, json!({}), &fixtures.url("login.html")).await;
    // The frames are loaded and covered before anything is timed.
    eventually(
        "the denied frames to be covered",
        Duration::from_secs(30),
        || async {
            let shot = checked
                .call("take_screenshot", json!({ "tabId": covered_tab }))
                .await;
            // The three denied frames in view, and the page the first one frames.
            let covered = shot.data()["coveredFrames"].as_array().map_or(0, Vec::len);
            (covered >= 3).then_some(())
        },
    )
    .await;
    println!(
        "\ntake_screenshot (webp, 800 px wide) and what covering denied frames costs; {calls} \
         calls each, interleaved, after 5 warm-up calls"
    );
    println!("| page | policy | denied frames in view | p50 | p90 |");
    println!("| --- | --- | --- | --- | --- |");
    let cases = [
        ("cover.html", "none", plain, plain_tab, 0),
        ("login.html", "40 rules", checked, login_tab, 0),
        ("cover.html", "40 rules", checked, covered_tab, 3),
    ];
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); cases.len()];
    for round in 0..calls + 5 {
        for (i, (_, _, client, tab, _)) in cases.iter().enumerate() {
            let took = timed_tool_call(client, "take_screenshot", &json!({ "tabId": tab })).await;
            if round >= 5 {
                times[i].push(took);
            }
        }
    }
    for ((page, policy, _, _, painted), mut took) in cases.into_iter().zip(times) {
        let (p50, p90) = p50_p90(&mut took);
        println!(
            "| {page} | {policy} | {painted} | {} | {} |",
            ms(p50),
            ms(p90)
        );
    }
}

/// What one tool call spends on the audit log: the arguments' summary and the hand-off to the
/// writer thread, over 20,000 records sent at 2,000 a second (the writer keeps up; a full queue
/// would measure the drop path instead).
fn audit_cost() {
    let dir = Scratch::new("bench-audit");
    let log = tabwire_hub::audit::AuditLog::open(&dir.path().join("audit")).expect("audit dir");
    let args = json!({"selector": "@e12", "text": "hello there", "tabId": 5});
    let serde_json::Value::Object(args) = args else {
        unreachable!()
    };
    let mut times = Vec::with_capacity(20_000);
    for n in 0..20_000u32 {
        let started = Instant::now();
        let summary = tabwire_hub::audit::ArgsSummary::of(&args);
        log.record(tabwire_hub::audit::Record {
            time: std::time::SystemTime::now(),
            account: "local".into(),
            token_id: "local".into(),
            session: "bench".into(),
            client: Some("bench-safety".into()),
            peer: Some(("browser", "b1".into())),
            tab_id: Some(n),
            tool: "type_text".into(),
            outcome: "ok".into(),
            action_may_have_occurred: false,
            duration: Duration::from_micros(900),
            args: summary,
            replica: None,
            owner: None,
        });
        times.push(started.elapsed());
        std::thread::sleep(Duration::from_micros(500));
    }
    let (p50, p90) = p50_p90(&mut times);
    let p99 = tabwire_e2e::bench::stats::nearest_rank(&times, 99);
    println!(
        "audit log, per tool call (argument summary + queue hand-off; 20,000 records, {} \
         dropped): p50 {:.1} µs, p90 {:.1} µs, p99 {:.1} µs",
        log.dropped(),
        p50.as_secs_f64() * 1e6,
        p90.as_secs_f64() * 1e6,
        p99.as_secs_f64() * 1e6
    );
}
