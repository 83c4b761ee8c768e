//! The `/browser` endpoint: where extensions connect ([`crate::peer_link`] does the work).
//!
//! Only extension origins (`chrome-extension://…`) may open it, so an ordinary web page the
//! user visits cannot reach the local hub. In local mode a browser proves a pairing of the
//! browser kind, whose key registers its one browser ID; in hosted mode it brings a browser
//! token (the `tabwire.bearer.<token>` subprotocol, since a browser's WebSocket cannot send an
//! `Authorization` header).

use tabwire_protocol::{ExtensionMessage, Hello, Refusal, check_hello};

use crate::peer::Browser;
use crate::peer_link::Linked;
use crate::peer_read::{Incoming, Reads};

impl Linked for Browser {
    fn check_origin(origin: Option<&str>) -> Result<(), &'static str> {
        match origin {
            Some(origin) if origin.starts_with("chrome-extension://") => Ok(()),
            _ => Err("only the tabwire browser extension may connect here"),
        }
    }

    fn proof(hello: &Hello) -> Option<&str> {
        hello.proof.as_deref()
    }

    fn managed_code(hello: &Hello) -> bool {
        hello.managed_code
    }
}

impl Reads for Browser {
    type Message = ExtensionMessage;

    fn incoming(message: ExtensionMessage) -> Incoming<Hello> {
        match message {
            ExtensionMessage::Challenge(challenge) => Incoming::Challenge(challenge),
            ExtensionMessage::Hello(hello) => Incoming::Hello(hello),
            ExtensionMessage::Response(response) => Incoming::Response(response),
            ExtensionMessage::Heartbeat { .. } => Incoming::Heartbeat,
        }
    }

    fn check_hello(hello: &Hello) -> Result<(), Refusal> {
        check_hello(hello)
    }
}
