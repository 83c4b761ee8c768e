//! The result contract of SPEC §8: every tool answers `{ok: true, data}` or
//! `{ok: false, error: {code, category, message, retryable, …}}` in `structuredContent`, with a
//! compact text rendering for the model beside it (not a second copy of the JSON).

use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{Value, json};
use tabwire_protocol::{ErrorCode, OpError};

/// A tool's successful answer.
pub struct ToolOutput {
    /// The machine contract, under `data`.
    pub data: Value,
    /// What the model reads.
    pub text: String,
}

/// A tool's failure.
#[derive(Debug, Clone)]
pub struct ToolError {
    /// The stable code.
    pub code: ErrorCode,
    /// What happened and what to do next.
    pub message: String,
    /// A click, keystroke or navigation may have taken effect before the failure.
    pub action_may_have_occurred: bool,
    /// The choices the caller can pick from (e.g. browsers, when none is selected).
    pub candidates: Option<Value>,
}

impl ToolError {
    /// An error with no side effects and no candidates.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ToolError {
            code,
            message: message.into(),
            action_may_have_occurred: false,
            candidates: None,
        }
    }

    /// An `INVALID_ARGUMENT` error.
    pub fn invalid(message: impl Into<String>) -> Self {
        ToolError::new(ErrorCode::InvalidArgument, message)
    }
}

impl From<OpError> for ToolError {
    fn from(error: OpError) -> Self {
        ToolError {
            code: error.code,
            message: error.message,
            action_may_have_occurred: error.action_may_have_occurred,
            candidates: None,
        }
    }
}

/// Wraps a successful output in the envelope.
pub fn success(output: ToolOutput) -> CallToolResult {
    let mut result = CallToolResult::success(vec![ContentBlock::text(output.text)]);
    result.structured_content = Some(json!({ "ok": true, "data": output.data }));
    result
}

/// Wraps a failure in the envelope, with `isError: true`.
pub fn failure(error: ToolError) -> CallToolResult {
    let mut text = format!("{}: {}", error.code, error.message);
    if let Some(Value::Array(candidates)) = &error.candidates {
        for candidate in candidates {
            text.push_str("\n- ");
            text.push_str(&candidate_line(candidate));
        }
    }
    if error.action_may_have_occurred {
        text.push_str("\nThe action may have taken effect: inspect the page before retrying.");
    }
    let mut body = json!({
        "code": error.code,
        "category": error.code.category(),
        "message": error.message,
        "retryable": error.code.retryable(),
    });
    if error.action_may_have_occurred {
        body["actionMayHaveOccurred"] = Value::Bool(true);
    }
    if let Some(candidates) = error.candidates {
        body["candidates"] = candidates;
    }
    let mut result = CallToolResult::error(vec![ContentBlock::text(text)]);
    result.structured_content = Some(json!({ "ok": false, "error": body }));
    result
}

/// One candidate as a line: its fields as `key=value`, strings quoted only when they contain
/// spaces.
fn candidate_line(candidate: &Value) -> String {
    match candidate {
        Value::Object(fields) => fields
            .iter()
            .map(|(key, value)| match value {
                Value::String(s) => format!("{key}={}", quote_if_spaced(s)),
                other => format!("{key}={other}"),
            })
            .collect::<Vec<_>>()
            .join(" "),
        other => other.to_string(),
    }
}

/// A string in double quotes, JSON-escaped, for text renderings.
pub fn quoted(s: &str) -> String {
    Value::String(s.to_owned()).to_string()
}

/// Quotes a string (JSON style) when it contains whitespace or quotes, so a line stays
/// unambiguous without quoting every simple value.
pub fn quote_if_spaced(s: &str) -> String {
    if s.is_empty() || s.chars().any(|c| c.is_whitespace() || c == '"') {
        quoted(s)
    } else {
        s.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn success_envelope() {
        let result = success(ToolOutput {
            data: json!({"tabs": []}),
            text: "no tabs".into(),
        });
        assert_eq!(result.is_error, Some(false));
        assert_eq!(
            result.structured_content,
            Some(json!({"ok": true, "data": {"tabs": []}}))
        );
    }

    #[test]
    fn failure_envelope_carries_category_and_candidates() {
        let mut error = ToolError::new(ErrorCode::BrowserNotSelected, "select one");
        error.candidates = Some(json!([{"browserId": "b1", "name": "Work Chrome"}]));
        let result = failure(error);
        assert_eq!(result.is_error, Some(true));
        let body = &result.structured_content.as_ref().unwrap()["error"];
        assert_eq!(body["code"], "BROWSER_NOT_SELECTED");
        assert_eq!(body["category"], "SESSION");
        assert_eq!(body["retryable"], false);
        assert!(body.get("actionMayHaveOccurred").is_none());
        let text = result.content[0].as_text().unwrap().text.clone();
        assert!(
            text.starts_with("BROWSER_NOT_SELECTED: select one"),
            "{text}"
        );
        assert!(
            text.contains(r#"browserId=b1 name="Work Chrome""#),
            "{text}"
        );
    }

    #[test]
    fn failure_after_possible_action_says_so() {
        let error: ToolError = OpError::new(ErrorCode::BridgeTimeout, "no answer")
            .action_may_have_occurred()
            .into();
        let result = failure(error);
        let body = &result.structured_content.as_ref().unwrap()["error"];
        assert_eq!(body["actionMayHaveOccurred"], true);
        assert_eq!(body["category"], "TIMEOUT");
        assert_eq!(body["retryable"], true);
    }
}
