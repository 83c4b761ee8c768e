//! Who a device is to the hub: its stable ID and the [`DeviceHello`] that introduces it.
//!
//! The ID comes from the phone's own serial number (`ro.serialno`), not from the adb transport,
//! so the same phone over USB and over Wi-Fi is one device, and it survives replugging and
//! restarts. A few cheap phones and some emulator images all report the same placeholder
//! (`unknown`, `0123456789ABCDEF`) or none at all, and every instance of one emulator build
//! reports the same `EMULATOR…` serial number; for those the adb serial stands in, since
//! merging two such phones into one device would send one agent's taps to the other. A second
//! identifier read in the same probe (`android_id`) is part of the identity when the device
//! gives one, so two phones that share a serial number are not merged either.

use sha2::{Digest, Sha256};
use tabwire_protocol::devices::{DeviceHello, Platform, check_device_hello};
use tabwire_protocol::messages::MAX_IDENTITY_LEN;
use tabwire_protocol::{PROTOCOL_VERSION, Refusal, shown_name};

use crate::device::DeviceFacts;

/// The prefix of every Android device ID.
const PREFIX: &str = "android-";

/// Serial numbers that many phones share, so they identify none.
const PLACEHOLDERS: [&str; 4] = ["", "unknown", "0123456789abcdef", "0000000000000000"];

/// What identifies a phone across its transports: its serial number, unless that is a
/// placeholder, in which case the adb serial it was probed through.
pub fn identity(facts: &DeviceFacts, adb_serial: &str) -> String {
    let serialno = facts.serialno.trim();
    let lower = serialno.to_ascii_lowercase();
    if PLACEHOLDERS.contains(&lower.as_str()) || lower.starts_with("emulator") {
        format!("adb:{adb_serial}")
    } else if facts.android_id.is_empty() {
        serialno.to_owned()
    } else {
        format!("{serialno}~{}", facts.android_id)
    }
}

/// The device ID for an identity: `android-` and the identity escaped into `[A-Za-z0-9_-]`
/// without collisions (`_` is written `__`, any other byte outside the set `_` and its two
/// hex digits, so `ABC.1` and `ABC_1` stay apart); when that is longer than the hub accepts
/// (64), `android-` and the first 32 hex digits of the identity's SHA-256.
pub fn device_id(identity: &str) -> String {
    let mut cleaned = String::new();
    for byte in identity.bytes() {
        match byte {
            b'_' => cleaned.push_str("__"),
            b if b.is_ascii_alphanumeric() || b == b'-' => cleaned.push(char::from(b)),
            b => cleaned.push_str(&format!("_{b:02x}")),
        }
    }
    let id = format!("{PREFIX}{cleaned}");
    if id.len() <= MAX_IDENTITY_LEN {
        return id;
    }
    let digest = Sha256::digest(identity.as_bytes());
    let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
    format!("{PREFIX}{hex}")
}

/// The hello for a device, checked as the hub will check it.
pub fn hello(device_id: &str, facts: &DeviceFacts) -> Result<DeviceHello, Refusal> {
    let manufacturer = clean(&facts.manufacturer);
    let model = clean(&facts.model);
    let device_name = if !model.is_empty() {
        model.clone()
    } else if !manufacturer.is_empty() {
        manufacturer.clone()
    } else {
        "Android device".to_owned()
    };
    // `Google Pixel 7`, but `samsung SM-G973F` rather than `samsung samsung SM-G973F`.
    let full_model = if manufacturer.is_empty()
        || model
            .to_lowercase()
            .starts_with(&manufacturer.to_lowercase())
    {
        model.clone()
    } else {
        format!("{manufacturer} {model}")
    };
    let os_version = match facts.sdk {
        Some(sdk) => format!("{} (API {sdk})", clean(&facts.os_version)),
        None => clean(&facts.os_version),
    };
    let hello = DeviceHello {
        device_id: device_id.to_owned(),
        device_name: bounded(&device_name),
        platform: Platform::Android,
        model: bounded(&full_model),
        os_version: bounded(&os_version),
        screen: facts.screen,
        backend_version: env!("CARGO_PKG_VERSION").to_owned(),
        protocol_version: PROTOCOL_VERSION,
        proof: None,
    };
    check_device_hello(&hello)?;
    Ok(hello)
}

/// What the phone reports, as people are shown it: the hellos' rule (the protocol's
/// [`shown_name`]: no control or format characters, whitespace runs as one space), so a
/// model name with a bidi override or a zero-width space names the device instead of getting
/// it refused.
fn clean(text: &str) -> String {
    shown_name(text, MAX_IDENTITY_LEN)
}

/// At most the hub's bound, in characters.
fn bounded(text: &str) -> String {
    text.chars().take(MAX_IDENTITY_LEN).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(serialno: &str) -> DeviceFacts {
        DeviceFacts::pixel(serialno)
    }

    #[test]
    fn ids_come_from_the_serial_number() {
        assert_eq!(device_id("R58M12ABCDE"), "android-R58M12ABCDE");
        assert_eq!(
            device_id("adb:192.168.1.5:5555"),
            "android-adb_3a192_2e168_2e1_2e5_3a5555"
        );
        assert_eq!(device_id("a b/c.d-e_f"), "android-a_20b_2fc_2ed-e__f");
        assert_eq!(device_id("ñ1"), "android-_c3_b11");
    }

    #[test]
    fn escaping_keeps_every_two_identities_apart() {
        // These all became `android-ABC_1` when every odd character was `_`.
        let ids: Vec<String> = ["ABC.1", "ABC_1", "ABC:1", "ABC 1", "ABC_2e1", "ABC__1"]
            .iter()
            .map(|i| device_id(i))
            .collect();
        let mut unique = ids.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), ids.len(), "{ids:?}");
    }

    #[test]
    fn emulators_and_shared_serial_numbers_are_told_apart() {
        // Every instance of one emulator build reports this serial number.
        for serialno in ["EMULATOR35X2X10X0", "emulator33x1x2x0"] {
            assert_eq!(
                identity(&facts(serialno), "emulator-5554"),
                "adb:emulator-5554"
            );
            assert_ne!(
                identity(&facts(serialno), "emulator-5554"),
                identity(&facts(serialno), "emulator-5556")
            );
        }
        // Two phones sharing a serial number differ by android_id; one phone over USB and
        // Wi-Fi has the same both ways.
        let mut a = facts("R58M12ABCDE");
        a.android_id = "9774d56d682e549c".into();
        let mut b = facts("R58M12ABCDE");
        b.android_id = "1234abcd1234abcd".into();
        assert_ne!(identity(&a, "usb-a"), identity(&b, "usb-b"));
        assert_eq!(
            identity(&a, "R58M12ABCDE"),
            identity(&a, "192.168.1.5:5555")
        );
        assert_eq!(identity(&a, "x"), "R58M12ABCDE~9774d56d682e549c");
        hello(&device_id(&identity(&a, "x")), &a).unwrap();
    }

    #[test]
    fn long_serials_are_hashed_apart() {
        let long_a = "A".repeat(60);
        let long_b = format!("{}B", "A".repeat(59));
        let a = device_id(&long_a);
        let b = device_id(&long_b);
        assert_ne!(a, b);
        assert_eq!(a.len(), "android-".len() + 32);
        assert!(a.starts_with("android-"));
        // Exactly at the bound it is kept as is.
        let fits = "x".repeat(MAX_IDENTITY_LEN - PREFIX.len());
        assert_eq!(device_id(&fits), format!("android-{fits}"));
    }

    #[test]
    fn placeholder_serial_numbers_fall_back_to_the_transport() {
        assert_eq!(identity(&facts("R58M12ABCDE"), "whatever"), "R58M12ABCDE");
        for placeholder in ["", "unknown", "0123456789ABCDEF", " "] {
            assert_eq!(
                identity(&facts(placeholder), "emulator-5554"),
                "adb:emulator-5554"
            );
        }
    }

    #[test]
    fn every_derived_id_passes_the_hubs_check() {
        for identity in [
            "R58M12ABCDE",
            "adb:[fe80::1%wlan0]:5555",
            &"é".repeat(70),
            "adb:adb-R58M12ABCDE-6Ijx7F._adb-tls-connect._tcp",
        ] {
            let id = device_id(identity);
            hello(&id, &facts("x")).unwrap_or_else(|e| panic!("{identity}: {e:?}"));
        }
    }

    #[test]
    fn hello_names_the_model_and_bounds_fields() {
        let hello = hello("android-x", &facts("x")).unwrap();
        assert_eq!(hello.device_name, "Pixel 7");
        assert_eq!(hello.model, "Google Pixel 7");
        assert_eq!(hello.os_version, "14 (API 34)");
        assert_eq!(hello.protocol_version, PROTOCOL_VERSION);

        let mut odd = facts("x");
        odd.manufacturer = "samsung".into();
        odd.model = format!("SAMSUNG SM-G973F\u{7}{}", "x".repeat(100));
        let hello = super::hello("android-x", &odd).unwrap();
        assert!(hello.model.starts_with("SAMSUNG SM-G973F"));
        assert_eq!(hello.model.chars().count(), MAX_IDENTITY_LEN);

        // Hidden characters in what the phone reports are dropped, not refused.
        let mut hidden = facts("x");
        hidden.model = "Pixel\u{202E}7 \u{200B}Pro\u{2066}".into();
        hidden.manufacturer = "\u{FEFF}Google".into();
        let hello = super::hello("android-x", &hidden).unwrap();
        assert_eq!(hello.device_name, "Pixel7 Pro");
        assert_eq!(hello.model, "Google Pixel7 Pro");
        let mut invisible = facts("x");
        invisible.model = "\u{202E}\u{200B}".into();
        invisible.manufacturer = String::new();
        assert_eq!(
            super::hello("android-x", &invisible).unwrap().device_name,
            "Android device"
        );

        let mut nameless = facts("x");
        nameless.model = String::new();
        nameless.manufacturer = String::new();
        assert_eq!(
            super::hello("android-x", &nameless).unwrap().device_name,
            "Android device"
        );

        // A screen the hub would refuse is refused here first.
        let mut flat = facts("x");
        flat.screen.width = 0;
        assert!(super::hello("android-x", &flat).is_err());
    }
}
