//! The `latlab` binary: parse, dispatch, map errors to exit codes (0 ok, 1 check failed,
//! 2 bad usage, 3 environment can't do it).

use clap::Parser;

fn main() {
    let argv: Vec<String> = std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let cli = match latlab::cli::Cli::try_parse_from(&argv) {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            std::process::exit(code);
        }
    };
    if let Err(e) = latlab::app::run(cli, argv) {
        eprintln!("latlab: {e}");
        std::process::exit(e.exit_code());
    }
}
