//! What a model reads of a tool result, under each MCP client's documented rule (README,
//! *Results*; `../shared/PLATFORM.md`, "MCP clients: what the model actually reads"):
//!
//! - [`ClientRule::StructuredFirst`]: Claude Code hands the model `JSON.stringify
//!   (structuredContent)` and drops the text blocks whenever a result carries both (its tracker,
//!   issues 79944, 54450, 59480, 64316), and VS Code chooses the structured form too
//!   (microsoft/vscode issue 290063). Claude Code shows the text of an `isError` result instead
//!   (issue 86032); this rule reads errors the structured way too, the stricter reading.
//! - [`ClientRule::TextFirst`]: the text blocks, as the MCP specification describes them (the
//!   serialised result) and as clients that show text do.
//!
//! Images are shown to the model either way; here each is a `[image MIME]` line.

use rmcp::model::CallToolResult;

use crate::client::FENCE_MARK;

/// How a client turns a tool result into what its model reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientRule {
    /// `structuredContent` when present, else the text (Claude Code, VS Code).
    StructuredFirst,
    /// The text blocks.
    TextFirst,
}

impl ClientRule {
    /// Both rules.
    pub const ALL: [ClientRule; 2] = [ClientRule::StructuredFirst, ClientRule::TextFirst];
}

/// What the model reads of `result` under `rule`.
pub fn model_sees(result: &CallToolResult, rule: ClientRule) -> String {
    let mut seen = match (&result.structured_content, rule) {
        (Some(structured), ClientRule::StructuredFirst) => structured.to_string(),
        _ => result
            .content
            .iter()
            .filter_map(|block| block.as_text().map(|text| text.text.as_str()))
            .collect::<Vec<_>>()
            .join("\n"),
    };
    for image in result.content.iter().filter_map(|block| block.as_image()) {
        seen.push_str(&format!("\n[image {}]", image.mime_type));
    }
    seen
}

/// Whether every occurrence of `needle` in `seen` lies between a `⟦page ID⟧` line and its
/// `⟦/page ID⟧` line (and `seen` holds it at all).
pub fn only_inside_the_fence(seen: &str, needle: &str) -> bool {
    let mut inside = false;
    let mut found = false;
    for line in seen.lines() {
        if line.starts_with(FENCE_MARK) {
            inside = !line.starts_with("⟦/");
            continue;
        }
        if line.contains(needle) {
            if !inside {
                return false;
            }
            found = true;
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_text_counts_as_fenced_only_between_the_lines() {
        let fenced = "tab 1\n⟦page 0a1b2c3d⟧\nbutton \"Go\"\n⟦/page 0a1b2c3d⟧\nnext: 30";
        assert!(only_inside_the_fence(fenced, "\"Go\""));
        assert!(!only_inside_the_fence(fenced, "absent"));
        assert!(!only_inside_the_fence(
            "{\"data\":{\"text\":\"button \\\"Go\\\"\"}}",
            "Go"
        ));
        let twice = format!("{fenced}\nGo again");
        assert!(!only_inside_the_fence(&twice, "Go"));
    }
}
