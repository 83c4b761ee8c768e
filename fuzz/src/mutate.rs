//! Mutations of real sample inputs: byte- and character-level edits of any text, and
//! structure-aware edits of JSON (a node replaced, a key dropped or added, a subtree spliced in
//! from another sample), so most inputs still get past the parser into the checks behind it.

use serde_json::{Map, Number, Value};

use crate::rng::Rng;

/// Strings that break naive code: empty, huge, control and format characters (bidi
/// overrides, zero-width), non-BMP, escapes, numbers as text, path and URL tricks.
pub const NASTY_STRINGS: &[&str] = &[
    "",
    " ",
    "\0",
    "\u{202e}evil",
    "\u{200b}",
    "\u{feff}",
    "\u{1F600}",
    "\n\r\t",
    "\\",
    "\"",
    "%00",
    "../../etc/passwd",
    "-1",
    "18446744073709551616",
    "NaN",
    "@e",
    "@e0",
    "@f0e",
    "@d1",
    "@e99999999999999999999",
    "javascript:alert(1)",
    "file:///etc/passwd",
    "http://[::1]:99999/",
    "chrome://settings",
    "ÿ",
    "\u{10FFFF}",
];

/// The deepest nesting a JSON edit adds around a node.
const MAX_NESTING: usize = 300;
/// The longest input made: past every limit the hub puts on a message before parsing it
/// (a handshake message: 4 KiB), short of making the run slow.
pub const MAX_INPUT: usize = 256 * 1024;

/// Characters inserted one at a time.
const CHARS: &[char] = &[
    '{', '}', '[', ']', '"', '\'', ',', ':', '\\', '/', '<', '>', '=', '&', ';', '(', ')', '*',
    '#', '.', '@', '\n', '\0', '\u{7f}', '\u{85}', '\u{2028}', '\u{fffd}', 'é', '0', '9', '-', '+',
    'e', ' ',
];

/// Edits `text` a few times, with `dictionary` as the target's own tokens and `others` as
/// samples to splice from.
pub fn text(rng: &mut Rng, text: &str, dictionary: &[&str], others: &[String]) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    for _ in 0..1 + rng.below(4) {
        let len = chars.len();
        let at = if len == 0 { 0 } else { rng.below(len + 1) };
        match rng.below(11) {
            0 if len > 0 => {
                // Flip a bit of one character, staying a character.
                let i = rng.below(len);
                let flipped = (chars[i] as u32) ^ (1 << rng.below(8));
                chars[i] = char::from_u32(flipped).unwrap_or('\u{fffd}');
            }
            1 => chars.insert(at, *rng.pick(CHARS)),
            2 if len > 0 => {
                let from = rng.below(len);
                let to = (from + 1 + rng.size()).min(len);
                chars.drain(from..to);
            }
            3 if len > 0 => {
                // Repeat a span: long runs, deep nesting.
                let from = rng.below(len);
                let to = (from + 1 + rng.below(8)).min(len);
                let span: Vec<char> = chars[from..to].to_vec();
                let times = 1 + rng.size();
                let mut repeated = Vec::with_capacity(span.len() * times);
                for _ in 0..times {
                    repeated.extend_from_slice(&span);
                }
                chars.splice(from..from, repeated);
            }
            4 if !dictionary.is_empty() => {
                let token = rng.pick(dictionary);
                chars.splice(at..at, token.chars());
            }
            5 => {
                let token = rng.pick(NASTY_STRINGS);
                chars.splice(at..at, token.chars());
            }
            6 if !others.is_empty() => {
                // Splice a piece of another sample in.
                let other: Vec<char> = rng.pick(others).chars().collect();
                if !other.is_empty() {
                    let from = rng.below(other.len());
                    let to = (from + 1 + rng.size()).min(other.len());
                    chars.splice(at..at, other[from..to].iter().copied());
                }
            }
            7 if len > 0 => chars.truncate(rng.below(len)),
            8 if len > 0 => {
                let i = rng.below(len);
                chars[i] = *rng.pick(CHARS);
            }
            9 if !dictionary.is_empty() => {
                // Nest a token deeply: parsers that recurse meet their limit here.
                let token = rng.pick(dictionary);
                let times = 1 + rng.size();
                chars.splice(at..at, token.repeat(times).chars().collect::<Vec<_>>());
            }
            _ => {
                let c = char::from_u32(rng.next_u64() as u32 % 0x11_0000).unwrap_or('\u{fffd}');
                chars.insert(at, c);
            }
        }
    }
    chars.into_iter().collect()
}

/// A value of any JSON type, mostly small and awkward.
pub fn value(rng: &mut Rng, strings: &[&str]) -> Value {
    match rng.below(12) {
        0 => Value::Null,
        1 => Value::Bool(rng.one_in(2)),
        2 => Value::Number(Number::from(*rng.pick(&[
            0i64,
            -1,
            1,
            i64::MAX,
            i64::MIN,
            u32::MAX as i64,
            1 << 53,
        ]))),
        3 => Value::Number(Number::from(u64::MAX)),
        4 => Number::from_f64(*rng.pick(&[0.5, -0.0, 1e308, -1e-308, 3.0]))
            .map_or(Value::Null, Value::Number),
        5 => Value::String(rng.pick(NASTY_STRINGS).to_string()),
        6 if !strings.is_empty() => Value::String(rng.pick(strings).to_string()),
        7 => Value::String(rng.pick(&["x", "é", "🔥", "\u{202e}"]).repeat(rng.size())),
        8 => Value::Array((0..rng.below(4)).map(|_| Value::Null).collect()),
        9 => Value::Object(Map::new()),
        _ => Value::Number(Number::from(rng.below(100) as u64)),
    }
}

/// Edits a JSON value in place a few times: `keys` are names worth adding, `others` samples
/// whose subtrees may be spliced in.
pub fn json(rng: &mut Rng, root: &mut Value, keys: &[&str], strings: &[&str], others: &[Value]) {
    for _ in 0..1 + rng.below(3) {
        let count = count_nodes(root);
        let target = rng.below(count);
        let mut seen = 0;
        edit_nth(rng, root, target, &mut seen, keys, strings, others);
    }
}

fn count_nodes(value: &Value) -> usize {
    1 + match value {
        Value::Array(items) => items.iter().map(count_nodes).sum(),
        Value::Object(map) => map.values().map(count_nodes).sum(),
        _ => 0,
    }
}

fn edit_nth(
    rng: &mut Rng,
    node: &mut Value,
    target: usize,
    seen: &mut usize,
    keys: &[&str],
    strings: &[&str],
    others: &[Value],
) -> bool {
    if *seen == target {
        edit(rng, node, keys, strings, others);
        return true;
    }
    *seen += 1;
    match node {
        Value::Array(items) => items
            .iter_mut()
            .any(|item| edit_nth(rng, item, target, seen, keys, strings, others)),
        Value::Object(map) => map
            .values_mut()
            .any(|item| edit_nth(rng, item, target, seen, keys, strings, others)),
        _ => false,
    }
}

fn edit(rng: &mut Rng, node: &mut Value, keys: &[&str], strings: &[&str], others: &[Value]) {
    match rng.below(9) {
        0 | 1 => *node = value(rng, strings),
        2 => {
            if let Value::Object(map) = node
                && !map.is_empty()
            {
                let key = map.keys().nth(rng.below(map.len())).cloned();
                if let Some(key) = key {
                    map.remove(&key);
                }
                return;
            }
            *node = value(rng, strings);
        }
        3 if !keys.is_empty() => {
            let key = rng.pick(keys).to_string();
            let added = value(rng, strings);
            match node {
                Value::Object(map) => {
                    map.insert(key, added);
                }
                other => *other = value(rng, strings),
            }
        }
        4 if !others.is_empty() => {
            // A subtree of another sample, in place of this node.
            let other = rng.pick(others);
            let count = count_nodes(other);
            let mut picked = None;
            nth(other, rng.below(count), &mut 0, &mut picked);
            if let Some(picked) = picked {
                *node = picked;
            }
        }
        5 => {
            if let Value::Array(items) = node
                && let Some(first) = items.first().cloned()
            {
                let each = first.to_string().len().max(1);
                let times = rng.size().min(MAX_INPUT / each);
                items.extend(std::iter::repeat_n(first, times));
                return;
            }
            *node = Value::Array(vec![node.clone()]);
        }
        6 => {
            if let Value::String(text_value) = node {
                *text_value = text(rng, text_value, strings, &[]);
                return;
            }
            *node = value(rng, strings);
        }
        7 => {
            if let Value::Number(number) = node {
                let shifted = number
                    .as_i64()
                    .map(|n| n.wrapping_add(rng.below(3) as i64 - 1));
                *node = shifted.map_or(Value::Null, |n| Value::Number(n.into()));
                return;
            }
            *node = value(rng, strings);
        }
        _ => {
            // Deep nesting around the node.
            // Past serde_json's limit (128), below what the generator's own recursion over the
            // value (cloning, printing, dropping) can take on the fuzzing thread's stack.
            let depth = 1 + rng.size();
            let mut nested = node.clone();
            for _ in 0..depth.min(MAX_NESTING) {
                nested = Value::Array(vec![nested]);
            }
            *node = nested;
        }
    }
}

fn nth(value: &Value, target: usize, seen: &mut usize, found: &mut Option<Value>) {
    if found.is_some() {
        return;
    }
    if *seen == target {
        *found = Some(value.clone());
        return;
    }
    *seen += 1;
    match value {
        Value::Array(items) => items.iter().for_each(|item| nth(item, target, seen, found)),
        Value::Object(map) => map.values().for_each(|item| nth(item, target, seen, found)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_mutations_change_the_sample_and_stay_utf8() {
        let mut rng = Rng::new(1);
        let seed = r#"{"type":"hello","browserId":"b1"}"#;
        let changed = (0..200)
            .filter(|_| text(&mut rng, seed, &["{"], &[]) != seed)
            .count();
        assert!(changed > 150, "{changed} of 200 changed");
    }

    #[test]
    fn json_mutations_mostly_keep_it_json_and_change_it() {
        let mut rng = Rng::new(2);
        let seed: Value = serde_json::json!({"a": [1, 2, {"b": "c"}], "d": true});
        let mut changed = 0;
        for _ in 0..200 {
            let mut v = seed.clone();
            json(
                &mut rng,
                &mut v,
                &["e"],
                &["s"],
                std::slice::from_ref(&seed),
            );
            changed += usize::from(v != seed);
        }
        assert!(changed > 150, "{changed} of 200 changed");
    }
}
