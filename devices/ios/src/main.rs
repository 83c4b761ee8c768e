//! The `tabwire-ios` binary: arguments, logging, the checks that must pass before anything is
//! served (the hub URL, the owner's policy, each WebDriverAgent answering), then one link per
//! device until SIGINT or SIGTERM.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use tabwire_device_kit::cli::{self, HubArgs};
use tabwire_ios::backend::{Backend, WdaTarget};
use tabwire_ios::device::IosOptions;
use tabwire_ios::wda::WdaUrl;

const PROGRAM: &str = "tabwire-ios";

/// Serves iPhones and simulators to a tabwire hub through WebDriverAgent (the XCUITest server
/// Appium and others use): one device connection per WDA URL.
///
/// Run WDA on the Mac the device is attached to (`xcodebuild … test` of WebDriverAgentRunner,
/// or Appium's copy), forward a USB iPhone's port with `iproxy 8100 8100`, and pass each URL
/// with --wda. Pairing and tokens work as for tabwire-android.
#[derive(Parser)]
#[command(version, about)]
struct Args {
    #[command(flatten)]
    hub: HubArgs,
    /// A WebDriverAgent's URL (repeatable, one per device): http://127.0.0.1:8100.
    #[arg(long = "wda", value_name = "URL", required = true)]
    wdas: Vec<String>,
    /// Accept WebDriverAgent URLs off loopback. WDA has no authentication and speaks plain
    /// HTTP: whoever reaches its port drives the phone and reads what is typed.
    #[arg(long)]
    allow_remote_wda: bool,
    /// Where the pairing key is kept (default: $XDG_STATE_HOME/tabwire-ios, else
    /// ~/.local/state/tabwire-ios).
    #[arg(long, env = "TABWIRE_IOS_STATE_DIR", value_name = "DIR")]
    state_dir: Option<PathBuf>,
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    cli::init_logging(PROGRAM);
    cli::exit(PROGRAM, run(args).await)
}

async fn run(args: Args) -> anyhow::Result<()> {
    let targets = args
        .wdas
        .iter()
        .map(|text| WdaUrl::parse(text, args.allow_remote_wda).map(WdaTarget::new))
        .collect::<Result<Vec<_>, _>>()
        .map_err(anyhow::Error::msg)?;
    let hub = args.hub.open(PROGRAM, args.state_dir.as_deref())?;
    // The one line operators and tests wait for.
    eprintln!(
        "{PROGRAM} serving hub={} wda={}",
        hub.endpoint.url(),
        args.wdas.join(",")
    );
    Backend {
        targets,
        endpoint: hub.endpoint,
        credentials: hub.credentials,
        options: IosOptions {
            owner_policy: hub.owner_policy,
        },
    }
    .run(cli::shutdown_signal())
    .await;
    Ok(())
}
