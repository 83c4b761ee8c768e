//! The little the shim needs to know about JSON-RPC lines: which are requests (and their IDs),
//! which are responses, and how to answer a request itself when the hub cannot.
//!
//! This is line inspection, not MCP: the shim never interprets methods beyond recognising the
//! `initialize` handshake it must replay to a restarted hub.

use serde_json::{Value, json};

/// What a line is, as far as the shim cares.
#[derive(Debug, PartialEq)]
pub enum Kind {
    /// A request expecting a response; `id` is the request ID as JSON text.
    Request { id: String, method: String },
    /// A notification (no ID).
    Notification { method: String },
    /// A response to an earlier request.
    Response { id: String },
    /// Anything else (batches, garbage): forwarded untouched and not tracked.
    Other,
}

/// Classifies one line.
pub fn classify(line: &str) -> Kind {
    let Ok(Value::Object(message)) = serde_json::from_str::<Value>(line) else {
        return Kind::Other;
    };
    let id = message
        .get("id")
        .filter(|id| !id.is_null())
        .map(Value::to_string);
    let method = message
        .get("method")
        .and_then(Value::as_str)
        .map(str::to_owned);
    match (id, method) {
        (Some(id), Some(method)) => Kind::Request { id, method },
        (None, Some(method)) => Kind::Notification { method },
        (Some(id), None) => Kind::Response { id },
        (None, None) => Kind::Other,
    }
}

/// The request ID (as JSON text) a `notifications/cancelled` line cancels, if it is one.
pub fn cancelled_request(line: &str) -> Option<String> {
    let message: Value = serde_json::from_str(line).ok()?;
    if message.get("method")?.as_str()? != "notifications/cancelled" {
        return None;
    }
    let id = message.get("params")?.get("requestId")?;
    (!id.is_null()).then(|| id.to_string())
}

/// Whether a response line carries a result (not an error).
pub fn is_success(line: &str) -> bool {
    serde_json::from_str::<Value>(line)
        .ok()
        .is_some_and(|message| message.get("result").is_some())
}

/// JSON-RPC error code for "the link to the hub dropped while this request was in flight".
pub const OUTCOME_UNKNOWN: i64 = -32001;
/// JSON-RPC error code for "the hub was unreachable; the request was never sent".
pub const NOT_SENT: i64 = -32002;

/// An error response for request `id` (given as JSON text, as [`classify`] returns it).
///
/// The ID goes back as the very text `classify` made, not read and printed again: an ID past
/// 2^64 is read as a float, and each reading and printing could move it (found by the fuzz
/// target `shim-lines`; with serde_json's `float_roundtrip` the one reading in `classify` is
/// exact), leaving the client an answer it cannot match to its request.
pub fn error_response(id: &str, code: i64, message: &str) -> String {
    let id = match serde_json::from_str::<Value>(id) {
        Ok(_) => id.trim(),
        Err(_) => "null",
    };
    let error = json!({"code": code, "message": message});
    format!(r#"{{"jsonrpc":"2.0","id":{id},"error":{error}}}"#)
}

/// The cached `initialize` request with its ID replaced, for replaying the handshake.
pub fn with_id(request: &Value, id: &str) -> String {
    let mut request = request.clone();
    request["id"] = Value::String(id.to_owned());
    request.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_lines() {
        assert_eq!(
            classify(r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}"#),
            Kind::Request {
                id: "1".into(),
                method: "tools/call".into()
            }
        );
        assert_eq!(
            classify(r#"{"jsonrpc":"2.0","id":"a","result":{}}"#),
            Kind::Response { id: "\"a\"".into() }
        );
        assert_eq!(
            classify(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            Kind::Notification {
                method: "notifications/initialized".into()
            }
        );
        assert_eq!(classify("[1,2]"), Kind::Other);
        assert_eq!(classify("not json"), Kind::Other);
    }

    #[test]
    fn recognises_cancellations_and_successes() {
        let cancel =
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5}}"#;
        assert_eq!(cancelled_request(cancel), Some("5".into()));
        assert_eq!(cancelled_request(r#"{"jsonrpc":"2.0","method":"x"}"#), None);
        assert!(is_success(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#));
        assert!(!is_success(
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m"}}"#
        ));
    }

    #[test]
    fn error_response_keeps_the_id_type() {
        let line = error_response("\"x\"", OUTCOME_UNKNOWN, "lost");
        let value: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(value["id"], "x");
        assert_eq!(value["error"]["code"], OUTCOME_UNKNOWN);
        let line = error_response("7", NOT_SENT, "down");
        assert_eq!(serde_json::from_str::<Value>(&line).unwrap()["id"], 7);
        assert_eq!(
            serde_json::from_str::<Value>(&error_response("not json", NOT_SENT, "x")).unwrap()["id"],
            Value::Null
        );
    }

    /// Found by the fuzz target `shim-lines`: an ID past 2^64 came back as another number.
    #[test]
    fn shim_lines_an_id_past_u64_comes_back_as_the_same_number() {
        for line in [
            r#"{"jsonrpc":"2.0","id":118446744073709551616,"method":"tools/call"}"#,
            r#"{"id":18446744073709573709573709573709573709551615,"jsonrpc":"2.0","method":"initialize"}"#,
            r#"{"jsonrpc":"2.0","id":1.5e300,"method":"ping"}"#,
        ] {
            let Kind::Request { id, .. } = classify(line) else {
                panic!("{line}")
            };
            let answer = error_response(&id, NOT_SENT, "not sent");
            assert_eq!(
                classify(&answer),
                Kind::Response { id: id.clone() },
                "{answer}"
            );
            let sent: f64 = serde_json::from_str::<Value>(line).unwrap()["id"]
                .as_f64()
                .unwrap();
            let back: f64 = serde_json::from_str::<Value>(&answer).unwrap()["id"]
                .as_f64()
                .unwrap();
            assert_eq!(sent, back, "{answer}");
        }
    }
}
