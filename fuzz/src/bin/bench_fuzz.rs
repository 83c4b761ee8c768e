//! `bench-fuzz`: runs every fuzz target (or one) for N inputs and prints, per target, the
//! inputs run, panics, inputs past the per-input budget, the slowest input and the rate.
//! Exits 1 when any input panicked or ran past the budget (docs/fuzzing.md).
//!
//! `bench-fuzz [--inputs N] [--seed S] [--target NAME] [--budget-ms MS] [--list] [--replay FILE]`

use std::process::ExitCode;
use std::time::Duration;

use tabwire_fuzz::runner::{Settings, run};
use tabwire_fuzz::targets::all;

fn main() -> ExitCode {
    let mut settings = Settings {
        inputs: 1_000_000,
        seed: 24,
        budget: Duration::from_secs(1),
        stuck: Duration::from_secs(30),
    };
    let mut only: Option<String> = None;
    let mut replay: Option<String> = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| {
            args.next()
                .unwrap_or_else(|| usage(&format!("{name} needs a value")))
        };
        match arg.as_str() {
            "--inputs" => settings.inputs = number(&value("--inputs")),
            "--seed" => settings.seed = number(&value("--seed")),
            "--target" => only = Some(value("--target")),
            "--budget-ms" => settings.budget = Duration::from_millis(number(&value("--budget-ms"))),
            "--replay" => replay = Some(value("--replay")),
            "--list" => {
                for target in all() {
                    println!("{:<24} {}", target.name, target.entry);
                }
                return ExitCode::SUCCESS;
            }
            "-h" | "--help" => usage(""),
            other => usage(&format!("unknown argument {other}")),
        }
    }
    let targets: Vec<_> = all()
        .into_iter()
        .filter(|t| only.as_deref().is_none_or(|name| t.name == name))
        .collect();
    if targets.is_empty() {
        usage("no such target (--list shows them)");
    }
    if let Some(file) = replay {
        // One input, read from a file, fed to the targets chosen: a finding reproduced.
        let input = std::fs::read(&file).unwrap_or_else(|error| usage(&format!("{file}: {error}")));
        let input = String::from_utf8_lossy(&input);
        for target in &targets {
            let (took, outcome) = tabwire_fuzz::runner::replay(target, &input);
            println!(
                "{}: {:.3} ms, {}",
                target.name,
                took.as_secs_f64() * 1000.0,
                outcome
            );
        }
        return ExitCode::SUCCESS;
    }
    println!(
        "bench-fuzz: {} inputs per target, seed {}, budget {:?} per input",
        settings.inputs, settings.seed, settings.budget
    );
    println!(
        "| target | inputs | panics | over budget | slowest input | inputs/s |\n| --- | ---: | ---: | ---: | ---: | ---: |"
    );
    let mut failed = false;
    for target in &targets {
        let report = run(target, settings);
        println!(
            "| {} | {} | {} | {} | {:.2} ms ({} B) | {:.0} |",
            report.name,
            report.inputs,
            report.panic_count,
            report.hang_count,
            report.slowest.as_secs_f64() * 1000.0,
            report.slowest_len,
            report.rate()
        );
        for finding in report.panics.iter().chain(&report.hangs) {
            failed = true;
            eprintln!(
                "  {} input #{} (seed {}): {}\n    {:?}",
                report.name,
                finding.index,
                settings.seed,
                finding.what,
                finding.input.chars().take(2000).collect::<String>()
            );
        }
        failed |= report.panic_count > 0 || report.hang_count > 0;
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

fn number<T: std::str::FromStr>(text: &str) -> T {
    text.parse()
        .unwrap_or_else(|_| usage(&format!("{text} is not a number")))
}

fn usage(problem: &str) -> ! {
    if !problem.is_empty() {
        eprintln!("bench-fuzz: {problem}");
    }
    eprintln!(
        "usage: bench-fuzz [--inputs N (1000000)] [--seed S (24)] [--target NAME] [--budget-ms MS (1000)] [--list] [--replay FILE]"
    );
    std::process::exit(2)
}
