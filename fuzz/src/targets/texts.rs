//! Text inputs from outside: the lines the shim relays, bearer tokens, the policy files, and the
//! UI hierarchies a phone dumps.

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use serde_json::Value;
use tabwire_android::hierarchy::{keyboard_shown, parse_dump};
use tabwire_android::screen::screen_nodes;
use tabwire_device_kit::node::Extent;
use tabwire_device_kit::refs::RefTable;
use tabwire_device_kit::view::{Screen, Views};
use tabwire_hub::auth::{self, Authenticator, KeySource, Role};
use tabwire_mcp::jsonrpc::{self, Kind};
use tabwire_protocol::devices::DeviceView;
use tabwire_protocol::local::LocalControl;
use tabwire_protocol::policy::{Need, Owner, Policy};

use super::Samples;
use super::peers::TempDir;
use crate::mutate;
use crate::rng::Rng;
use crate::runner::{Harness, Target};

struct ShimLines(Samples);

impl Harness for ShimLines {
    fn generate(&mut self, rng: &mut Rng) -> String {
        self.0.generate(rng)
    }

    fn run(&mut self, line: &str) {
        // The shim tracks requests by ID and answers them itself when the hub is gone: its
        // answer must carry the very ID it read.
        match jsonrpc::classify(line) {
            Kind::Request { id, .. } | Kind::Response { id } => {
                let answer = jsonrpc::error_response(&id, jsonrpc::NOT_SENT, "not sent");
                assert_eq!(
                    jsonrpc::classify(&answer),
                    Kind::Response { id: id.clone() },
                    "{answer}"
                );
                assert!(!jsonrpc::is_success(&answer));
            }
            Kind::Notification { .. } | Kind::Other => {}
        }
        let _ = jsonrpc::cancelled_request(line);
        let _ = jsonrpc::is_success(line);
        if let Some(control) = LocalControl::parse(line) {
            let _ = control.clone().attached();
            let _ = control.reported();
        }
    }
}

/// The lines between an MCP client, the shim and the hub.
pub const SHIM_LINES: Target = Target {
    name: "shim-lines",
    entry: "tabwire_mcp::jsonrpc::{classify, cancelled_request, is_success, error_response}, LocalControl::parse",
    build: || {
        let texts = include_str!("samples/shim_lines.jsonl")
            .lines()
            .map(str::to_owned)
            .collect();
        Box::new(ShimLines(Samples::new(
            texts,
            &[
                "jsonrpc",
                "id",
                "method",
                "params",
                "result",
                "error",
                "requestId",
                "tabwire",
                "selected",
                "session",
            ],
            &[
                "initialize",
                "tools/call",
                "notifications/cancelled",
                "attach",
                "state",
                "2.0",
            ],
        )))
    },
};

/// Tokens issued by the hub's own `token issue`, mutated as text or by their JSON parts and
/// signed again with the hub's key, so the checks past the signature run too.
struct Jwt {
    auth: Authenticator,
    secret: Vec<u8>,
    tokens: Vec<String>,
    parts: Vec<Value>,
    _dir: TempDir,
}

const JWT_KEYS: &[&str] = &[
    "alg", "typ", "kid", "sub", "role", "exp", "iat", "nbf", "jti", "aud", "iss", "crit", "jku",
];
const JWT_WORDS: &[&str] = &[
    "HS256",
    "none",
    "RS256",
    "EdDSA",
    "JWT",
    "tabwire",
    "agent",
    "browser",
    "device",
    "acme",
    "Acme Corp",
    "a/b",
    "..",
];

impl Jwt {
    fn sign(&self, header: &str, claims: &str) -> String {
        let signing = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header),
            URL_SAFE_NO_PAD.encode(claims)
        );
        let mut mac = Hmac::<sha2::Sha256>::new_from_slice(&self.secret).expect("any key length");
        mac.update(signing.as_bytes());
        format!(
            "{signing}.{}",
            URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes())
        )
    }
}

impl Harness for Jwt {
    fn generate(&mut self, rng: &mut Rng) -> String {
        let token = rng.pick(&self.tokens).clone();
        if rng.one_in(3) {
            return mutate::text(rng, &token, &[".", "=", "eyJ", "-", "_"], &self.tokens);
        }
        let mut pieces = token.split('.');
        let decode = |piece: Option<&str>| {
            piece
                .and_then(|p| URL_SAFE_NO_PAD.decode(p).ok())
                .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok())
                .unwrap_or(Value::Null)
        };
        let mut header = decode(pieces.next());
        let mut claims = decode(pieces.next());
        let which = if rng.one_in(3) {
            &mut header
        } else {
            &mut claims
        };
        mutate::json(rng, which, JWT_KEYS, JWT_WORDS, &self.parts);
        let (header, mut claims) = (header.to_string(), claims.to_string());
        if rng.one_in(8) {
            claims = mutate::text(rng, &claims, JWT_WORDS, &[]);
        }
        self.sign(&header, &claims)
    }

    fn run(&mut self, token: &str) {
        if let Ok(principal) = self.auth.verify(token) {
            assert!(
                auth::check_account(&principal.account).is_ok(),
                "{principal:?}"
            );
            assert!(!principal.jti.is_empty() && principal.jti.len() <= 128);
        }
    }
}

fn jwt() -> Jwt {
    let dir = TempDir::new("jwt");
    let auth_dir = dir.0.join("auth");
    let mut tokens = Vec::new();
    for (account, role) in [
        ("acme", Role::Agent),
        ("acme", Role::Peer(tabwire_protocol::Kind::Browser)),
        ("b-2", Role::Peer(tabwire_protocol::Kind::Device)),
    ] {
        let (token, _, _) =
            auth::issue(&auth_dir, account, role, Duration::from_secs(3600), "fuzz")
                .expect("a token");
        tokens.push(token);
    }
    let text = std::fs::read_to_string(auth_dir.join(auth::SECRET_FILE)).expect("the key");
    let secret = tabwire_protocol::pairing::decode_hex(text.trim()).expect("a hex key");
    let auth = Authenticator::load(&auth_dir, &KeySource::Secret).expect("an authenticator");
    let parts = tokens
        .iter()
        .flat_map(|t| t.split('.').take(2).map(str::to_owned).collect::<Vec<_>>())
        .filter_map(|p| URL_SAFE_NO_PAD.decode(p).ok())
        .filter_map(|b| serde_json::from_slice(&b).ok())
        .collect();
    Jwt {
        auth,
        secret,
        tokens,
        parts,
        _dir: dir,
    }
}

/// Bearer tokens, as hosted mode's `/mcp`, `/browser` and `/device` check them.
pub const JWT: Target = Target {
    name: "jwt",
    entry: "tabwire_hub::auth::Authenticator::verify",
    build: || Box::new(jwt()),
};

/// URLs and packages every parsed policy is asked about.
const URLS: &[&str] = &[
    "https://a.bank.example/x",
    "https://mail.example.com/",
    "http://localhost:8080/",
    "file:///etc/passwd",
    "about:blank",
    "data:text/html,x",
    "https://[::1]:443/",
    "https://xn--bcher-kva.example/",
    "",
];
const PACKAGES: &[&str] = &["com.acme.bank", "com.acme.shop", "", "a"];

struct PolicyText(Samples);

impl Harness for PolicyText {
    fn generate(&mut self, rng: &mut Rng) -> String {
        self.0.generate(rng)
    }

    fn run(&mut self, text: &str) {
        // The operator's file (and the device owner's, the same TOML), then the popup's lines.
        if let Ok(policy) = tabwire_hub::policy::parse(text) {
            ask(&policy);
            // The popup edits the policy as lines: written and read back, it is the same
            // policy (apps aside: the popup has no app rules).
            let back = Policy::from_lines(&policy.to_lines());
            assert_eq!(
                back.as_ref().ok(),
                Some(&Policy {
                    apps: Vec::new(),
                    ..policy.clone()
                }),
                "{}",
                policy.to_lines()
            );
        }
        if let Ok(policy) = Policy::from_lines(text) {
            ask(&policy);
        }
    }
}

fn ask(policy: &Policy) {
    for url in URLS {
        let verdict = policy.verdict(url, Owner::Operator);
        for need in [Need::Load, Need::Read, Need::SensitiveRead, Need::Act] {
            let _ = verdict.gate(need, url);
        }
    }
    for package in PACKAGES {
        let _ = policy.app_verdict(package, Owner::Device);
    }
}

/// The operator's `--policy` TOML and the popup's policy lines.
pub const POLICY: Target = Target {
    name: "policy-toml",
    entry: "tabwire_hub::policy::parse, Policy::from_lines, Policy::verdict",
    build: || {
        let texts = include_str!("samples/policies.txt")
            .split("\n---\n")
            .map(str::to_owned)
            .collect();
        Box::new(PolicyText(Samples::new(
            texts,
            &[],
            &[
                "[[rules]]\n",
                "[[apps]]\n",
                "origin = ",
                "access = ",
                "sensitive = ",
                "package = ",
                "default = ",
                "\"deny\"",
                "\"read\"",
                "\"ask\"",
                "\"act\"",
                "\"*\"",
                "*.",
                ":*",
                "https://",
                "[",
                "{",
                "\"\"\"",
                "'''",
                "=",
                "\n",
            ],
        )))
    },
};

struct AndroidXml {
    samples: Samples,
    views: Views,
}

impl Harness for AndroidXml {
    fn generate(&mut self, rng: &mut Rng) -> String {
        self.samples.generate(rng)
    }

    fn run(&mut self, output: &str) {
        let _ = keyboard_shown(output);
        let Ok(hierarchy) = parse_dump(output) else {
            return;
        };
        // As the backend reads a screen: kept nodes, refs by identity, an observation.
        let extent = Extent::rotated(
            Extent {
                width: 1080,
                height: 2400,
            },
            hierarchy.rotation,
        );
        let nodes = screen_nodes(&hierarchy, extent);
        let refs = RefTable::default().assign(nodes.iter().map(|n| &n.identity));
        assert_eq!(refs.len(), nodes.len());
        let screen = Screen {
            package: String::new(),
            rotation: hierarchy.rotation,
            keyboard_shown: false,
            nodes,
            refs,
        };
        let view = DeviceView {
            query: None,
            max_nodes: 200,
            max_chars: 8000,
            offset: 0,
            since: None,
        };
        let _ = self.views.observe(&screen, &view, "s1", false, None);
    }
}

/// `uiautomator dump` output, as the Android backend reads it.
pub const ANDROID_XML: Target = Target {
    name: "android-xml",
    entry: "tabwire_android::hierarchy::parse_dump, screen_nodes, RefTable::assign, Views::observe",
    build: || {
        let texts = [
            include_str!("../../../tests/fixtures/android/login.xml"),
            include_str!("../../../tests/fixtures/android/chat.xml"),
            include_str!("../../../tests/fixtures/android/products.xml"),
            include_str!("../../../tests/fixtures/android/remove_dialog.xml"),
            include_str!("../../../tests/fixtures/android/settings_network.xml"),
            include_str!("../../../tests/fixtures/android/offscreen.xml"),
            include_str!("../../../tests/fixtures/android/rn_signup.xml"),
            "ERROR: could not get idle state.",
            "UI hierchary dumped to: /dev/tty",
        ]
        .into_iter()
        .map(str::to_owned)
        .collect();
        Box::new(AndroidXml {
            samples: Samples::new(
                texts,
                &[],
                &[
                    "<node ",
                    "</node>",
                    "<hierarchy rotation=\"1\">",
                    "</hierarchy>",
                    " bounds=\"[0,0][1080,2400]\"",
                    " text=\"",
                    "\"",
                    "&amp;",
                    "&#0;",
                    "&#x10FFFF;",
                    "<!--",
                    "-->",
                    "<![CDATA[",
                    "]]>",
                    "<!DOCTYPE x [<!ENTITY a \"b\">]>",
                    "&a;",
                    " password=\"true\"",
                    " clickable=\"true\"",
                    "[-1,-1]",
                    "[99999999999,0]",
                    "/>",
                    "&#",
                    "&#55357;",
                    "&#56832;",
                    "&#xD800;",
                    "&#x;",
                ],
            ),
            views: Views::default(),
        })
    },
};

struct IosXml {
    samples: Samples,
    views: Views,
}

impl Harness for IosXml {
    fn generate(&mut self, rng: &mut Rng) -> String {
        self.samples.generate(rng)
    }

    fn run(&mut self, output: &str) {
        let _ = tabwire_ios::source::source_bundle_id(output);
        let Ok(source) = tabwire_ios::source::read_source(output, None) else {
            return;
        };
        // As the backend reads a screen: its nodes given their app, refs, an observation.
        let nodes = tabwire_ios::source::with_app(source.nodes, "com.example.app");
        assert!(
            nodes.iter().all(|n| !n.secret
                || n.value
                    .as_deref()
                    .is_none_or(|v| v == tabwire_protocol::REDACTED)),
            "a secure field's value is never shown"
        );
        let refs = RefTable::default().assign(nodes.iter().map(|n| &n.identity));
        let screen = Screen {
            package: "com.example.app".into(),
            rotation: 0,
            keyboard_shown: source.keyboard_shown,
            nodes,
            refs,
        };
        let view = DeviceView {
            query: None,
            max_nodes: 200,
            max_chars: 8000,
            offset: 0,
            since: None,
        };
        let _ = self.views.observe(&screen, &view, "s1", false, None);
    }
}

/// XCUITest page sources (WebDriverAgent's `GET /source`), as the iOS backend reads them.
pub const IOS_XML: Target = Target {
    name: "ios-xml",
    entry: "tabwire_ios::source::read_source, source_bundle_id, RefTable::assign, Views::observe",
    build: || {
        let texts = [
            include_str!("../../../devices/ios/testdata/theapp-login.xml"),
            include_str!("../../../devices/ios/testdata/shirates-registration-form-statusbar.xml"),
            include_str!("../../../devices/ios/testdata/shirates-settings-top-en.xml"),
            include_str!("../../../devices/ios/testdata/shirates-calendar-day-ja.xml"),
        ]
        .into_iter()
        .map(str::to_owned)
        .collect();
        Box::new(IosXml {
            samples: Samples::new(
                texts,
                &[],
                &[
                    "<XCUIElementTypeCell ",
                    "</XCUIElementTypeCell>",
                    "<XCUIElementTypeSecureTextField value=\"hunter2\" ",
                    "<XCUIElementTypeSwitch value=\"1\" ",
                    "<XCUIElementTypeKeyboard ",
                    "<XCUIElementTypeStatusBar>",
                    "<XCUIElementTypeOther>",
                    "</XCUIElementTypeOther>",
                    " visible=\"false\"",
                    " x=\"-99999\"",
                    " width=\"1e308\"",
                    " y=\"NaN\"",
                    " bundleId=\"com.x;rm\"",
                    "<?pi </XCUIElementTypeOther> ?>",
                    "<!--",
                    "-->",
                    "<![CDATA[",
                    "&amp;",
                    "&#0;",
                    "/>",
                ],
            ),
            views: Views::default(),
        })
    },
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_samples_are_accepted() {
        let jwt = jwt();
        for token in &jwt.tokens {
            assert!(jwt.auth.verify(token).is_ok());
        }
        // A re-signed token with its claims unchanged is as good as the original.
        let mut pieces = jwt.tokens[0].split('.');
        let header =
            String::from_utf8(URL_SAFE_NO_PAD.decode(pieces.next().unwrap()).unwrap()).unwrap();
        let claims =
            String::from_utf8(URL_SAFE_NO_PAD.decode(pieces.next().unwrap()).unwrap()).unwrap();
        assert!(jwt.auth.verify(&jwt.sign(&header, &claims)).is_ok());
        for text in include_str!("samples/policies.txt").split("\n---\n") {
            if let Err(error) = tabwire_hub::policy::parse(text) {
                panic!("{text}: {error}");
            }
        }
        let xml = include_str!("../../../tests/fixtures/android/login.xml");
        assert!(
            !screen_nodes(
                &parse_dump(xml).unwrap(),
                Extent {
                    width: 1080,
                    height: 2400
                }
            )
            .is_empty()
        );
    }
}
