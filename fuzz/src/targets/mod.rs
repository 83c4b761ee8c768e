//! The fuzz targets: one per decoder that reads input from outside, each calling the entry point
//! the hub, the shim or the device backend calls on that input.

use serde_json::Value;

use crate::mutate;
use crate::rng::Rng;
use crate::runner::Target;

pub mod peers;
pub mod texts;
pub mod tools;

/// Every target, in the bench's order.
pub fn all() -> Vec<Target> {
    vec![
        peers::HANDSHAKE_BROWSER,
        peers::HANDSHAKE_DEVICE,
        peers::MESSAGE_BROWSER,
        peers::MESSAGE_DEVICE,
        peers::HUB_MESSAGE_DEVICE,
        peers::PAIRING,
        tools::TOOL_ARGS,
        tools::SELECTOR,
        texts::SHIM_LINES,
        texts::JWT,
        texts::POLICY,
        texts::ANDROID_XML,
        texts::IOS_XML,
    ]
}

/// A target's real samples and the words worth inserting, and how inputs are made from them:
/// mostly structure-aware edits of a JSON sample, else character edits of a sample, now and
/// then a sample as it is.
pub struct Samples {
    texts: Vec<String>,
    values: Vec<Value>,
    /// Object keys worth adding (the format's own field names).
    pub keys: &'static [&'static str],
    /// Strings worth putting in values and text.
    pub words: &'static [&'static str],
}

impl Samples {
    /// Samples from `texts`; those that are JSON are also mutated as JSON.
    pub fn new(
        texts: Vec<String>,
        keys: &'static [&'static str],
        words: &'static [&'static str],
    ) -> Samples {
        assert!(!texts.is_empty(), "a target needs samples");
        let values = texts
            .iter()
            .filter_map(|text| serde_json::from_str(text).ok())
            .collect();
        Samples {
            texts,
            values,
            keys,
            words,
        }
    }

    /// The samples as given.
    pub fn texts(&self) -> &[String] {
        &self.texts
    }

    /// The next input, at most [`mutate::MAX_INPUT`] bytes.
    pub fn generate(&self, rng: &mut Rng) -> String {
        let mut input = self.make(rng);
        if input.len() > mutate::MAX_INPUT {
            let mut end = mutate::MAX_INPUT;
            while !input.is_char_boundary(end) {
                end -= 1;
            }
            input.truncate(end);
        }
        input
    }

    fn make(&self, rng: &mut Rng) -> String {
        match rng.below(20) {
            0 => rng.pick(&self.texts).clone(),
            1..=13 if !self.values.is_empty() => {
                let mut value = rng.pick(&self.values).clone();
                mutate::json(rng, &mut value, self.keys, self.words, &self.values);
                let text = value.to_string();
                if rng.one_in(6) {
                    mutate::text(rng, &text, self.words, &self.texts)
                } else {
                    text
                }
            }
            _ => {
                let at = rng.below(self.texts.len());
                mutate::text(rng, &self.texts[at], self.words, &self.texts)
            }
        }
    }
}
