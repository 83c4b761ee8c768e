//! Why `tabwire` stopped without a tool's answer: every such failure is exit code 2, said on
//! stderr and, when the output is JSON, as one `{"ok":false,"error":{…}}` line on stdout so a
//! script always gets JSON. A tool's own failure (`isError`) is not here: it is the tool's
//! envelope and exit code 1 ([`crate::output`]).

use serde_json::{Value, json};

/// A failure before or around a tool call.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum CliError {
    /// The command line does not say something `tabwire` can do: an unknown option or
    /// argument, a value that does not parse, a browser name that names no browser.
    #[error("{message}")]
    Usage {
        /// What is wrong.
        message: String,
        /// What to do instead, for a person (a tool's arguments, candidates); stderr only.
        help: Option<String>,
        /// Choices to pick from, for a script (browsers a name could mean).
        candidates: Option<Value>,
    },
    /// The hub has no tool of this name.
    #[error("{message}")]
    UnknownTool {
        /// The hub's words, with suggestions.
        message: String,
    },
    /// The hub refused the request at the protocol level (a JSON-RPC error: invalid params,
    /// an internal error): the tool did not run.
    #[error("the hub refused the request: {message} (JSON-RPC error {code})")]
    Rpc {
        /// The JSON-RPC error code.
        code: i32,
        /// The hub's message.
        message: String,
    },
    /// No hub could be reached, started, or trusted; or the link broke before an answer.
    #[error("{message}")]
    Connection {
        /// What happened and what to do, naming the hub's log when one was started.
        message: String,
    },
}

impl CliError {
    /// A usage error with nothing more to say.
    pub fn usage(message: impl Into<String>) -> CliError {
        CliError::Usage {
            message: message.into(),
            help: None,
            candidates: None,
        }
    }

    /// A connection error.
    pub fn connection(message: impl Into<String>) -> CliError {
        CliError::Connection {
            message: message.into(),
        }
    }

    /// The process's exit code: always 2 (usage or connection).
    pub fn exit_code(&self) -> u8 {
        2
    }

    /// The stable code scripts can branch on.
    pub fn code(&self) -> &'static str {
        match self {
            CliError::Usage { .. } => "USAGE",
            CliError::UnknownTool { .. } => "UNKNOWN_TOOL",
            CliError::Rpc { code: -32602, .. } => "INVALID_PARAMS",
            CliError::Rpc { .. } => "PROTOCOL_ERROR",
            CliError::Connection { .. } => "HUB_UNREACHABLE",
        }
    }

    /// `usage` or `connection`: which kind of exit-2 failure it is.
    pub fn category(&self) -> &'static str {
        match self {
            CliError::Connection { .. } => "connection",
            _ => "usage",
        }
    }

    /// The one JSON line printed on stdout when the output is JSON.
    pub fn envelope(&self) -> Value {
        let mut error = json!({
            "code": self.code(),
            "category": self.category(),
            "message": self.to_string(),
        });
        if let CliError::Rpc { code, .. } = self {
            error["rpcCode"] = json!(code);
        }
        if let CliError::Usage {
            candidates: Some(candidates),
            ..
        } = self
        {
            error["candidates"] = candidates.clone();
        }
        json!({"ok": false, "error": error})
    }

    /// What to print on stderr for a person: the message, then any help.
    pub fn for_person(&self) -> String {
        match self {
            CliError::Usage {
                help: Some(help), ..
            } => format!("tabwire: {self}\n{help}"),
            _ => format!("tabwire: {self}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envelopes_have_stable_codes() {
        let rpc = CliError::Rpc {
            code: -32602,
            message: "bad".into(),
        };
        assert_eq!(rpc.envelope()["error"]["code"], "INVALID_PARAMS");
        assert_eq!(rpc.envelope()["error"]["rpcCode"], -32602);
        assert_eq!(rpc.envelope()["ok"], false);
        let gone = CliError::connection("no hub");
        assert_eq!(gone.envelope()["error"]["category"], "connection");
        assert_eq!(gone.envelope()["error"]["message"], "no hub");
        let usage = CliError::Usage {
            message: "which?".into(),
            help: Some("pick one".into()),
            candidates: Some(json!([{"browserId": "a"}])),
        };
        assert_eq!(usage.envelope()["error"]["candidates"][0]["browserId"], "a");
        assert_eq!(usage.for_person(), "tabwire: which?\npick one");
        assert_eq!(usage.exit_code(), 2);
    }
}
