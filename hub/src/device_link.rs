//! The `/device` endpoint: where device backends (`tabwire-android`) connect, one WebSocket per
//! device ([`crate::peer_link`] does the work, as for browsers).
//!
//! A backend is a native program, and no web page may reach this endpoint: an upgrade that
//! carries an `Origin` header (every browser sends one) is refused before anything else. In
//! local mode a backend proves a pairing of the device kind (`tabwire-hub pair --device`),
//! whose one key registers the devices the backend serves, up to
//! `KindSpec::per_credential` of the kinds table at once; in hosted mode it brings a device token
//! (`Authorization: Bearer`, or the `tabwire.bearer.<token>` subprotocol). A backend says why a
//! device went away (`gone`) before closing its connection, and `list_devices` shows it.

use tabwire_protocol::{DeviceHello, DeviceMessage, Refusal, check_device_hello};

use crate::peer::Device;
use crate::peer_link::Linked;
use crate::peer_read::{Incoming, Reads};

impl Linked for Device {
    fn check_origin(origin: Option<&str>) -> Result<(), &'static str> {
        match origin {
            None => Ok(()),
            Some(_) => Err("only a device backend may connect here, and web pages never"),
        }
    }

    fn proof(hello: &DeviceHello) -> Option<&str> {
        hello.proof.as_deref()
    }

    fn managed_code(_hello: &DeviceHello) -> bool {
        false
    }
}

impl Reads for Device {
    type Message = DeviceMessage;

    fn incoming(message: DeviceMessage) -> Incoming<DeviceHello> {
        match message {
            DeviceMessage::Challenge(challenge) => Incoming::Challenge(challenge),
            DeviceMessage::Hello(hello) => Incoming::Hello(hello),
            DeviceMessage::Response(response) => Incoming::Response(response),
            DeviceMessage::Heartbeat { .. } => Incoming::Heartbeat,
            DeviceMessage::Gone { reason } => Incoming::Gone(reason),
        }
    }

    fn check_hello(hello: &DeviceHello) -> Result<(), Refusal> {
        check_device_hello(hello)
    }
}
