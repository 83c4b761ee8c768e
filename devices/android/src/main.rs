//! The `tabwire-android` binary: arguments, logging, the checks that must pass before anything
//! is served (the hub URL, the owner's policy, adb itself, the pairing key's directory), then
//! the [`Backend`] until SIGINT or SIGTERM.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
use tabwire_android::adb::AdbProgram;
use tabwire_android::backend::{Backend, check_adb};
use tabwire_android::device::DeviceOptions;
use tabwire_device_kit::cli::{self, HubArgs};

const PROGRAM: &str = "tabwire-android";

/// Serves the Android phones and emulators attached to adb to a tabwire hub: one device
/// connection per phone, hot-plugged as adb sees them come and go.
///
/// With a local hub (ws://, the default) the backend pairs once — with a code from
/// `tabwire-hub pair --device` (TABWIRE_PAIRING_CODE or --pairing-code-file), or by running
/// that command itself — and keeps the key in --state-dir. With a hosted hub (wss://) it sends
/// its token (TABWIRE_TOKEN or --token-file). Secrets never go on the command line: other users
/// read it in `ps`.
#[derive(Parser)]
#[command(version, about)]
struct Args {
    #[command(flatten)]
    hub: HubArgs,
    /// The adb program (default: $ADB, else `adb` on PATH).
    #[arg(long, value_name = "PATH")]
    adb: Option<PathBuf>,
    /// Serve only this adb serial (repeatable); default: every device adb lists.
    #[arg(long = "serial", value_name = "SERIAL")]
    serials: Vec<String>,
    /// Where the pairing key is kept (default: $XDG_STATE_HOME/tabwire-android, else
    /// ~/.local/state/tabwire-android).
    #[arg(long, env = "TABWIRE_ANDROID_STATE_DIR", value_name = "DIR")]
    state_dir: Option<PathBuf>,
    /// Allow destructive options (clearing an app's data, replacing an installed app).
    #[arg(long)]
    allow_destructive: bool,
    /// Allow agents to install apps (install_app); they stay on the phone after the session.
    #[arg(long)]
    allow_install: bool,
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    cli::init_logging(PROGRAM);
    cli::exit(PROGRAM, run(args).await)
}

async fn run(args: Args) -> anyhow::Result<()> {
    let hub = args.hub.open(PROGRAM, args.state_dir.as_deref())?;
    let adb = AdbProgram::choose(args.adb.clone());
    let program = adb.program().display().to_string();
    let version = check_adb(&adb, &program)
        .await
        .map_err(anyhow::Error::msg)?;
    tracing::info!(adb = %program, %version, "using adb");
    if args.allow_destructive {
        tracing::warn!("--allow-destructive: agents may clear apps' data on the attached devices");
    }
    // The one line operators and tests wait for.
    eprintln!("{PROGRAM} serving hub={} adb={program}", hub.endpoint.url());
    Backend {
        adb: Arc::new(adb),
        endpoint: hub.endpoint,
        credentials: hub.credentials,
        options: DeviceOptions {
            allow_destructive: args.allow_destructive,
            allow_install: args.allow_install,
            owner_policy: hub.owner_policy,
        },
        serials: args.serials,
    }
    .run(cli::shutdown_signal())
    .await;
    Ok(())
}
