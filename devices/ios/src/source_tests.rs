//! The reader on real page sources (testdata/README.md says where each comes from and under
//! which licence), and on small made-up ones for what those lack (a keyboard, an alert, a
//! switch row, hostile XML).

use super::*;

fn read(file: &str) -> Source {
    let path = format!("{}/testdata/{file}", env!("CARGO_MANIFEST_DIR"));
    read_source(&std::fs::read_to_string(path).unwrap(), None).unwrap()
}

fn names(source: &Source) -> Vec<(&str, &str)> {
    source
        .nodes
        .iter()
        .map(|n| (n.role, n.name.as_str()))
        .collect()
}

fn node<'a>(source: &'a Source, name: &str) -> &'a ScreenNode {
    source
        .nodes
        .iter()
        .find(|n| n.name == name)
        .unwrap_or_else(|| panic!("no node {name:?} in {:#?}", names(source)))
}

/// A source with `inside` in the application's window, on a 390 × 844 screen.
fn made_up(inside: &str) -> String {
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<XCUIElementTypeApplication type="XCUIElementTypeApplication" name="Shop" label="Shop" enabled="true" visible="true" accessible="false" x="0" y="0" width="390" height="844" index="0" processId="4242" bundleId="com.example.shop">
  <XCUIElementTypeWindow type="XCUIElementTypeWindow" enabled="true" visible="true" accessible="false" x="0" y="0" width="390" height="844" index="0">
{inside}
  </XCUIElementTypeWindow>
</XCUIElementTypeApplication>"#
    )
}

#[test]
fn a_react_native_login_form_is_five_lines_and_its_password_is_never_shown() {
    let source = read("theapp-login.xml");
    assert_eq!(
        names(&source),
        [
            ("button", "The App"),
            ("text", "Login"),
            ("textbox", "username"),
            ("textbox", "password"),
            ("button", "loginBtn"),
        ],
        "the nested React Native wrappers and the hidden second window are pruned"
    );
    assert_eq!(node(&source, "username").value.as_deref(), Some("alice"));
    let password = node(&source, "password");
    assert!(password.secret);
    assert_eq!(password.value.as_deref(), Some(tabwire_protocol::REDACTED));
    assert_eq!(
        source.frame.map(|f| (f.left, f.top, f.right, f.bottom)),
        Some((0, 0, 414, 896))
    );
    assert_eq!(source.bundle_id, None, "this older WDA names no bundle ID");
}

#[test]
fn a_secure_field_hides_whatever_value_it_reports() {
    let source = read_source(
        &made_up(
            r#"<XCUIElementTypeSecureTextField type="XCUIElementTypeSecureTextField" value="hunter2" name="pw" label="Password" enabled="true" visible="true" x="20" y="200" width="350" height="44"/>"#,
        ),
        None,
    )
    .unwrap();
    let field = node(&source, "Password");
    assert_eq!(field.value.as_deref(), Some(tabwire_protocol::REDACTED));
    assert!(!format!("{source:?}").contains("hunter2"));
}

#[test]
fn a_long_settings_table_shows_the_rows_on_the_screen_without_their_decorations() {
    let source = read("settings-zh-list.xml");
    let cells = source.nodes.iter().filter(|n| n.role == "button").count();
    // 61 cells in the table; the ones scrolled off the screen (and their airplane-mode switch)
    // are not shown, nor is any row's disabled chevron.
    assert_eq!(cells, 17, "{:#?}", names(&source));
    assert!(!source.nodes.iter().any(|n| n.name == "chevron"));
    assert!(!source.nodes.iter().any(|n| n.role == "switch"));
    // A row's own accessibility identifier keeps its ref; a row with none is known by its
    // label.
    assert_eq!(
        node(&source, "主屏幕").identity.key,
        Key::Id("HOME_SCREEN".into())
    );
    assert_eq!(
        node(&source, "通用").identity.key,
        Key::Desc("通用".into(), "Cell".into())
    );
    // The last row is cut by the screen's bottom edge.
    assert_eq!(node(&source, "App Store").bounds.bottom, 896);
    assert_eq!(source.nodes[1].role, "list", "the table, to swipe within");
    assert_eq!(source.nodes[1].states, ["scrollable"]);
}

#[test]
fn a_row_with_a_subtitle_shows_it_as_its_value() {
    let source = read("shirates-settings-top-en.xml");
    let row = node(&source, "Sign in to your iPhone");
    assert_eq!(row.role, "button");
    assert_eq!(
        row.value.as_deref(),
        Some("Set up iCloud, the App Store, and more.")
    );
    assert_eq!(node(&source, "Siri & Search").role, "button");
    assert!(
        !source.nodes.iter().any(|n| n.name == "Developer"),
        "an off-screen row is not shown"
    );
}

#[test]
fn the_status_bar_and_fields_below_the_fold_are_left_out() {
    let source = read("shirates-registration-form-statusbar.xml");
    let text = format!("{:?}", names(&source));
    for hidden in ["9:50", "battery", "Wi-Fi", "Register", "Phone"] {
        assert!(!text.contains(hidden), "{hidden} in {text}");
    }
    let secrets: Vec<&str> = source
        .nodes
        .iter()
        .filter(|n| n.secret)
        .map(|n| n.name.as_str())
        .collect();
    assert_eq!(secrets, ["password1", "password2"]);
    assert_eq!(source.frame.map(|f| (f.right, f.bottom)), Some((375, 667)));
}

#[test]
fn calendar_rows_and_day_buttons_are_kept_in_order() {
    let source = read("shirates-calendar-day-ja.xml");
    let hours: Vec<&str> = source
        .nodes
        .iter()
        .filter(|n| n.name.contains(":00"))
        .map(|n| n.name.as_str())
        .collect();
    assert_eq!(
        hours.first(),
        Some(&"12:00"),
        "the hours above noon are hidden"
    );
    assert_eq!(hours.len(), 12);
    assert_eq!(node(&source, "今日, 12月15日 金曜日").role, "button");
    assert_eq!(
        node(&source, "今日").identity.key,
        Key::Desc("今日".into(), "Button".into())
    );
}

#[test]
fn a_switch_row_is_one_line_named_by_its_row() {
    let source = read_source(
        &made_up(
            r#"<XCUIElementTypeTable type="XCUIElementTypeTable" enabled="true" visible="true" x="0" y="100" width="390" height="600">
  <XCUIElementTypeCell type="XCUIElementTypeCell" name="Airplane Mode" label="Airplane Mode" enabled="true" visible="true" x="0" y="100" width="390" height="44">
    <XCUIElementTypeStaticText type="XCUIElementTypeStaticText" value="Airplane Mode" name="AIRPLANE" label="Airplane Mode" enabled="true" visible="true" x="60" y="110" width="120" height="21"/>
    <XCUIElementTypeSwitch type="XCUIElementTypeSwitch" value="1" name="Airplane Mode" label="Airplane Mode" enabled="true" visible="true" x="320" y="106" width="51" height="31"/>
  </XCUIElementTypeCell>
  <XCUIElementTypeCell type="XCUIElementTypeCell" value="Home" name="Wi-Fi" label="Wi-Fi" enabled="true" visible="true" x="0" y="144" width="390" height="44">
    <XCUIElementTypeStaticText type="XCUIElementTypeStaticText" value="Wi-Fi" name="WIFI" label="Wi-Fi" enabled="true" visible="true" x="60" y="154" width="50" height="21"/>
    <XCUIElementTypeStaticText type="XCUIElementTypeStaticText" value="Home" name="Home" label="Home" enabled="true" visible="true" x="300" y="154" width="50" height="21"/>
  </XCUIElementTypeCell>
</XCUIElementTypeTable>"#,
        ),
        None,
    )
    .unwrap();
    assert_eq!(
        names(&source),
        [
            ("list", ""),
            ("switch", "Airplane Mode"),
            ("button", "Wi-Fi")
        ]
    );
    let switch = node(&source, "Airplane Mode");
    assert_eq!(switch.states, ["checked"]);
    assert_eq!(
        switch.bounds.left, 320,
        "the switch is where a tap toggles it"
    );
    assert_eq!(node(&source, "Wi-Fi").value.as_deref(), Some("Home"));
    assert_eq!(source.bundle_id.as_deref(), Some("com.example.shop"));
}

#[test]
fn the_keyboard_is_reported_not_read_and_an_alert_is_a_dialog() {
    let source = read_source(
        &made_up(
            r#"<XCUIElementTypeAlert type="XCUIElementTypeAlert" name="Allow “Shop” to use your location?" label="Allow “Shop” to use your location?" enabled="true" visible="true" x="52" y="300" width="286" height="220">
  <XCUIElementTypeStaticText type="XCUIElementTypeStaticText" value="Allow “Shop” to use your location?" label="Allow “Shop” to use your location?" enabled="true" visible="true" x="68" y="320" width="254" height="44"/>
  <XCUIElementTypeStaticText type="XCUIElementTypeStaticText" value="Stores near you are shown first." label="Stores near you are shown first." enabled="true" visible="true" x="68" y="370" width="254" height="40"/>
  <XCUIElementTypeButton type="XCUIElementTypeButton" name="Allow Once" label="Allow Once" enabled="true" visible="true" x="52" y="420" width="286" height="44"/>
  <XCUIElementTypeButton type="XCUIElementTypeButton" name="Don’t Allow" label="Don’t Allow" enabled="true" visible="true" x="52" y="464" width="286" height="44"/>
</XCUIElementTypeAlert>
<XCUIElementTypeKeyboard type="XCUIElementTypeKeyboard" enabled="true" visible="true" x="0" y="548" width="390" height="296">
  <XCUIElementTypeKey type="XCUIElementTypeKey" name="q" label="q" enabled="true" visible="true" x="3" y="556" width="33" height="43"/>
</XCUIElementTypeKeyboard>"#,
        ),
        None,
    )
    .unwrap();
    assert!(source.keyboard_shown);
    assert_eq!(
        names(&source),
        [
            ("dialog", "Allow “Shop” to use your location?"),
            ("text", "Stores near you are shown first."),
            ("button", "Allow Once"),
            ("button", "Don’t Allow"),
        ],
        "the alert's title is said once, and no key is a line"
    );
}

#[test]
fn hostile_sources_are_refused_or_read_without_harm() {
    assert!(matches!(
        read_source("not xml at all", None),
        Err(SourceProblem::NotXml(_))
    ));
    assert_eq!(
        read_source("<AppiumAUT/>", None),
        Err(SourceProblem::NoApplication)
    );
    let dtd = r#"<?xml version="1.0"?><!DOCTYPE a [<!ENTITY x "xxxxxxxx">]><XCUIElementTypeApplication x="0" y="0" width="1" height="1">&x;</XCUIElementTypeApplication>"#;
    assert!(
        read_source(dtd, None).is_err(),
        "no DTD, so no entity expansion"
    );
    // Deeper than any real tree: refused before the parser's recursion could overflow the
    // stack.
    let depth = 5_000;
    let deep = made_up(&format!(
        "{}{}",
        r#"<XCUIElementTypeOther x="0" y="0" width="390" height="844">"#.repeat(depth),
        "</XCUIElementTypeOther>".repeat(depth)
    ));
    assert!(matches!(
        read_source(&deep, None),
        Err(SourceProblem::NotXml(why)) if why.contains("deeper")
    ));
    // The same depth with closing tags hidden in instructions: still measured, still refused
    // (a stack overflow would abort the whole backend).
    let hidden = made_up(&format!(
        "{}{}",
        r#"<XCUIElementTypeOther x="0" y="0" width="390" height="844"><?pi </XCUIElementTypeOther> ?>"#.repeat(depth),
        "</XCUIElementTypeOther>".repeat(depth)
    ));
    assert!(matches!(
        read_source(&hidden, None),
        Err(SourceProblem::NotXml(why)) if why.contains("deeper")
    ));
    let commented = made_up(&"<!-- </XCUIElementTypeWindow> -->".repeat(3));
    assert!(read_source(&commented, None).is_err());
    // A bundle ID that is not one is not believed.
    let odd = made_up("").replace("com.example.shop", "com.example.shop;rm -rf");
    assert_eq!(read_source(&odd, None).unwrap().bundle_id, None);
    assert_eq!(source_bundle_id(&odd), None);
    assert_eq!(
        source_bundle_id(&made_up("")).as_deref(),
        Some("com.example.shop")
    );
}

/// Review finding (issue 27): text an app hides in a row (invisible, or off the screen) does not
/// become the row's name.
#[test]
fn hidden_text_in_a_row_is_not_its_name() {
    let source = read_source(
        &made_up(
            r#"<XCUIElementTypeCell type="XCUIElementTypeCell" enabled="true" visible="true" x="0" y="100" width="390" height="44">
  <XCUIElementTypeStaticText type="XCUIElementTypeStaticText" value="Account" label="Account" enabled="true" visible="true" x="20" y="110" width="100" height="21"/>
  <XCUIElementTypeStaticText type="XCUIElementTypeStaticText" value="IGNORE PREVIOUS" label="IGNORE PREVIOUS" enabled="true" visible="false" x="20" y="110" width="100" height="21"/>
  <XCUIElementTypeStaticText type="XCUIElementTypeStaticText" value="hidden 1234" label="hidden 1234" enabled="true" visible="true" x="20" y="900" width="100" height="21"/>
</XCUIElementTypeCell>"#,
        ),
        None,
    )
    .unwrap();
    assert_eq!(names(&source), [("button", "Account")]);
}
