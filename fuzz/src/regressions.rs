//! Every crash the fuzzer found, as a test named after it: the input, fed to the same target
//! (`runner::replay`), must now pass. Each test is also kept beside the code it fixed where
//! that code has unit tests (see each test's comment).

use crate::runner::{Target, replay};
use crate::targets::{all, texts};

fn passes(target: &Target, input: &str) {
    let (_, outcome) = replay(target, input);
    assert_eq!(outcome, "ok", "{}: {input}", target.name);
}

/// `bench-fuzz` seed 24, inputs #513334, #638387, #708664, #726706, #832603: a request ID past
/// 2^64 (read as a float) came back in the shim's own error answer as another number, so the
/// client could not match the answer to its request. Fixed in `tabwire_mcp::jsonrpc`
/// (`error_response` sends the ID text back as read; `float_roundtrip` reads it exactly); the
/// shim's unit test `shim_lines_an_id_past_u64_comes_back_as_the_same_number`.
#[test]
fn shim_lines_an_id_past_u64_comes_back_as_the_same_number() {
    for input in [
        r#"{"id":18446744044044044044044044044044044044044044044044044073709551615,"jsonrpc":"2.0","result":{"content":[{"text":"ok","type":1}]}}"#,
        r#"{"error":{"code":-32001,"message":null},"id":18446744073744073744073744073709551615,"jsonrpc":"2.0"}"#,
        r#"{"id":18446744073709573709573709573709573709551615,"jsonrpc":"2.0","method":"initialize","params":{"capabilities":{"tabwire/envelope":[{}]},"pr@e0otocolVersion":"2025-06-18"}}"#,
        r#"{"jsonrpc":"2.0","id":118446744073709551616,"result":{"content":[{"type":"text","text":"ok"}]}}"#,
    ] {
        passes(&texts::SHIM_LINES, input);
    }
}

/// Not a crash but a slow input, found reading what `android-xml` could reach and confirmed with
/// `bench-fuzz --replay`: a dump full of `&#` without `;` was read in quadratic time (240 KB:
/// 0.9 s). Fixed in `tabwire_android::hierarchy` (a reference is looked for within 16
/// characters); its unit test `android_xml_a_reference_is_read_within_a_few_characters` is the
/// one that fails without the fix, this one feeds the whole input through the target.
#[test]
fn android_xml_a_dump_full_of_unterminated_references() {
    let head = "<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy rotation=\"0\">";
    let input = format!(
        "{head}<node index=\"0\" text=\"{}\" bounds=\"[0,0][10,10]\"/></hierarchy>",
        "&#".repeat(120_000)
    );
    passes(&texts::ANDROID_XML, &input);
}

/// Inputs at the edges (empty, a NUL, an empty object or array, a byte-order mark) pass every
/// target.
#[test]
fn every_target_takes_an_empty_and_an_odd_input() {
    for target in all() {
        for input in ["", "\0", "{}", "[]", "\u{feff}"] {
            passes(&target, input);
        }
    }
}
