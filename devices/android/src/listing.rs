//! What `adb devices -l` prints, read into [`Listed`] devices.
//!
//! The format is loose and has changed between adb versions: a header line (`List of devices
//! attached`), notices from a starting server (`* daemon not running; starting now at
//! tcp:5037`), then one line per transport: the serial, padded to 22 columns with `-l` (a tab
//! without it), the state, and with `-l` `key:value` pairs (`usb:1-1 product:sdk_gphone64
//! model:Pixel_7 device:panther transport_id:3`). Serials can be `emulator-5554`,
//! `192.168.1.5:5555` or mDNS names; the state `no permissions` carries a sentence with spaces
//! and a URL. So the serial is the first word, the state runs up to the first `key:value` pair,
//! and a line that is neither is skipped rather than guessed at.

/// The state adb reports for one transport. Only [`AdbState::Device`] can be driven.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AdbState {
    /// Online and authorized: usable.
    Device,
    /// adb lost contact with it (or has not made contact yet).
    Offline,
    /// The phone has not accepted this computer's USB debugging key.
    Unauthorized,
    /// The phone shows the USB debugging prompt now.
    Authorizing,
    /// adb is connecting to it.
    Connecting,
    /// In the bootloader (fastboot).
    Bootloader,
    /// In recovery.
    Recovery,
    /// In rescue mode.
    Rescue,
    /// Waiting for `adb sideload`.
    Sideload,
    /// A host transport.
    Host,
    /// Detached from this adb server.
    Detached,
    /// adb may not open the USB device; adb's own words (with the URL it gives).
    NoPermissions(String),
    /// A state this parser does not know, as printed.
    Other(String),
}

impl AdbState {
    fn parse(text: &str) -> AdbState {
        match text {
            "device" => AdbState::Device,
            "offline" => AdbState::Offline,
            "unauthorized" => AdbState::Unauthorized,
            "authorizing" => AdbState::Authorizing,
            "connecting" => AdbState::Connecting,
            "bootloader" => AdbState::Bootloader,
            "recovery" => AdbState::Recovery,
            "rescue" => AdbState::Rescue,
            "sideload" => AdbState::Sideload,
            "host" => AdbState::Host,
            "detached" => AdbState::Detached,
            other if other.starts_with("no permissions") => {
                AdbState::NoPermissions(other.to_owned())
            }
            other => AdbState::Other(other.to_owned()),
        }
    }

    /// Whether operations can run on a device in this state.
    pub fn usable(&self) -> bool {
        *self == AdbState::Device
    }

    /// Why a device in this state cannot be served, for the hub's `list_devices` and for people.
    pub fn reason(&self) -> String {
        let text = match self {
            AdbState::Device => "online",
            AdbState::Offline => {
                "offline: adb lost contact with the device (replug it, or run `adb reconnect`)"
            }
            AdbState::Unauthorized => "unauthorized: accept the USB debugging prompt on the phone",
            AdbState::Authorizing => "authorizing: accept the USB debugging prompt on the phone",
            AdbState::Connecting => "connecting: adb is still connecting to the device",
            AdbState::Bootloader => "in the bootloader: restart the phone into Android",
            AdbState::Recovery => "in recovery: restart the phone into Android",
            AdbState::Rescue => "in rescue mode: restart the phone into Android",
            AdbState::Sideload => "waiting for adb sideload: restart the phone into Android",
            AdbState::Host => "a host transport, not a device",
            AdbState::Detached => "detached from adb: run `adb attach`",
            AdbState::NoPermissions(text) => {
                return format!("{text} (adb may not open the USB device: check the udev rules)");
            }
            AdbState::Other(text) => return format!("unusable: adb reports the state {text:?}"),
        };
        text.to_owned()
    }
}

/// One line of the listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    /// The adb serial (`emulator-5554`, `192.168.1.5:5555`): what `-s` takes.
    pub serial: String,
    /// Its state.
    pub state: AdbState,
    /// The `usb:` attribute, when adb reached it over USB.
    pub usb: Option<String>,
    /// The `model:` attribute (underscores for spaces), when given.
    pub model: Option<String>,
}

impl Listed {
    /// Whether adb reaches it over the network (`adb connect`, wireless debugging) rather than
    /// over USB or as a local emulator. A network transport is the one to drop when the same
    /// phone is listed twice: it is the slower and the less dependable.
    pub fn over_network(&self) -> bool {
        if self.usb.is_some() {
            return false;
        }
        let serial = self.serial.as_str();
        // `host:port`, `[v6]:port`, and mDNS service names of wireless debugging.
        serial.contains("._adb-tls-connect._tcp")
            || serial.contains("._adb._tcp")
            || serial
                .rsplit_once(':')
                .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok())
    }
}

/// Reads the whole output of `adb devices -l` (or `adb devices`).
pub fn parse(output: &str) -> Vec<Listed> {
    output.lines().filter_map(parse_line).collect()
}

fn parse_line(line: &str) -> Option<Listed> {
    let line = line.trim();
    if line.is_empty()
        || line.starts_with('*')
        || line.starts_with("List of devices")
        || line.starts_with("adb ")
        || line.starts_with("adb:")
        || line.starts_with("error:")
    {
        return None;
    }
    let mut words = line.split_whitespace();
    let serial = words.next()?.to_owned();
    let mut state_words = Vec::new();
    let mut usb = None;
    let mut model = None;
    let mut in_attributes = false;
    for word in words {
        match attribute(word) {
            Some((key, value)) if in_attributes || !state_words.is_empty() => {
                in_attributes = true;
                match key {
                    "usb" => usb = Some(value.to_owned()),
                    "model" => model = Some(value.to_owned()),
                    _ => {}
                }
            }
            _ if in_attributes => {}
            _ => state_words.push(word),
        }
    }
    if state_words.is_empty() {
        // A serial with no state is not a line of the listing (a stray message).
        return None;
    }
    Some(Listed {
        serial,
        state: AdbState::parse(&state_words.join(" ")),
        usb,
        model,
    })
}

/// `key:value` with a lower-case key and a value that is not a URL's `//…`.
fn attribute(word: &str) -> Option<(&str, &str)> {
    let (key, value) = word.split_once(':')?;
    let key_ok = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    (key_ok && !value.starts_with("//")).then_some((key, value))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(line: &str) -> Listed {
        let listed = parse(line);
        assert_eq!(listed.len(), 1, "{line:?} gave {listed:?}");
        listed.into_iter().next().unwrap()
    }

    #[test]
    fn a_real_listing_with_attributes_and_padding() {
        let output = "* daemon not running; starting now at tcp:5037\n\
            * daemon started successfully\n\
            List of devices attached\n\
            R58M12ABCDE            device usb:1-1 product:beyond1lteeea model:SM_G973F device:beyond1 transport_id:1\n\
            emulator-5554          device product:sdk_gphone64_x86_64 model:sdk_gphone64_x86_64 device:emu64x transport_id:2\n\
            192.168.1.5:5555       device product:panther model:Pixel_7 device:panther transport_id:3\n\
            \n";
        let listed = parse(output);
        assert_eq!(
            listed
                .iter()
                .map(|l| (l.serial.as_str(), &l.state))
                .collect::<Vec<_>>(),
            [
                ("R58M12ABCDE", &AdbState::Device),
                ("emulator-5554", &AdbState::Device),
                ("192.168.1.5:5555", &AdbState::Device),
            ]
        );
        assert_eq!(listed[0].usb.as_deref(), Some("1-1"));
        assert_eq!(listed[0].model.as_deref(), Some("SM_G973F"));
        assert!(!listed[0].over_network());
        assert!(!listed[1].over_network());
        assert!(listed[2].over_network());
        assert_eq!(listed[2].model.as_deref(), Some("Pixel_7"));
    }

    #[test]
    fn every_state_is_read() {
        for (text, state) in [
            ("device", AdbState::Device),
            ("offline", AdbState::Offline),
            ("unauthorized", AdbState::Unauthorized),
            ("authorizing", AdbState::Authorizing),
            ("connecting", AdbState::Connecting),
            ("bootloader", AdbState::Bootloader),
            ("recovery", AdbState::Recovery),
            ("rescue", AdbState::Rescue),
            ("sideload", AdbState::Sideload),
            ("host", AdbState::Host),
            ("detached", AdbState::Detached),
            ("sleeping", AdbState::Other("sleeping".into())),
        ] {
            // With -l (padded, attributes) and without (a tab).
            let padded = format!("{:<22} {text} usb:3-2 transport_id:7", "0A1B2C");
            assert_eq!(one(&padded).state, state, "{padded:?}");
            assert_eq!(one(&format!("0A1B2C\t{text}")).state, state);
        }
    }

    #[test]
    fn no_permissions_keeps_its_sentence_and_url() {
        let line = "0123456789ABCDEF       no permissions (user in plugdev group; are your udev \
                    rules wrong?); see [http://developer.android.com/tools/device.html] usb:1-4 \
                    transport_id:5";
        let listed = one(line);
        assert_eq!(listed.serial, "0123456789ABCDEF");
        let AdbState::NoPermissions(text) = &listed.state else {
            panic!("{listed:?}");
        };
        assert_eq!(
            text,
            "no permissions (user in plugdev group; are your udev rules wrong?); see \
             [http://developer.android.com/tools/device.html]"
        );
        assert_eq!(listed.usb.as_deref(), Some("1-4"));
        assert!(!listed.state.usable());
        assert!(listed.state.reason().contains("udev"));
        // The older wording, without attributes.
        let old = one(
            "???????????? no permissions; see [http://developer.android.com/tools/device.html]",
        );
        assert!(matches!(old.state, AdbState::NoPermissions(_)));
    }

    #[test]
    fn odd_serials_are_kept_whole() {
        for serial in [
            "192.168.1.5:5555",
            "[fe80::1%wlan0]:5555",
            "adb-R58M12ABCDE-6Ijx7F._adb-tls-connect._tcp",
            "emulator-5554",
            "localhost:5555",
        ] {
            let listed = one(&format!("{serial}\tdevice"));
            assert_eq!(listed.serial, serial);
            assert!(
                listed.over_network() == (serial != "emulator-5554"),
                "{serial}"
            );
        }
    }

    #[test]
    fn noise_is_skipped_not_guessed() {
        let output = "adb server version (41) doesn't match this client (39); killing...\n\
            error: cannot connect to daemon\n\
            List of devices attached\n\
            lonely-serial\n";
        assert_eq!(parse(output), []);
        assert_eq!(parse(""), []);
    }

    #[test]
    fn reasons_say_what_to_do() {
        assert_eq!(
            AdbState::Unauthorized.reason(),
            "unauthorized: accept the USB debugging prompt on the phone"
        );
        assert!(AdbState::Offline.reason().starts_with("offline"));
        assert!(AdbState::Device.usable());
        assert!(!AdbState::Authorizing.usable());
    }
}
