//! Writes a seeded generated fleet (`benches/fleet/seeded.rs`) to a folder, for
//! `benches/scale.sh` and for looking at one by hand.
//!
//! Usage: `cargo run --release --example fleetgen -- <dir> <tenants> <cells> [seed]`; the folder
//! must not exist or be empty. Prints the number of files and bytes written.

#![allow(clippy::print_stdout, clippy::print_stderr)] // A command-line tool.

#[path = "fleet/seeded.rs"]
mod seeded;

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let number = |idx: usize, default: u64| -> Option<u64> {
        args.get(idx).map_or(Some(default), |arg| arg.parse().ok())
    };
    let (Some(dir), Some(tenants), Some(cells), Some(seed)) =
        (args.first(), number(1, 250), number(2, 20), number(3, 23))
    else {
        eprintln!("usage: fleetgen <dir> <tenants> <cells> [seed]");
        return std::process::ExitCode::from(2);
    };
    let root = std::path::Path::new(dir);
    if std::fs::read_dir(root).is_ok_and(|mut entries| entries.next().is_some()) {
        eprintln!("fleetgen: {dir} is not empty");
        return std::process::ExitCode::from(2);
    }
    let shape = seeded::Shape {
        tenants: tenants as usize,
        cells: cells as usize,
        seed,
    };
    match seeded::write(shape, root) {
        Ok(bytes) => {
            println!("{} files, {bytes} bytes", seeded::generate(shape).len());
            std::process::ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("fleetgen: {dir}: {error}");
            std::process::ExitCode::from(2)
        }
    }
}
