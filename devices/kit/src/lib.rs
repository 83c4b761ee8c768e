//! `tabwire-device-kit`: what every device backend shares, whatever drives the device (SPEC
//! §10). A platform is an adapter on top: it reads the screen into [`node::ScreenNode`]s,
//! sends input, and implements [`link::Served`]; its binary flattens [`cli::HubArgs`] and runs
//! one [`link::DeviceLink`] per device. `tabwire-android` (adb) and `tabwire-ios`
//! (WebDriverAgent) are the two platforms.
//!
//! The device side:
//! - [`node`]: the nodes an observation shows, as every platform's reader produces them.
//! - [`refs`]: `@d` refs kept by identity across looks at the screen.
//! - [`view`]: a screen as observations show it, through `tabwire-observation` (rendering,
//!   windows, budgets, queries, paging, `since` deltas).
//! - [`screenshot`]: a screenshot's PNG scaled down with a box filter.
//! - [`gesture`]: where swipes start and end, and the bounds on gestures.
//! - [`xml`]: how deep device XML nests, checked before it is parsed.
//! - [`safety`]: the device's lease and both owners' app rules, at the point of effect.
//! - [`queue`]: operations one at a time, within their deadlines, against their cancels.
//! - [`cancel`]: stopping an operation the hub cancelled, and whether its input went out.
//!
//! The hub side:
//! - [`endpoint`]: the hub URL, local or hosted, tokens and TLS.
//! - [`keys`]: the pairing key per hub URL in the private state directory, and pairing codes.
//! - [`link`]: one device's connection: pairing exchange, hello, requests, heartbeats, backoff.
//! - [`cli`]: the arguments and start-up checks every backend binary shares.
#![deny(missing_docs)]

pub mod cancel;
pub mod gesture;
pub mod node;
pub mod queue;
pub mod refs;
pub mod safety;
pub mod screenshot;
pub mod view;
pub mod xml;

pub mod cli;
pub mod endpoint;
pub mod keys;
pub mod link;
