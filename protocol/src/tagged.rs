//! Reading the protocol's internally tagged enums (`{"group": "observe", "kind": "snapshot", …}`)
//! without serde's generic buffering.
//!
//! serde's derived `Deserialize` for `#[serde(tag = …)]` buffers the object into its private
//! `Content` tree and then reads every variant from that buffer, so each variant type is
//! compiled once more for the buffer, on top of the buffer's own machinery. In the extension's
//! wasm (which Chrome compiles on every service-worker start) that was about a quarter of the
//! serde code. Here the object is read once into a [`serde_json::Map`], the tag is taken out, and
//! the variant is read from the rest as a [`serde_json::Value`]: every type below a tag is
//! compiled for one deserializer only (`Value`), whoever reads the message.
//!
//! The wire format is unchanged: the tag may stand anywhere in the object, unknown tags and a
//! missing tag are refused with serde's own messages (`unknown variant …, expected one of …`,
//! `missing field …`), and a variant's own fields are checked as before (`deny_unknown_fields`
//! on the variant's struct). Serialising keeps serde's derive (`#[serde(tag = …)]` adds no
//! buffering there).
//!
//! A key given twice in one object (the tag too, and at any depth below it) is refused with
//! `duplicate field …`, as serde's derive refused it: [`serde_json::Map`] alone would keep the
//! last one, so two readers of one message could disagree on what it says.

use std::fmt;

use serde::de::{Deserialize, Deserializer, Error, MapAccess, SeqAccess, Unexpected, Visitor};
use serde_json::{Map, Number, Value};

/// Reads an object, takes out its `tag` (a string) and gives it back with the rest.
pub(crate) fn split<'de, D: Deserializer<'de>>(
    deserializer: D,
    tag: &'static str,
) -> Result<(String, Value), D::Error> {
    let mut object = deserializer.deserialize_map(Strict)?.into_object();
    match object.remove(tag) {
        Some(Value::String(name)) => Ok((name, Value::Object(object))),
        Some(other) => Err(D::Error::invalid_type(
            unexpected(&other),
            &"a variant name",
        )),
        None => Err(D::Error::missing_field(tag)),
    }
}

fn unexpected(value: &Value) -> Unexpected<'_> {
    match value {
        Value::Null => Unexpected::Unit,
        Value::Bool(b) => Unexpected::Bool(*b),
        Value::Number(_) => Unexpected::Other("a number"),
        Value::String(s) => Unexpected::Str(s),
        Value::Array(_) => Unexpected::Seq,
        Value::Object(_) => Unexpected::Map,
    }
}

/// Reads any JSON value, refusing a key that an object already has.
struct Strict;

/// A value [`Strict`] read.
struct StrictValue(Value);

impl StrictValue {
    /// The object [`Strict`] was asked for with `deserialize_map` (a deserializer of JSON
    /// gives nothing else to `visit_map`).
    fn into_object(self) -> Map<String, Value> {
        match self.0 {
            Value::Object(object) => object,
            _ => Map::new(),
        }
    }
}

impl<'de> Deserialize<'de> for StrictValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(Strict)
    }
}

impl<'de> Visitor<'de> for Strict {
    type Value = StrictValue;

    fn expecting(&self, formatter: &mut fmt::Formatter) -> fmt::Result {
        formatter.write_str("a map")
    }

    fn visit_bool<E: Error>(self, value: bool) -> Result<StrictValue, E> {
        Ok(StrictValue(Value::Bool(value)))
    }

    fn visit_i64<E: Error>(self, value: i64) -> Result<StrictValue, E> {
        Ok(StrictValue(Value::Number(value.into())))
    }

    fn visit_u64<E: Error>(self, value: u64) -> Result<StrictValue, E> {
        Ok(StrictValue(Value::Number(value.into())))
    }

    fn visit_f64<E: Error>(self, value: f64) -> Result<StrictValue, E> {
        // As serde_json reads it: a number JSON cannot hold is `null`.
        Ok(StrictValue(
            Number::from_f64(value).map_or(Value::Null, Value::Number),
        ))
    }

    fn visit_str<E: Error>(self, value: &str) -> Result<StrictValue, E> {
        Ok(StrictValue(Value::String(value.to_owned())))
    }

    fn visit_string<E: Error>(self, value: String) -> Result<StrictValue, E> {
        Ok(StrictValue(Value::String(value)))
    }

    fn visit_unit<E: Error>(self) -> Result<StrictValue, E> {
        Ok(StrictValue(Value::Null))
    }

    fn visit_none<E: Error>(self) -> Result<StrictValue, E> {
        Ok(StrictValue(Value::Null))
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<StrictValue, D::Error> {
        StrictValue::deserialize(deserializer)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<StrictValue, A::Error> {
        let mut items = Vec::new();
        while let Some(StrictValue(item)) = seq.next_element()? {
            items.push(item);
        }
        Ok(StrictValue(Value::Array(items)))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<StrictValue, A::Error> {
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if object.contains_key(&key) {
                return Err(A::Error::custom(format_args!("duplicate field `{key}`")));
            }
            let StrictValue(value) = map.next_value()?;
            object.insert(key, value);
        }
        Ok(StrictValue(Value::Object(object)))
    }
}

/// Reads one variant's body from what [`split`] left.
pub(crate) fn variant<T: serde::de::DeserializeOwned, E: Error>(rest: Value) -> Result<T, E> {
    T::deserialize(rest).map_err(E::custom)
}

/// Implements `Deserialize` for an internally tagged enum through [`split`]. Each arm names the
/// tag's value, the type its body is read as, and how the variant is made from it (a newtype
/// variant's constructor, or a closure for a struct variant read through a private struct); an
/// arm may carry a `#[cfg(…)]` of its variant.
macro_rules! deserialize_tagged {
    ($enum:ty, $tag:literal, { $($(#[$cfg:meta])* $name:literal => $body:ty => $make:expr,)+ }) => {
        impl<'de> serde::Deserialize<'de> for $enum {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                const VARIANTS: &[&str] = &[$($name),+];
                let (name, rest) = $crate::tagged::split(deserializer, $tag)?;
                match name.as_str() {
                    $($(#[$cfg])* $name => $crate::tagged::variant::<$body, D::Error>(rest).map($make),)+
                    other => Err(<D::Error as serde::de::Error>::unknown_variant(other, VARIANTS)),
                }
            }
        }
    };
}
pub(crate) use deserialize_tagged;

/// Declares an internally tagged enum whose variants are all structs (`Action`, tag `kind`),
/// with a `Deserialize` that reads no buffer: the tag is taken out ([`split`]) and the rest is
/// read as the same variant of a private, externally tagged mirror of the enum, which the macro
/// writes from the same declaration (so the two cannot drift). The enum's own attributes
/// (`#[serde(tag = …)]` included) serve its derived `Serialize`; the mirror is read with
/// `rename_all` and `rename_all_fields` camelCase and `deny_unknown_fields`, as every such enum
/// of the protocol is declared.
macro_rules! struct_variants_tagged {
    (
        tag = $tag:literal;
        $(#[$meta:meta])*
        pub enum $name:ident {
            $(
                $(#[$vmeta:meta])*
                $variant:ident { $( $(#[$fmeta:meta])* $field:ident : $ty:ty ),* $(,)? }
            ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        pub enum $name {
            $( $(#[$vmeta])* $variant { $( $(#[$fmeta])* $field : $ty ),* } ),*
        }

        const _: () = {
            #[derive(serde::Deserialize)]
            #[serde(rename_all = "camelCase", rename_all_fields = "camelCase", deny_unknown_fields)]
            enum Mirror {
                $( $variant { $( $(#[$fmeta])* $field : $ty ),* } ),*
            }

            impl<'de> serde::Deserialize<'de> for $name {
                fn deserialize<D: serde::Deserializer<'de>>(
                    deserializer: D,
                ) -> Result<Self, D::Error> {
                    let (name, rest) = $crate::tagged::split(deserializer, $tag)?;
                    // `{"<tag's value>": {…rest}}`, the externally tagged form, which also
                    // refuses an unknown name with serde's `unknown variant …`.
                    let mut outer = serde_json::Map::new();
                    outer.insert(name, rest);
                    let mirror = <Mirror as serde::Deserialize>::deserialize(
                        serde_json::Value::Object(outer),
                    )
                    .map_err(<D::Error as serde::de::Error>::custom)?;
                    Ok(match mirror {
                        $( Mirror::$variant { $($field),* } => $name::$variant { $($field),* }, )*
                    })
                }
            }
        };
    };
}
pub(crate) use struct_variants_tagged;

#[cfg(test)]
mod tests {
    use crate::{Action, HubMessage, Operation};

    #[test]
    fn the_tag_may_stand_anywhere() {
        let first: HubMessage = serde_json::from_str(r#"{"type":"heartbeat","seq":3}"#).unwrap();
        let last: HubMessage = serde_json::from_str(r#"{"seq":3,"type":"heartbeat"}"#).unwrap();
        assert_eq!(first, HubMessage::Heartbeat { seq: 3 });
        assert_eq!(last, first);
        let op: Operation = serde_json::from_str(r#"{"kind":"listTabs","group":"tabs"}"#).unwrap();
        assert_eq!(op, crate::ListTabs {}.into());
    }

    #[test]
    fn a_bad_tag_is_refused_with_serdes_words() {
        let unknown = serde_json::from_str::<Operation>(r#"{"group":"nope","kind":"x"}"#)
            .unwrap_err()
            .to_string();
        assert!(
            unknown.starts_with("unknown variant `nope`, expected one of `observe`, `tabs`"),
            "{unknown}"
        );
        let missing = serde_json::from_str::<Operation>(r#"{"kind":"listTabs"}"#)
            .unwrap_err()
            .to_string();
        assert!(missing.starts_with("missing field `group`"), "{missing}");
        let not_a_name = serde_json::from_str::<HubMessage>(r#"{"type":7,"seq":1}"#)
            .unwrap_err()
            .to_string();
        assert!(
            not_a_name.starts_with("invalid type: a number"),
            "{not_a_name}"
        );
        let not_an_object = serde_json::from_str::<HubMessage>(r#"["heartbeat",1]"#)
            .unwrap_err()
            .to_string();
        assert!(
            not_an_object.starts_with("invalid type: sequence"),
            "{not_an_object}"
        );
    }

    /// The extension's wasm is built without the device group: a device request is refused
    /// as unreadable (the extension answers it `INVALID_ARGUMENT` when it carries an `id`).
    #[cfg(not(feature = "device"))]
    #[test]
    fn without_the_device_feature_a_device_operation_does_not_parse() {
        let error = serde_json::from_str::<Operation>(r#"{"group":"device","kind":"release"}"#)
            .unwrap_err()
            .to_string();
        assert!(error.starts_with("unknown variant `device`"), "{error}");
    }

    /// Two readers must not disagree on a message: a key given twice is refused, whether it is
    /// the tag, a field of the variant, or a key deeper down (serde's derive refused the first
    /// two; `serde_json::Map` would keep the last).
    #[test]
    fn a_key_given_twice_is_refused_at_any_depth() {
        fn refusal<T: serde::de::DeserializeOwned + std::fmt::Debug>(json: &str) -> String {
            match serde_json::from_str::<T>(json) {
                Err(error) => error.to_string(),
                Ok(read) => panic!("{json} was read as {read:?}"),
            }
        }
        for (error, key) in [
            (
                refusal::<HubMessage>(r#"{"type":"heartbeat","type":"cancel","seq":1}"#),
                "type",
            ),
            (
                refusal::<HubMessage>(r#"{"type":"heartbeat","seq":1,"seq":2}"#),
                "seq",
            ),
            (
                refusal::<Operation>(
                    r#"{"group":"tabs","kind":"navigate","url":"http://a/","url":"http://b/"}"#,
                ),
                "url",
            ),
            (
                refusal::<Action>(r##"{"kind":"click","target":{"css":"#a","css":"#b"}}"##),
                "css",
            ),
        ] {
            assert!(
                error.starts_with(&format!("duplicate field `{key}`")),
                "{key}: {error}"
            );
        }
        // The same keys once each are read.
        let once: Action =
            serde_json::from_str(r##"{"kind":"click","clickCount":1,"target":{"css":"#b"}}"##)
                .unwrap();
        assert!(format!("{once:?}").contains("#b"), "{once:?}");
    }

    #[test]
    fn a_variants_own_fields_are_still_checked() {
        let extra = serde_json::from_str::<HubMessage>(r#"{"type":"heartbeat","seq":1,"x":2}"#)
            .unwrap_err()
            .to_string();
        assert!(extra.starts_with("unknown field `x`"), "{extra}");
        let wrong = serde_json::from_str::<HubMessage>(r#"{"type":"cancel","id":"one"}"#)
            .unwrap_err()
            .to_string();
        assert!(wrong.starts_with("invalid type: string \"one\""), "{wrong}");
    }
}
