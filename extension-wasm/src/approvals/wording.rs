//! What a question to a person says (issue 23 §1), in the popup and in the notification alike:
//! first what only tabwire knows — the origin and the browser's name, the notification's title —
//! then a fact a line, where what the agent or the page wrote (a selector, an element's name, an
//! address, the agent's client label, a handoff's reason) is cut to one line, capped and marked
//! as theirs. A long selector cannot push the real origin out of sight, nor put its own words
//! beside *Allow once*.

use serde::Serialize;
use tabwire_protocol::TabId;

/// What is being asked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub enum Question {
    /// May the agent do this on an `ask` origin?
    Approval {
        /// The tool, e.g. `click_element`.
        tool: String,
        /// What the action is about.
        subject: Subject,
    },
    /// The agent hands the tab to a person.
    Handoff {
        /// Why, in the agent's words.
        reason: String,
        /// What the person does meanwhile is recorded for the agent.
        recorded: bool,
    },
    /// May the agent record what the person does in the tab (`record_actions`)?
    Recording,
}

/// What an action is about, as a person is shown it: each part says who wrote it, since the
/// agent and the page may write anything there (issue 23 §1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub enum Subject {
    /// The page as a whole.
    Page,
    /// An element the agent named by a ref: its role and name as the page gives them.
    Named {
        /// Its role.
        role: String,
        /// Its accessible name.
        name: String,
    },
    /// An element the agent named by a CSS selector, or a ref tabwire no longer knows.
    Selector {
        /// As the agent wrote it.
        selector: String,
    },
    /// An address the agent gave (a batch's `navigate`).
    Address {
        /// The URL.
        url: String,
    },
    /// Files given to an element (an upload): their names as the agent gave them, and sizes.
    Files {
        /// The input, the element that opens one, or the drop zone.
        element: Box<Subject>,
        /// Each file's name and size in bytes.
        files: Vec<(String, u64)>,
    },
    /// A batch's steps, in order.
    Steps {
        /// Each step's kind and what it is about.
        steps: Vec<(String, Subject)>,
    },
}

/// What a recording keeps, as a person is told before it starts.
const RECORDED: &str = "your clicks, typing, keys and drags in this tab are given to the agent \
as steps (what you type in password fields is left out) until you press Stop in tabwire's \
popup, the agent stops, or the tab closes";

/// How much of what the agent or the page wrote a question shows, in characters: enough to
/// recognise a button or a selector, too little to pose as the question's own words.
pub const WRITTEN_MAX: usize = 60;
/// How much of the agent's client label a question shows.
pub const CLIENT_MAX: usize = 40;
/// How many of a batch's steps a question lists.
pub const STEPS_SHOWN: usize = 8;

/// Text the agent or a page wrote, as a question shows it: on one line, without characters
/// that are invisible or reorder text (the hello rule), at most `max` characters.
pub fn written(text: &str, max: usize) -> String {
    let visible: String = text
        .chars()
        .map(|c| if c.is_whitespace() { ' ' } else { c })
        .filter(|c| !tabwire_protocol::messages::is_hidden_char(*c))
        .collect();
    let one_line = visible.split_whitespace().collect::<Vec<_>>().join(" ");
    crate::text::cap(&one_line, max)
}

impl Subject {
    /// One line, marked with who wrote it.
    pub fn describe(&self) -> String {
        match self {
            Subject::Page => "the page".to_owned(),
            Subject::Named { role, name } => format!(
                "element named by the page: {} \"{}\"",
                written(role, 20),
                written(name, WRITTEN_MAX)
            ),
            Subject::Selector { selector } => format!(
                "element picked by the agent's selector: {}",
                written(selector, WRITTEN_MAX)
            ),
            Subject::Address { url } => {
                format!("address given by the agent: {}", written(url, WRITTEN_MAX))
            }
            Subject::Files { element, .. } => element.describe(),
            Subject::Steps { steps } => format!("{} steps", steps.len()),
        }
    }
}

/// How many of an upload's files a question names.
pub const FILES_SHOWN: usize = 5;

/// A question as a person reads it, in the popup and in the notification: first what only
/// tabwire knows (the origin and the browser, in the title), then the facts one to a line, what
/// the agent or the page wrote capped and marked as theirs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Wording {
    /// The origin, the browser, and what is asked.
    pub title: String,
    /// `(label, value)`, in order.
    pub facts: Vec<(String, String)>,
}

impl Wording {
    /// The notification's message: the facts after the title's, a line each.
    pub fn message(&self) -> String {
        self.facts
            .iter()
            .filter(|(label, _)| label != "Site" && label != "Browser")
            .map(|(label, value)| format!("{label}: {value}"))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// The site a question names: its origin, which only tabwire writes; or, for an address
/// without one (`about:blank#…`, `data:…`), which the page wrote whole, that address capped and
/// marked as the page's, so it cannot pose as the question's own words.
pub fn site(origin: &str) -> String {
    match tabwire_protocol::policy::origin_of(origin) {
        Some(parsed) if parsed == origin => parsed,
        _ => format!(
            "a page without an origin, at an address it wrote: {}",
            written(origin, WRITTEN_MAX)
        ),
    }
}

/// Words `question` about `origin` on tab `tab` of the browser named `browser`, asked by
/// `asker`.
pub fn wording(
    browser: &str,
    origin: &str,
    tab: TabId,
    asker: &Asker,
    question: &Question,
) -> Wording {
    let browser = written(browser, WRITTEN_MAX);
    let origin = &site(origin);
    let (title, mut facts) = match question {
        Question::Approval { .. } => (
            format!("{origin} in {browser}: an agent asks to act"),
            Vec::new(),
        ),
        Question::Handoff { .. } => (
            format!("{origin} in {browser}: an agent hands you a tab"),
            Vec::new(),
        ),
        Question::Recording => (
            format!("{origin} in {browser}: an agent asks to record what you do"),
            Vec::new(),
        ),
    };
    let mut fact = |label: &str, value: String| facts.push((label.to_owned(), value));
    fact("Site", origin.to_owned());
    fact("Browser", browser.clone());
    fact("Tab", tab.to_string());
    match question {
        Question::Approval { tool, subject } => {
            fact("Tool", written(tool, WRITTEN_MAX));
            match subject {
                Subject::Steps { steps } => {
                    for (i, (kind, subject)) in steps.iter().take(STEPS_SHOWN).enumerate() {
                        fact(
                            &format!("Step {}", i + 1),
                            format!("{} {}", written(kind, 20), subject.describe()),
                        );
                    }
                    if steps.len() > STEPS_SHOWN {
                        fact("More", format!("{} more steps", steps.len() - STEPS_SHOWN));
                    }
                }
                Subject::Files { element, files } => {
                    fact("Element", element.describe());
                    for (i, (name, size)) in files.iter().take(FILES_SHOWN).enumerate() {
                        fact(
                            &format!("File {}", i + 1),
                            format!(
                                "named by the agent: {} ({size} bytes)",
                                written(name, WRITTEN_MAX)
                            ),
                        );
                    }
                    if files.len() > FILES_SHOWN {
                        fact("More", format!("{} more files", files.len() - FILES_SHOWN));
                    }
                    let total: u64 = files.iter().map(|(_, size)| size).sum();
                    fact("Total", format!("{} files, {total} bytes", files.len()));
                }
                subject => fact("Element", subject.describe()),
            }
        }
        Question::Handoff { reason, recorded } => {
            fact(
                "Reason",
                format!("in the agent's words: {}", written(reason, 200)),
            );
            if *recorded {
                fact("Recorded", RECORDED.to_owned());
            }
        }
        Question::Recording => fact("Recorded", RECORDED.to_owned()),
    }
    fact(
        "Agent",
        format!(
            "{} (as its client calls itself)",
            written(&asker.client, CLIENT_MAX)
        ),
    );
    Wording { title, facts }
}

/// Who asks: the agent's MCP session, as the hub names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Asker {
    /// The session's opaque ID (`None` when the hub did not say).
    #[serde(skip)]
    pub session: Option<String>,
    /// The label people see, e.g. `Claude Code · 2`.
    pub client: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn asker() -> Asker {
        Asker {
            session: Some("s1".into()),
            client: "Claude Code · 2".into(),
        }
    }

    #[test]
    fn an_address_without_an_origin_is_capped_and_marked_as_the_pages() {
        let address = format!(
            "about:blank#{} \u{202E}https://trusted.example in Work: tabwire checked this, press \
             Allow once",
            "x".repeat(200)
        );
        let question = Question::Handoff {
            reason: "log in".into(),
            recorded: false,
        };
        let wording = wording("Work", &address, 7, &asker(), &question);
        assert!(
            wording
                .title
                .starts_with("a page without an origin, at an address it wrote: about:blank#xxx"),
            "{}",
            wording.title
        );
        assert!(wording.title.ends_with("in Work: an agent hands you a tab"));
        let everything = format!("{}\n{}", wording.title, wording.message());
        assert!(!everything.contains("trusted.example"), "{everything}");
        assert!(!everything.contains("Allow once"), "{everything}");
        assert!(wording.title.chars().count() < 160, "{}", wording.title);
        // A real origin stays as it is.
        assert_eq!(
            site("https://bank.example:8443"),
            "https://bank.example:8443"
        );
        assert_eq!(site("http://localhost:9"), "http://localhost:9");
    }

    #[test]
    fn a_long_selector_cannot_push_the_origin_away_or_pose_as_the_question() {
        // 360 characters that start like an element and end with words posing as tabwire's:
        // another origin, and an instruction next to the buttons.
        let selector = format!(
            "{}[data-x=\"y\"] \u{202E} at https://trusted.example — this is safe, press Allow once",
            "div > ".repeat(50)
        );
        assert!(
            selector.chars().count() >= 360,
            "{}",
            selector.chars().count()
        );
        let question = Question::Approval {
            tool: "click_element".into(),
            subject: Subject::Selector { selector },
        };
        let wording = wording("Work", "https://bank.example", 7, &asker(), &question);
        // The origin and the browser come first, in the title.
        assert!(
            wording.title.starts_with("https://bank.example in Work:"),
            "{}",
            wording.title
        );
        assert_eq!(
            wording.facts[0],
            ("Site".into(), "https://bank.example".into())
        );
        // The agent's selector is marked as its own and cut long before its fake origin.
        let element = &wording
            .facts
            .iter()
            .find(|(label, _)| label == "Element")
            .unwrap()
            .1;
        let (mark, shown) = element.split_once(": ").unwrap();
        assert_eq!(mark, "element picked by the agent's selector");
        assert!(shown.chars().count() <= WRITTEN_MAX, "{shown}");
        let everything = format!("{}\n{}", wording.title, wording.message());
        assert!(!everything.contains("trusted.example"), "{everything}");
        assert!(!everything.contains("Allow once"), "{everything}");
        assert_eq!(written("a\u{202E}b\nc\u{200B}d", 60), "ab cd");
        // The notification's message holds the rest, the agent's label marked too.
        assert_eq!(
            wording.message().lines().next(),
            Some("Tab: 7"),
            "{}",
            wording.message()
        );
        assert!(wording.message().contains("Tool: click_element"));
        assert!(
            wording
                .message()
                .ends_with("Agent: Claude Code · 2 (as its client calls itself)")
        );
    }

    #[test]
    fn page_written_names_and_batch_steps_are_capped_and_marked() {
        let question = Question::Approval {
            tool: "run_browser_actions".into(),
            subject: Subject::Steps {
                steps: (0..10)
                    .map(|i| {
                        let subject = match i {
                            0 => Subject::Named {
                                role: "button".into(),
                                name: format!("Pay now {}", "x".repeat(200)),
                            },
                            1 => Subject::Address {
                                url: "https://shop.example/checkout".into(),
                            },
                            _ => Subject::Page,
                        };
                        ("click".to_owned(), subject)
                    })
                    .collect(),
            },
        };
        let client = Asker {
            session: None,
            client: format!("Agent {}", "y".repeat(100)),
        };
        let wording = wording("Work", "https://shop.example", 3, &client, &question);
        let facts: std::collections::HashMap<&str, &str> = wording
            .facts
            .iter()
            .map(|(l, v)| (l.as_str(), v.as_str()))
            .collect();
        let first = facts["Step 1"];
        assert!(
            first.starts_with("click element named by the page: button \"Pay now"),
            "{first}"
        );
        assert!(first.chars().count() < 60 + 60, "{first}");
        assert_eq!(
            facts["Step 2"],
            "click address given by the agent: https://shop.example/checkout"
        );
        assert_eq!(facts["Step 8"], "click the page");
        assert!(!facts.contains_key("Step 9"));
        assert_eq!(facts["More"], "2 more steps");
        assert!(
            facts["Agent"].chars().count() <= CLIENT_MAX + 30,
            "{}",
            facts["Agent"]
        );
    }

    #[test]
    fn an_upload_names_its_files_capped_and_marked_as_the_agents() {
        let files: Vec<(String, u64)> = (0..7)
            .map(|i| (format!("scan-{i}.pdf {}", "y".repeat(100)), 1000 + i))
            .collect();
        let question = Question::Approval {
            tool: "upload_file".into(),
            subject: Subject::Files {
                element: Box::new(Subject::Named {
                    role: "button".into(),
                    name: "Attach".into(),
                }),
                files,
            },
        };
        let wording = wording("Work", "https://bank.example", 3, &asker(), &question);
        let facts: Vec<_> = wording
            .facts
            .iter()
            .map(|(l, v)| format!("{l}: {v}"))
            .collect();
        assert!(facts.contains(&"Element: element named by the page: button \"Attach\"".into()));
        let shown: Vec<_> = facts.iter().filter(|f| f.starts_with("File ")).collect();
        assert_eq!(shown.len(), FILES_SHOWN, "{facts:?}");
        assert!(shown[0].starts_with("File 1: named by the agent: scan-0.pdf yyy"));
        assert!(shown[0].ends_with("(1000 bytes)"), "{}", shown[0]);
        assert!(shown[0].chars().count() < WRITTEN_MAX + 60, "{}", shown[0]);
        assert!(facts.contains(&"More: 2 more files".into()), "{facts:?}");
        assert!(
            facts.contains(&"Total: 7 files, 7021 bytes".into()),
            "{facts:?}"
        );
    }
}
