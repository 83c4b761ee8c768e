//! What a request asks of a peer, and what comes back: the groups of operations put together.
//!
//! Each group lives in its own module, beside the results it produces, the way the tools are
//! grouped: [`observe`](crate::observe), [`tabs`](crate::tabs), [`actions`](crate::actions),
//! [`capture`](crate::capture) and [`storage`](crate::storage). This module only aggregates
//! them into [`Operation`] and [`OpResult`], and ties every request type to the type of its
//! answer ([`Ask`]), so a caller gets the answer it asked for or a typed mismatch, never a
//! result of another kind to pick apart.
//!
//! Adding an operation: its request struct and (if new) its answer struct in the group's
//! module, a variant in the group's op enum (and result enum), one line in [`asks!`] (and
//! [`answers!`]) below, and its policy need in [`Operation::page_need`] (which does not compile
//! until it is named there). A new group (devices) adds a variant to both enums here.

use serde::Serialize;

use crate::policy::Need;

use crate::actions::{
    ActOp, ActRequest, ActResult, Acted, Action, BatchRequest, BatchResult, DialogHandled,
    ElementState, GetTabHealth, HandleDialog, ReadStateRequest, Step, TabHealth,
};
use crate::capture::{
    CaptureOp, CaptureResult, CaptureState, ConsoleRecord, GetConsole, GetRequests,
    GetResponseBody, NetworkRecord, ResponseBody, SetConsoleCapture, SetNetworkCapture,
};
#[cfg(feature = "device")]
use crate::devices::{
    AppClosed, AppInstalled, CloseApp, DeviceActed, DeviceLogs, DeviceLogsRequest, DeviceOp,
    DeviceReleased, DeviceResult, DeviceScreenshot, DeviceScreenshotRequest, DeviceSnapshot,
    DeviceSwipe, DeviceTap, DeviceType, DismissAlert, DismissKeyboard, Foreground, InstallApp,
    LongPress, OpenApp, PressButton, Recording, ReleaseDevice, ScreenRecording, ScrollToElement,
    TapCoordinates,
};
use crate::files::{
    ChunkKept, ClipboardRequest, ClipboardText, Downloads, DownloadsRequest, PdfDocument,
    PdfRequest, UploadChunk,
};
use crate::mocks::{MockNetwork, MockState};
use crate::observation::Observation;
use crate::observe::{
    ContentFormat, ContentRequest, FrameList, GetSelectedText, ListFrames, ObserveOp,
    ObserveResult, Page, PageContent, Screenshot, ScreenshotRequest, SelectedText, SnapshotRequest,
};
use crate::recording::{ActionRecording, RecordActions};
use crate::records::Records;
use crate::storage::{
    Cookie, GetCookies, GetLocalStorage, StorageEntries, StorageEntry, StorageOp, StorageResult,
};
use crate::tabs::{
    CloseTab, ClosedTab, CreateTab, GetActiveTab, HandedBack, Handoff, HistoryStep, ListTabs,
    Navigate, Navigated, ReleaseTab, ReloadTab, SwitchTab, TabInfo, TabList, TabReleased, TabsOp,
    TabsResult,
};

/// What a [`crate::Request`] asks the extension to do, by group.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "group", rename_all = "camelCase", deny_unknown_fields)]
pub enum Operation {
    /// Snapshots, content, frames, selected text, screenshots.
    Observe(ObserveOp),
    /// Tabs and navigation.
    Tabs(TabsOp),
    /// Actions, batches, element state, dialogs, tab health.
    Act(ActOp),
    /// Network and console capture.
    Capture(CaptureOp),
    /// Cookies and local storage.
    Storage(StorageOp),
    /// A mobile device's screen, input, apps and log (served by device backends only; only
    /// with the `device` feature, which the extension's wasm leaves out).
    #[cfg(feature = "device")]
    Device(DeviceOp),
}

crate::tagged::deserialize_tagged!(Operation, "group", {
    "observe" => ObserveOp => Self::Observe,
    "tabs" => TabsOp => Self::Tabs,
    "act" => ActOp => Self::Act,
    "capture" => CaptureOp => Self::Capture,
    "storage" => StorageOp => Self::Storage,
    #[cfg(feature = "device")]
    "device" => DeviceOp => Self::Device,
});

impl Operation {
    /// What the operation needs from the policy of the page it runs on, and the URL to judge
    /// when it is not the tab's (cookies of a given URL); `None` for what the policy does not
    /// restrict there (a navigation is judged by where it goes). Every variant is named here,
    /// with no fallback: a new operation does not compile until its need is decided, so a new
    /// action cannot slip through as a read.
    pub fn page_need(&self) -> Option<(Need, Option<&str>)> {
        let need = match self {
            Operation::Observe(op) => match op {
                ObserveOp::Content(content) if content.format == ContentFormat::Html => {
                    Need::SensitiveRead
                }
                ObserveOp::Snapshot(_)
                | ObserveOp::ListFrames(_)
                | ObserveOp::Content(_)
                | ObserveOp::SelectedText(_)
                | ObserveOp::Screenshot(_)
                | ObserveOp::Pdf(_) => Need::Read,
            },
            Operation::Tabs(op) => match op {
                TabsOp::Close(_) => Need::Act,
                TabsOp::Reload(_) => Need::Read,
                // A recording holds what a person types: a sensitive read, which an origin's
                // rule can forbid (`sensitive = "deny"`). Stopping one's own is never refused.
                TabsOp::Record(record) if record.start => Need::SensitiveRead,
                TabsOp::Record(_) => return None,
                TabsOp::ListTabs(_)
                | TabsOp::GetActive(_)
                | TabsOp::Switch(_)
                | TabsOp::Create(_)
                | TabsOp::Navigate(_)
                | TabsOp::History(_)
                | TabsOp::Release(_)
                | TabsOp::Handoff(_) => return None,
            },
            Operation::Act(op) => match op {
                ActOp::Act(request) => match &request.action {
                    Action::Navigate { .. } => return None,
                    action if action.is_mutation() => Need::Act,
                    _ => Need::Read,
                },
                ActOp::Batch(batch) => {
                    let acts = batch.steps.iter().any(|step| match step {
                        Step::Act { action } => {
                            action.is_mutation() && !matches!(action, Action::Navigate { .. })
                        }
                        Step::Observe { .. } | Step::Content { .. } => false,
                    });
                    if acts { Need::Act } else { Need::Read }
                }
                ActOp::HandleDialog(_) => Need::Act,
                ActOp::ReadState(_) | ActOp::Health(_) => Need::Read,
                // Bytes kept for an upload, judged when the upload sets them; the session's
                // downloads, whose bytes are judged by where they came from.
                ActOp::UploadChunk(_) | ActOp::Downloads(_) => return None,
                // Judged on the tab's page: what is read may be pasted there, what is written
                // is meant for it.
                ActOp::Clipboard(clipboard) if clipboard.write.is_some() => Need::Act,
                ActOp::Clipboard(_) => Need::SensitiveRead,
            },
            Operation::Capture(op) => match op {
                CaptureOp::GetResponseBody(_) => Need::SensitiveRead,
                // Adding mocks changes what the page gets: an action on its origin (each
                // mocked URL's origin is judged too, where its requests are answered). Taking
                // one's own mocks away is never refused.
                CaptureOp::MockNetwork(mocks) if mocks.adds() => Need::Act,
                CaptureOp::MockNetwork(mocks) if mocks.requests.is_none() => return None,
                CaptureOp::MockNetwork(_) => Need::Read,
                CaptureOp::NetworkCapture(_)
                | CaptureOp::GetRequests(_)
                | CaptureOp::ConsoleCapture(_)
                | CaptureOp::GetConsole(_) => Need::Read,
            },
            Operation::Storage(op) => match op {
                StorageOp::Cookies(cookies) => {
                    return Some((Need::SensitiveRead, cookies.url.as_deref()));
                }
                StorageOp::LocalStorage(_) => Need::SensitiveRead,
            },
            // Devices judge apps, not pages (their backends gate each operation); a browser
            // refuses these, as an action meanwhile.
            #[cfg(feature = "device")]
            Operation::Device(_) => Need::Act,
        };
        Some((need, None))
    }

    /// Whether the operation can change the page. A mutation that times out or is cut off by a
    /// disconnect may have happened, and the agent is told so.
    pub fn is_mutation(&self) -> bool {
        match self {
            Operation::Tabs(op) => op.is_mutation(),
            Operation::Act(op) => op.is_mutation(),
            Operation::Capture(op) => op.is_mutation(),
            #[cfg(feature = "device")]
            Operation::Device(op) => op.is_mutation(),
            Operation::Observe(_) | Operation::Storage(_) => false,
        }
    }

    /// Whether its request carries the caller ([`crate::LeaseHolder`]): every operation that
    /// can change a tab (which the extension leases to the caller, or refuses while another
    /// session holds it), and giving a lease up. Reads never lease.
    pub fn carries_holder(&self) -> bool {
        self.is_mutation()
            || matches!(
                self,
                Operation::Tabs(TabsOp::Release(_) | TabsOp::Handoff(_) | TabsOp::Record(_))
            )
            || self.releases_device()
    }

    /// Whether it gives a device's lease up.
    fn releases_device(&self) -> bool {
        #[cfg(feature = "device")]
        if let Operation::Device(DeviceOp::Release(_)) = self {
            return true;
        }
        false
    }

    /// Whether the operation runs beside the tab's queue instead of in it: it is about the
    /// browser rather than a page, only reads what tabwire keeps, must work while the queue is
    /// stuck (health), or is what unblocks the page (a dialog).
    pub fn bypasses_queue(&self) -> bool {
        match self {
            Operation::Observe(op) => op.bypasses_queue(),
            Operation::Tabs(op) => op.bypasses_queue(),
            Operation::Act(op) => op.bypasses_queue(),
            Operation::Capture(op) => op.bypasses_queue(),
            Operation::Storage(op) => op.bypasses_queue(),
            // A device backend serialises every operation on one device.
            #[cfg(feature = "device")]
            Operation::Device(_) => false,
        }
    }
}

/// What an [`Operation`] produced, by group.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "group", rename_all = "camelCase", deny_unknown_fields)]
pub enum OpResult {
    /// From [`Operation::Observe`].
    Observe(ObserveResult),
    /// From [`Operation::Tabs`].
    Tabs(TabsResult),
    /// From [`Operation::Act`].
    Act(ActResult),
    /// From [`Operation::Capture`].
    Capture(CaptureResult),
    /// From [`Operation::Storage`].
    Storage(StorageResult),
    /// From `Operation::Device` (with the `device` feature).
    #[cfg(feature = "device")]
    Device(DeviceResult),
}

crate::tagged::deserialize_tagged!(OpResult, "group", {
    "observe" => ObserveResult => Self::Observe,
    "tabs" => TabsResult => Self::Tabs,
    "act" => ActResult => Self::Act,
    "capture" => CaptureResult => Self::Capture,
    "storage" => StorageResult => Self::Storage,
    #[cfg(feature = "device")]
    "device" => DeviceResult => Self::Device,
});

/// A request type and the type of its answer: the one mapping from an operation to its result.
///
/// The hub sends `request.into()` and reads the reply with [`Ask::answer`]; the extension
/// answers with `answer.into()`.
pub trait Ask: Into<Operation> {
    /// What the request is answered with.
    type Answer: Into<OpResult> + TryFrom<OpResult, Error = Box<OpResult>>;

    /// The answer carried by `result`, or `result` itself when it is of another kind (a
    /// mismatched peer).
    fn answer(result: OpResult) -> Result<Self::Answer, Box<OpResult>> {
        Self::Answer::try_from(result)
    }
}

/// Ties each request type to its place in [`Operation`] and to its answer type.
macro_rules! asks {
    ($($request:ty => $group:ident($op:ident::$variant:ident) -> $answer:ty;)*) => {$(
        impl From<$request> for Operation {
            fn from(request: $request) -> Self {
                Operation::$group($op::$variant(request))
            }
        }

        impl Ask for $request {
            type Answer = $answer;
        }
    )*};
}

/// Gives each answer type its place in [`OpResult`]. Every answer type has exactly one.
macro_rules! answers {
    ($($answer:ty => $group:ident($result:ident::$variant:ident);)*) => {$(
        impl From<$answer> for OpResult {
            fn from(answer: $answer) -> Self {
                OpResult::$group($result::$variant(answer))
            }
        }

        impl TryFrom<OpResult> for $answer {
            type Error = Box<OpResult>;

            fn try_from(result: OpResult) -> Result<Self, Box<OpResult>> {
                match result {
                    OpResult::$group($result::$variant(answer)) => Ok(answer),
                    other => Err(Box::new(other)),
                }
            }
        }
    )*};
}

asks! {
    SnapshotRequest => Observe(ObserveOp::Snapshot) -> Observation<Page>;
    ListFrames => Observe(ObserveOp::ListFrames) -> FrameList;
    ContentRequest => Observe(ObserveOp::Content) -> PageContent;
    GetSelectedText => Observe(ObserveOp::SelectedText) -> SelectedText;
    ScreenshotRequest => Observe(ObserveOp::Screenshot) -> Screenshot;
    PdfRequest => Observe(ObserveOp::Pdf) -> PdfDocument;
    ListTabs => Tabs(TabsOp::ListTabs) -> TabList;
    GetActiveTab => Tabs(TabsOp::GetActive) -> TabInfo;
    SwitchTab => Tabs(TabsOp::Switch) -> TabInfo;
    CloseTab => Tabs(TabsOp::Close) -> ClosedTab;
    CreateTab => Tabs(TabsOp::Create) -> TabInfo;
    Navigate => Tabs(TabsOp::Navigate) -> Navigated;
    HistoryStep => Tabs(TabsOp::History) -> TabInfo;
    ReloadTab => Tabs(TabsOp::Reload) -> TabInfo;
    Handoff => Tabs(TabsOp::Handoff) -> HandedBack;
    RecordActions => Tabs(TabsOp::Record) -> ActionRecording;
    ReleaseTab => Tabs(TabsOp::Release) -> TabReleased;
    ActRequest => Act(ActOp::Act) -> Acted;
    BatchRequest => Act(ActOp::Batch) -> BatchResult;
    ReadStateRequest => Act(ActOp::ReadState) -> ElementState;
    HandleDialog => Act(ActOp::HandleDialog) -> DialogHandled;
    GetTabHealth => Act(ActOp::Health) -> TabHealth;
    UploadChunk => Act(ActOp::UploadChunk) -> ChunkKept;
    DownloadsRequest => Act(ActOp::Downloads) -> Downloads;
    ClipboardRequest => Act(ActOp::Clipboard) -> ClipboardText;
    SetNetworkCapture => Capture(CaptureOp::NetworkCapture) -> CaptureState;
    GetRequests => Capture(CaptureOp::GetRequests) -> Records<NetworkRecord>;
    GetResponseBody => Capture(CaptureOp::GetResponseBody) -> ResponseBody;
    SetConsoleCapture => Capture(CaptureOp::ConsoleCapture) -> CaptureState;
    GetConsole => Capture(CaptureOp::GetConsole) -> Records<ConsoleRecord>;
    MockNetwork => Capture(CaptureOp::MockNetwork) -> MockState;
    GetCookies => Storage(StorageOp::Cookies) -> StorageEntries<Cookie>;
    GetLocalStorage => Storage(StorageOp::LocalStorage) -> StorageEntries<StorageEntry>;
}

#[cfg(feature = "device")]
asks! {
    DeviceSnapshot => Device(DeviceOp::Snapshot) -> Observation<Foreground>;
    DeviceTap => Device(DeviceOp::Tap) -> DeviceActed;
    TapCoordinates => Device(DeviceOp::TapCoordinates) -> DeviceActed;
    LongPress => Device(DeviceOp::LongPress) -> DeviceActed;
    DeviceType => Device(DeviceOp::Type) -> DeviceActed;
    DeviceSwipe => Device(DeviceOp::Swipe) -> DeviceActed;
    PressButton => Device(DeviceOp::PressButton) -> DeviceActed;
    OpenApp => Device(DeviceOp::OpenApp) -> DeviceActed;
    CloseApp => Device(DeviceOp::CloseApp) -> AppClosed;
    DismissKeyboard => Device(DeviceOp::DismissKeyboard) -> DeviceActed;
    DeviceScreenshotRequest => Device(DeviceOp::Screenshot) -> DeviceScreenshot;
    DeviceLogsRequest => Device(DeviceOp::Logs) -> DeviceLogs;
    ReleaseDevice => Device(DeviceOp::Release) -> DeviceReleased;
    DismissAlert => Device(DeviceOp::DismissAlert) -> DeviceActed;
    ScrollToElement => Device(DeviceOp::ScrollToElement) -> DeviceActed;
    InstallApp => Device(DeviceOp::InstallApp) -> AppInstalled;
    ScreenRecording => Device(DeviceOp::ScreenRecording) -> Recording;
}

answers! {
    Observation<Page> => Observe(ObserveResult::Snapshot);
    FrameList => Observe(ObserveResult::Frames);
    PageContent => Observe(ObserveResult::Content);
    SelectedText => Observe(ObserveResult::SelectedText);
    Screenshot => Observe(ObserveResult::Screenshot);
    PdfDocument => Observe(ObserveResult::Pdf);
    TabList => Tabs(TabsResult::Tabs);
    TabInfo => Tabs(TabsResult::Tab);
    ClosedTab => Tabs(TabsResult::Closed);
    Navigated => Tabs(TabsResult::Navigated);
    HandedBack => Tabs(TabsResult::HandedBack);
    ActionRecording => Tabs(TabsResult::Recording);
    TabReleased => Tabs(TabsResult::Released);
    Acted => Act(ActResult::Acted);
    BatchResult => Act(ActResult::Batch);
    ElementState => Act(ActResult::ElementState);
    DialogHandled => Act(ActResult::DialogHandled);
    TabHealth => Act(ActResult::Health);
    ChunkKept => Act(ActResult::ChunkKept);
    Downloads => Act(ActResult::Downloads);
    ClipboardText => Act(ActResult::Clipboard);
    CaptureState => Capture(CaptureResult::Capture);
    Records<NetworkRecord> => Capture(CaptureResult::Requests);
    Records<ConsoleRecord> => Capture(CaptureResult::Console);
    ResponseBody => Capture(CaptureResult::Body);
    MockState => Capture(CaptureResult::Mocks);
    StorageEntries<Cookie> => Storage(StorageResult::Cookies);
    StorageEntries<StorageEntry> => Storage(StorageResult::LocalStorage);
}

#[cfg(feature = "device")]
answers! {
    Observation<Foreground> => Device(DeviceResult::Snapshot);
    DeviceActed => Device(DeviceResult::Acted);
    AppClosed => Device(DeviceResult::Closed);
    DeviceScreenshot => Device(DeviceResult::Screenshot);
    DeviceLogs => Device(DeviceResult::Logs);
    DeviceReleased => Device(DeviceResult::Released);
    Recording => Device(DeviceResult::Recording);
    AppInstalled => Device(DeviceResult::Installed);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::actions::WaitCondition;
    use crate::observe::ImageFormat;
    use crate::{Delta, ElementRef, Node, Target};

    #[test]
    fn operations_round_trip() {
        let ops: [Operation; 9] = [
            ListTabs {}.into(),
            Navigate {
                url: "http://127.0.0.1/".into(),
            }
            .into(),
            SnapshotRequest {
                frame_id: Some(3),
                scope: Some(Target::Css("main".into())),
                query: Some("Row 1500".into()),
                max_nodes: 10,
                max_chars: 100,
                offset: 20,
                since: Some(4),
                include_hidden: true,
            }
            .into(),
            ListFrames {}.into(),
            ContentRequest {
                frame_id: None,
                scope: None,
                format: ContentFormat::Html,
                max_chars: 1000,
                offset: 0,
            }
            .into(),
            ActRequest {
                action: Action::Type {
                    target: Target::Ref(ElementRef::top(4)),
                    text: "alice".into(),
                    clear: true,
                    mode: Default::default(),
                    input_method: Default::default(),
                    allow_readonly: false,
                },
                observe: None,
            }
            .into(),
            GetTabHealth {
                recover_debugger: true,
            }
            .into(),
            ScreenshotRequest {
                format: ImageFormat::Jpeg,
                quality: Some(70),
                max_width: 800,
                full_page: true,
                target: None,
                with_snapshot: None,
            }
            .into(),
            GetRequests(crate::RecordsRequest {
                limit: 5,
                offset: 0,
                filter: Some("api".into()),
                levels: vec![],
                max_chars: 1000,
                clear_after: false,
            })
            .into(),
        ];
        for op in ops {
            let json = serde_json::to_string(&op).unwrap();
            assert_eq!(serde_json::from_str::<Operation>(&json).unwrap(), op);
        }
        let json = serde_json::to_value(Operation::from(SnapshotRequest {
            frame_id: None,
            scope: None,
            query: None,
            max_nodes: 1,
            max_chars: 2,
            offset: 0,
            since: None,
            include_hidden: false,
        }))
        .unwrap();
        assert_eq!(
            json,
            serde_json::json!({"group": "observe", "kind": "snapshot", "maxNodes": 1,
                               "maxChars": 2, "offset": 0})
        );
        assert_eq!(
            serde_json::to_value(Operation::from(ListTabs {})).unwrap(),
            serde_json::json!({"group": "tabs", "kind": "listTabs"})
        );
    }

    #[test]
    fn operation_rejects_unknown_fields() {
        for json in [
            r#"{"group":"tabs","kind":"navigate","url":"http://x/","extra":1}"#,
            r#"{"group":"tabs","kind":"listTabs","extra":1}"#,
            r#"{"group":"tabs","kind":"snapshot","maxNodes":1,"maxChars":1}"#,
            r#"{"kind":"listTabs"}"#,
        ] {
            assert!(serde_json::from_str::<Operation>(json).is_err(), "{json}");
        }
    }

    #[test]
    fn results_round_trip() {
        let page = Page {
            tab_id: 3,
            frame_id: None,
            url: "http://x/".into(),
            title: "X".into(),
            document_id: "D1".into(),
        };
        let nodes = vec![
            Node::new(Some(ElementRef::top(1)), "button \"Go\"".into()),
            Node::new(None, "Hello".into()),
        ];
        let delta = Delta {
            since: 1,
            changed: vec![],
            removed: vec![ElementRef::top(9)],
            order: None,
            view_changed: false,
        };
        let result = OpResult::from(Observation::new(page, 2, nodes, Some(delta)));
        let json = serde_json::to_string(&result).unwrap();
        assert!(
            json.contains(r#""delta":{"since":1,"changed":[],"removed":["@e9"]}"#),
            "{json}"
        );
        assert!(
            json.starts_with(r#"{"group":"observe","kind":"snapshot","of":{"tabId":3,"#),
            "{json}"
        );
        assert!(!json.contains("reset"), "{json}");
        assert!(
            json.contains(r#"{"ref":"@e1","text":"button \"Go\""}"#),
            "{json}"
        );
        assert!(json.contains(r#"{"text":"Hello"}"#), "{json}");
        assert_eq!(serde_json::from_str::<OpResult>(&json).unwrap(), result);
    }

    #[test]
    fn an_answer_of_another_kind_is_handed_back() {
        let tabs = OpResult::from(TabList { tabs: vec![] });
        assert_eq!(ListTabs::answer(tabs.clone()), Ok(TabList { tabs: vec![] }));
        assert_eq!(SwitchTab::answer(tabs.clone()), Err(Box::new(tabs)));
        let body = OpResult::from(Records::<ConsoleRecord> {
            tab_id: 1,
            capturing: true,
            records: vec![],
            total: 0,
            offset: 0,
            next_offset: None,
            evicted: 0,
            truncated: false,
        });
        assert!(GetRequests::answer(body.clone()).is_err());
        assert!(GetConsole::answer(body).is_ok());
    }

    #[test]
    fn only_page_changing_operations_are_mutations() {
        assert!(!Operation::from(ListTabs {}).is_mutation());
        let act = |action| {
            Operation::from(ActRequest {
                action,
                observe: None,
            })
        };
        assert!(
            act(Action::Hover {
                target: Target::Css("a".into())
            })
            .is_mutation()
        );
        assert!(
            !act(Action::Wait {
                condition: WaitCondition::Delay { ms: 5 },
                timeout_ms: 10,
            })
            .is_mutation()
        );
        assert!(Operation::from(SwitchTab {}).is_mutation());
        assert!(!Operation::from(GetActiveTab {}).is_mutation());
        assert!(
            Operation::from(HandleDialog {
                accept: true,
                prompt_text: None
            })
            .is_mutation()
        );
    }

    /// A click on `a`, a 5 ms wait: one action that changes the page, one that does not.
    fn click_and_wait() -> (Action, Action) {
        let click = Action::Click {
            target: Target::Css("a".into()),
            mode: Default::default(),
            button: Default::default(),
            click_count: 1,
            wait_until: None,
            wait_for: None,
        };
        let wait = Action::Wait {
            condition: WaitCondition::Delay { ms: 5 },
            timeout_ms: 10,
        };
        (click, wait)
    }

    fn act(action: &Action) -> Operation {
        Operation::from(ActRequest {
            action: action.clone(),
            observe: None,
        })
    }

    fn batch(actions: &[&Action]) -> Operation {
        Operation::from(BatchRequest {
            steps: actions
                .iter()
                .map(|action| crate::Step::Act {
                    action: (*action).clone(),
                })
                .collect(),
            observe: None,
        })
    }

    #[test]
    fn what_changes_a_page_is_judged_as_an_action_there() {
        use crate::files::ClipboardRequest;
        let (click, wait) = click_and_wait();
        let need = |op: Operation| op.page_need().map(|(need, _)| need);
        // Every mutation of the page is an action on it, however it is sent.
        for op in [
            act(&click),
            batch(&[&wait, &click]),
            HandleDialog {
                accept: true,
                prompt_text: None,
            }
            .into(),
            CloseTab {}.into(),
            ClipboardRequest {
                write: Some("x".into()),
            }
            .into(),
        ] {
            assert_eq!(need(op.clone()), Some(Need::Act), "{op:?}");
        }
        assert_eq!(need(act(&wait)), Some(Need::Read));
        assert_eq!(need(batch(&[&wait])), Some(Need::Read));
        assert_eq!(
            need(ClipboardRequest { write: None }.into()),
            Some(Need::SensitiveRead)
        );
        // A navigation is judged by where it goes.
        assert_eq!(need(Navigate { url: "x".into() }.into()), None);
        let cookies = Operation::from(GetCookies {
            url: Some("https://a.example/".into()),
            name: None,
            max_chars: 100,
        });
        assert_eq!(
            cookies.page_need(),
            Some((Need::SensitiveRead, Some("https://a.example/")))
        );
    }

    #[test]
    fn changing_calls_and_releases_carry_the_caller_and_reads_do_not() {
        use crate::tabs::HistoryDirection;
        let (click, wait) = click_and_wait();
        for op in [
            act(&click),
            Navigate { url: "x".into() }.into(),
            HistoryStep {
                direction: HistoryDirection::Back,
            }
            .into(),
            ReloadTab {
                bypass_cache: false,
            }
            .into(),
            CloseTab {}.into(),
            SwitchTab {}.into(),
            CreateTab {
                url: None,
                active: false,
                new_window: false,
            }
            .into(),
            batch(&[&wait, &click]),
            ReleaseTab {}.into(),
        ] {
            assert!(op.carries_holder(), "{op:?}");
        }
        assert!(!Operation::from(ReleaseTab {}).is_mutation());
        for op in [
            Operation::from(ListTabs {}),
            GetActiveTab {}.into(),
            batch(&[&wait]),
            act(&wait),
            GetTabHealth::default().into(),
            ListFrames {}.into(),
        ] {
            assert!(!op.carries_holder(), "{op:?}");
        }
    }

    #[test]
    fn browser_wide_and_unblocking_operations_bypass_the_queue() {
        for op in [
            Operation::from(ListTabs {}),
            GetActiveTab {}.into(),
            GetTabHealth::default().into(),
            HandleDialog {
                accept: false,
                prompt_text: None,
            }
            .into(),
            SetConsoleCapture { on: true }.into(),
            GetCookies {
                url: None,
                name: None,
                max_chars: 300,
            }
            .into(),
        ] {
            assert!(op.bypasses_queue(), "{op:?}");
        }
        for op in [
            Operation::from(Navigate { url: "x".into() }),
            SwitchTab {}.into(),
            ListFrames {}.into(),
            GetSelectedText { max_chars: 5 }.into(),
            GetLocalStorage {
                filter: None,
                max_chars: 300,
            }
            .into(),
        ] {
            assert!(!op.bypasses_queue(), "{op:?}");
        }
    }
}
