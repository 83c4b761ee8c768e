//! Dragging, end to end in real Chromium (docs/actions.md): a list sorted with the mouse and one
//! with HTML5 drag and drop (sortable.html), and a list sorted the way jQuery UI's sortable
//! sorts (sortable-lib.html) — lifted past a threshold, placed on later moves by the half of the
//! item under the pointer — driven from a snapshot by role and name with `position` before and
//! after, in a vertical and a horizontal list; and the box `read_element_state` reports.
//!
//! What the page did is read twice: through the tools (snapshots, element state) and,
//! independently, through DevTools (`evaluate`) from what the fixture recorded.

use serde_json::json;
use tabwire_e2e::client::Reply;
use tabwire_e2e::scenario::{OneBrowser, element_state, ref_of};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn items_are_dragged_to_new_places_in_sortable_lists() {
    let setup = OneBrowser::on("Work", "sortable.html").await;

    // Mouse-driven list: press on Alpha, move, release on Delta.
    setup
        .call(
            "drag_element",
            json!({"selector": "#alpha", "to": "#delta"}),
        )
        .await
        .data();
    assert_eq!(
        setup
            .evaluate(
                "sortable.html",
                "[lists.order, lists.trusted, lists.moves > 1]"
            )
            .await,
        json!(["Bravo, Charlie, Delta, Alpha, Echo", true, true])
    );

    // By an offset: from Echo (fifth row) 160px up is the first row's centre.
    setup
        .call("drag_element", json!({"selector": "#echo", "dy": -160}))
        .await
        .data();
    assert_eq!(
        setup.evaluate("sortable.html", "lists.order").await,
        "Echo, Bravo, Charlie, Delta, Alpha"
    );

    // HTML5 drag and drop: the drag travels over Card 2 on its way to Card 3.
    let html5 = setup
        .call(
            "drag_element",
            json!({"selector": "#card-1", "to": "#card-3"}),
        )
        .await;
    assert_eq!(html5.data()["html5"], true, "{}", html5.text);
    assert_eq!(
        setup
            .evaluate("sortable.html", "[lists.cards, lists.drops, lists.entered]")
            .await,
        json!(["Card 2, Card 3, Card 1", 1, ["card-2", "card-3"]])
    );
}

/// The names of the options on the snapshot's lines, in order (both lists' items are options).
fn option_names(snapshot: &Reply) -> Vec<String> {
    snapshot
        .text
        .lines()
        .filter_map(|line| line.split_once(" option \"")?.1.split_once('"'))
        .map(|(name, _)| name.to_owned())
        .collect()
}

/// The order of the items of sortable-lib.html's two lists, as a snapshot shows them.
async fn orders(setup: &OneBrowser) -> (Vec<String>, Vec<String>) {
    let names = option_names(&setup.snapshot(json!({})).await);
    let chips = ["Red", "Green", "Blue", "Gold"];
    names
        .into_iter()
        .partition(|name| !chips.contains(&name.as_str()))
}

/// Drags the option named `from` onto the option named `to` at `position`, by their refs in a
/// fresh snapshot, as an agent would.
async fn drag_option(setup: &OneBrowser, from: &str, to: &str, position: &str) -> Reply {
    let snapshot = setup.snapshot(json!({})).await;
    let from = ref_of(&snapshot, &format!("option \"{from}\""));
    let to = ref_of(&snapshot, &format!("option \"{to}\""));
    let dragged = setup
        .call(
            "drag_element",
            json!({"selector": from, "to": to, "position": position}),
        )
        .await;
    dragged.data();
    dragged
}

fn names(list: &str) -> Vec<String> {
    list.split(", ").map(str::to_owned).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sortable_library_puts_the_item_before_or_after_the_one_dropped_on() {
    let setup = OneBrowser::on("Work", "sortable-lib.html").await;
    let (tasks, chips) = orders(&setup).await;
    assert_eq!(tasks, names("Alpha, Bravo, Charlie, Delta, Echo"));
    assert_eq!(chips, names("Red, Green, Blue, Gold"));

    // The page needs the pointer to travel: a press, one move straight to Charlie's lower half
    // and a release lift Alpha and put it back where it was.
    let jumped = setup
        .evaluate(
            "sortable-lib.html",
            "(() => { \
               const [alpha, , charlie] = document.querySelectorAll('#tasks li'); \
               const a = alpha.getBoundingClientRect(), c = charlie.getBoundingClientRect(); \
               const at = (type, x, y, buttons) => document.dispatchEvent(new MouseEvent(type, \
                 {bubbles: true, clientX: x, clientY: y, button: 0, buttons})); \
               const [x, y] = [a.left + a.width / 2, a.top + a.height / 2]; \
               alpha.dispatchEvent(new MouseEvent('mousedown', {bubbles: true, clientX: x, clientY: y, button: 0, buttons: 1})); \
               at('mousemove', x, c.top + c.height * 0.75, 1); \
               at('mouseup', x, c.top + c.height * 0.75, 0); \
               return [sorted.started, sorted.placed, sorted.dropped]; })()",
        )
        .await;
    assert_eq!(jumped, json!([1, 0, 1]), "lifted and dropped, never placed");
    assert_eq!(
        orders(&setup).await.0,
        names("Alpha, Bravo, Charlie, Delta, Echo")
    );

    // After Charlie: down the list, ending in Charlie's lower half.
    let after = drag_option(&setup, "Alpha", "Charlie", "after").await;
    assert!(after.text.contains("(position after)"), "{}", after.text);
    assert_eq!(
        orders(&setup).await.0,
        names("Bravo, Charlie, Alpha, Delta, Echo")
    );
    assert_eq!(
        setup
            .evaluate("sortable-lib.html", "[sorted.trusted, sorted.lastButtons]")
            .await,
        json!([true, 1]),
        "trusted input, with the button held while moving"
    );
    // Before Charlie, up the list.
    drag_option(&setup, "Echo", "Charlie", "before").await;
    assert_eq!(
        orders(&setup).await.0,
        names("Bravo, Echo, Charlie, Alpha, Delta")
    );
    // Before Alpha, down the list: the pointer passes Echo's and Charlie's lower halves and ends
    // in Alpha's upper half.
    drag_option(&setup, "Bravo", "Alpha", "before").await;
    assert_eq!(
        orders(&setup).await.0,
        names("Echo, Charlie, Bravo, Alpha, Delta")
    );

    // A horizontal list: before and after are its items' left and right halves.
    drag_option(&setup, "Red", "Blue", "after").await;
    assert_eq!(orders(&setup).await.1, names("Green, Blue, Red, Gold"));
    drag_option(&setup, "Gold", "Green", "before").await;
    assert_eq!(orders(&setup).await.1, names("Gold, Green, Blue, Red"));

    // What the page itself shows agrees.
    let text = setup.snapshot(json!({"query": "Tasks:"})).await.text;
    assert!(
        text.contains("Tasks: Echo, Charlie, Bravo, Alpha, Delta"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn element_state_reports_the_box_of_an_element() {
    let setup = OneBrowser::on("Work", "sortable-lib.html").await;
    let snapshot = setup.snapshot(json!({})).await;
    let charlie = ref_of(&snapshot, "option \"Charlie\"");
    let state = setup
        .call("read_element_state", json!({"selector": charlie}))
        .await;
    // The body's 8px margin, then two 40px rows above; 240px wide.
    assert_eq!(
        element_state(&state)["box"],
        json!({"x": 8, "y": 88, "width": 240, "height": 40}),
        "{}",
        state.text
    );
    assert!(state.text.contains("box=8,88,240x40"), "{}", state.text);
    let blue = ref_of(&snapshot, "option \"Blue\"");
    let chip = setup
        .call("read_element_state", json!({"selector": blue}))
        .await;
    let chip_box = &element_state(&chip)["box"];
    assert_eq!(
        [&chip_box["x"], &chip_box["width"], &chip_box["height"]],
        [&json!(208), &json!(100), &json!(32)],
        "{}",
        chip.text
    );
    // An element without a layout box has none to report.
    let hidden = setup
        .call("read_element_state", json!({"selector": "#saved"}))
        .await;
    assert_eq!(element_state(&hidden)["visible"], false, "{}", hidden.text);
    assert!(
        element_state(&hidden).get("box").is_none(),
        "{}",
        hidden.text
    );
    assert!(!hidden.text.contains("box="), "{}", hidden.text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_position_needs_an_element_to_drop_onto() {
    let setup = OneBrowser::on("Work", "sortable-lib.html").await;
    let snapshot = setup.snapshot(json!({})).await;
    let alpha = ref_of(&snapshot, "option \"Alpha\"");
    let refused = setup
        .call(
            "drag_element",
            json!({"selector": alpha, "dy": 80, "position": "after"}),
        )
        .await;
    assert_eq!(refused.error_code(), "INVALID_ARGUMENT");
    assert!(refused.text.contains("position"), "{}", refused.text);
    let unknown = setup
        .call(
            "drag_element",
            json!({"selector": alpha, "to": alpha, "position": "below"}),
        )
        .await;
    assert_eq!(unknown.error_code(), "INVALID_ARGUMENT");
    // Nothing moved.
    assert_eq!(
        setup.evaluate("sortable-lib.html", "sorted.started").await,
        json!(0)
    );
}
