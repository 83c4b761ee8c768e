//! One WebSocket to the hub, with its callbacks turned into a stream of [`SocketEvent`]s.
//!
//! The socket's JS callbacks post into a [`Mailbox`] that the connection loop reads. Dropping
//! a [`Socket`] unhooks the callbacks first and then closes the socket, so a socket that has
//! been given up on can never deliver another event or carry another message.

use wasm_bindgen::prelude::*;
use web_sys::{BinaryType, CloseEvent, Event, MessageEvent, WebSocket};

use crate::chrome::JsFailure;
use crate::config::AccessToken;
use crate::mailbox::Mailbox;

/// What happened on the socket.
#[derive(Debug)]
pub enum SocketEvent {
    /// The connection is open.
    Open,
    /// A text message arrived.
    Message(String),
    /// A binary message arrived (the protocol has none).
    Binary,
    /// The connection closed.
    Closed {
        /// The close code (1006 when the connection just dropped).
        code: u16,
        /// The reason the other side gave, if any.
        reason: String,
    },
}

/// An open (or opening) WebSocket and its callbacks.
pub struct Socket {
    ws: WebSocket,
    events: Mailbox<SocketEvent>,
    /// Held only so JS can call them while the socket lives; unhooked in `drop`.
    _callbacks: Callbacks,
}

type Callbacks = (
    Closure<dyn FnMut(Event)>,
    Closure<dyn FnMut(MessageEvent)>,
    Closure<dyn FnMut(CloseEvent)>,
);

impl Socket {
    /// Starts connecting to `url`. With a token it offers the subprotocols `tabwire` and
    /// `tabwire.bearer.<token>` (a browser WebSocket cannot set an `Authorization` header);
    /// without one it dials exactly as in local mode. A failure's message may quote the
    /// subprotocols: the caller redacts it.
    pub fn open(url: &str, token: Option<&AccessToken>) -> Result<Self, JsFailure> {
        let ws = match token {
            None => WebSocket::new(url)?,
            Some(token) => {
                let protocols: js_sys::Array = token
                    .subprotocols()
                    .iter()
                    .map(|p| JsValue::from_str(p))
                    .collect();
                WebSocket::new_with_str_sequence(url, &protocols)?
            }
        };
        ws.set_binary_type(BinaryType::Arraybuffer);
        let events = Mailbox::new();

        let sink = events.clone();
        let on_open = Closure::<dyn FnMut(Event)>::new(move |_| sink.post(SocketEvent::Open));
        let sink = events.clone();
        let on_message = Closure::<dyn FnMut(MessageEvent)>::new(move |event: MessageEvent| {
            sink.post(match event.data().as_string() {
                Some(text) => SocketEvent::Message(text),
                None => SocketEvent::Binary,
            })
        });
        let sink = events.clone();
        let on_close = Closure::<dyn FnMut(CloseEvent)>::new(move |event: CloseEvent| {
            sink.post(SocketEvent::Closed {
                code: event.code(),
                reason: event.reason(),
            })
        });
        ws.set_onopen(Some(on_open.as_ref().unchecked_ref()));
        ws.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
        ws.set_onclose(Some(on_close.as_ref().unchecked_ref()));
        // `error` is always followed by `close`, which carries everything useful.
        Ok(Socket {
            ws,
            events,
            _callbacks: (on_open, on_message, on_close),
        })
    }

    /// Waits for the next event.
    pub async fn next(&self) -> SocketEvent {
        self.events.recv().await
    }

    /// A handle for sending from request tasks; see [`crate::connection::Link`].
    pub fn handle(&self) -> WebSocket {
        self.ws.clone()
    }

    /// Sends a text message.
    pub fn send(&self, text: &str) -> Result<(), JsFailure> {
        Ok(self.ws.send_with_str(text)?)
    }
}

impl Drop for Socket {
    fn drop(&mut self) {
        self.ws.set_onopen(None);
        self.ws.set_onmessage(None);
        self.ws.set_onclose(None);
        let state = self.ws.ready_state();
        if state == WebSocket::CONNECTING || state == WebSocket::OPEN {
            // 1000: a normal closure; tabwire gave up on this connection on purpose.
            let _ = self.ws.close_with_code(1000);
        }
    }
}

/// A sentence for the popup about why a socket closed.
pub fn close_reason(code: u16, reason: &str) -> String {
    let what = match code {
        1000 => "the hub closed the connection",
        1001 => "the hub is going away",
        1006 => "the connection was lost (the hub is unreachable or stopped)",
        1008 => "the hub rejected the connection (policy)",
        1011 => "the hub hit an internal error",
        _ => "the connection closed",
    };
    if reason.is_empty() {
        format!("{what} (code {code})")
    } else {
        format!("{what} (code {code}: {reason})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn close_reasons_read_well() {
        assert_eq!(
            close_reason(1006, ""),
            "the connection was lost (the hub is unreachable or stopped) (code 1006)"
        );
        assert_eq!(
            close_reason(4001, "bad token"),
            "the connection closed (code 4001: bad token)"
        );
    }
}
