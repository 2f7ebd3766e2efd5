//! `kapi-consistency-check HISTORY.jsonl` (or `-` for standard input): reads a recorded
//! history, runs every check and prints the report. Exits 0 when every check passed, 1 on a
//! violation, 2 when the history could not be read or a key's search was inconclusive.

use kapi_consistency::{check, History};
use std::fs::File;
use std::io::{self, BufReader};
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [path] = args.as_slice() else {
        eprintln!("usage: kapi-consistency-check HISTORY.jsonl (or - for standard input)");
        return ExitCode::from(2);
    };
    let history = if path == "-" {
        History::from_jsonl(io::stdin().lock())
    } else {
        match File::open(path) {
            Ok(file) => History::from_jsonl(BufReader::new(file)),
            Err(e) => {
                eprintln!("{path}: {e}");
                return ExitCode::from(2);
            }
        }
    };
    let history = match history {
        Ok(h) => h,
        Err(e) => {
            eprintln!("{path}: {e}");
            return ExitCode::from(2);
        }
    };
    let report = check(&history);
    print!("{report}");
    if !report.violations.is_empty() {
        ExitCode::from(1)
    } else if !report.passed() {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    }
}
