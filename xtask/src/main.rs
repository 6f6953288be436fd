//! Development tasks of the mesh workspace (`cargo run -p xtask -- TASK`),
//! kept out of the operator's binaries: none of them has a hidden flag for
//! this.
//!
//! `docs OUT` writes, from each binary's own clap command line (so they
//! never drift from `--help`), with clap's standard generators
//! (`clap_mangen`, `clap_complete`):
//!
//! - `OUT/man1/<binary>.1` (and `<binary>-<command>.1` for each command
//!   of `mesh-controller`), roff man pages, each with an ENVIRONMENT
//!   section listing its `MESH_*` variables (`environment.rs`);
//! - `OUT/bash/<binary>`, `OUT/zsh/_<binary>` and `OUT/fish/<binary>.fish`,
//!   shell completions, named as Debian's bash-completion, zsh and fish
//!   packages look them up.
//!
//! `scripts/package` runs it and puts the files in the `.deb`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap_complete::Shell;
use mesh_runtime::credentials::{StandIn, NATS_PASSWORD};

mod environment;

/// A function returning a binary's clap command line.
type CommandLine = fn() -> clap::Command;

/// Every binary the package ships, with the function returning its
/// command line and the systemd credentials it reads. A new binary is one
/// line here (and its crate in `Cargo.toml`).
const BINARIES: &[(&str, CommandLine, &[StandIn])] = &[
    (
        "mesh-controller",
        mesh_controller::command,
        &mesh_controller::CREDENTIALS,
    ),
    (
        "mesh-console",
        mesh_console::command,
        &mesh_console::CREDENTIALS,
    ),
    (
        "mesh-postgres",
        mesh_provider_postgres::cli::command,
        &[NATS_PASSWORD, mesh_provider_postgres::cli::ADMIN_PASSWORD],
    ),
    (
        "mesh-identity",
        mesh_provider_identity::cli::command,
        &[
            NATS_PASSWORD,
            mesh_provider_identity::cli::ADMIN_PASSWORD,
            mesh_provider_identity::cli::ADMIN_CLIENT_SECRET,
        ],
    ),
    ("mesh-grants", mesh_grants::cli::command, &[NATS_PASSWORD]),
    ("mesh-provide", mesh_provide::cli::command, &[NATS_PASSWORD]),
];

/// The shells completions are written for, with their folder under `OUT`.
const SHELLS: &[(Shell, &str)] = &[
    (Shell::Bash, "bash"),
    (Shell::Zsh, "zsh"),
    (Shell::Fish, "fish"),
];

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [task, out] if task == "docs" => match docs(Path::new(out)) {
            Ok(written) => {
                println!("xtask docs: {} files in {out}", written.len());
                ExitCode::SUCCESS
            }
            Err(error) => {
                eprintln!("xtask docs: {error}");
                ExitCode::FAILURE
            }
        },
        _ => {
            eprintln!("usage: cargo run -p xtask -- docs OUT   (man pages and shell completions into OUT)");
            ExitCode::from(2)
        }
    }
}

/// Writes the man pages and completions of every binary into `out`;
/// returns the files written.
fn docs(out: &Path) -> std::io::Result<Vec<PathBuf>> {
    let man = out.join("man1");
    std::fs::create_dir_all(&man)?;
    for (_, folder) in SHELLS {
        std::fs::create_dir_all(out.join(folder))?;
    }
    let mut written = Vec::new();
    for (binary, command, credentials) in BINARIES {
        let command = command().name(*binary).bin_name(*binary);
        clap_mangen::generate_to(command.clone(), &man)?;
        let mut built = command.clone();
        built.build();
        add_environment(&built, &man, credentials)?;
        for (shell, folder) in SHELLS {
            let mut command = command.clone();
            let path = clap_complete::generate_to(*shell, &mut command, *binary, out.join(folder))?;
            // bash-completion looks a command's completion up by its name alone.
            if *shell == Shell::Bash {
                let plain = path.with_file_name(binary);
                std::fs::rename(&path, &plain)?;
                written.push(plain);
            } else {
                written.push(path);
            }
        }
    }
    for entry in std::fs::read_dir(&man)? {
        written.push(entry?.path());
    }
    written.sort();
    Ok(written)
}

/// Puts the ENVIRONMENT section into the page of `command` (as built, so
/// its global flags are there) and of each of its subcommands, named as
/// `clap_mangen` names them (`mesh-controller-node-show.1`).
fn add_environment(
    command: &clap::Command,
    man: &Path,
    credentials: &[StandIn],
) -> std::io::Result<()> {
    let name = command.get_display_name().unwrap_or(command.get_name());
    let page = man.join(format!("{name}.1"));
    let section = environment::section(command, credentials);
    if page.exists() && !section.is_empty() {
        let text = std::fs::read_to_string(&page)?;
        std::fs::write(&page, environment::insert(&text, &section))?;
    }
    for sub in command.get_subcommands() {
        add_environment(sub, man, credentials)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_binary_gets_its_pages_and_completions() {
        let dir = tempfile::tempdir().unwrap();
        let written = docs(dir.path()).unwrap();
        let names: Vec<String> = written
            .iter()
            .map(|p| p.strip_prefix(dir.path()).unwrap().display().to_string())
            .collect();
        for (binary, _, _) in BINARIES {
            for file in [
                format!("man1/{binary}.1"),
                format!("bash/{binary}"),
                format!("zsh/_{binary}"),
                format!("fish/{binary}.fish"),
            ] {
                assert!(names.contains(&file), "{file} in {names:?}");
            }
        }
        for command in [
            "status",
            "serve",
            "permissions",
            "contributions",
            "node-show",
            "history",
        ] {
            let page = format!("man1/mesh-controller-{command}.1");
            assert!(names.contains(&page), "{page} in {names:?}");
        }
        // The moved `console` is hidden: it has no page of its own.
        let moved = "man1/mesh-controller-console.1".to_owned();
        assert!(!names.contains(&moved), "{names:?}");
        assert!(
            names.contains(&"man1/mesh-provide-conform.1".to_owned()),
            "{names:?}"
        );
        let page = std::fs::read_to_string(dir.path().join("man1/mesh-postgres.1")).unwrap();
        assert!(page.starts_with(".ie \\n(.g .ds Aq"), "{}", &page[..80]);
        assert!(
            page.contains("admin\\-url") && page.contains("contributions"),
            "the shared and own flags"
        );
        // Each page lists the variables its command takes, before VERSION.
        let environment = page
            .find(".SH ENVIRONMENT")
            .expect("an ENVIRONMENT section");
        assert!(environment < page.find(".SH VERSION").unwrap());
        for variable in [
            "MESH_POSTGRES_ADMIN_URL",
            "MESH_CONTRIBUTIONS",
            "MESH_NATS_USER",
        ] {
            assert!(page[environment..].contains(variable), "{variable}");
        }
        assert!(page.contains("admin\\-password for MESH_POSTGRES_ADMIN_PASSWORD_FILE"));
        let serve =
            std::fs::read_to_string(dir.path().join("man1/mesh-controller-serve.1")).unwrap();
        for variable in ["MESH_DATABASE_URL", "MESH_BATCH", "MESH_NATS_URL"] {
            assert!(serve.contains(variable), "serve lacks {variable}");
        }
        assert!(serve.contains("database\\-password for MESH_DATABASE_PASSWORD_FILE"));
        let bash = std::fs::read_to_string(dir.path().join("bash/mesh-controller")).unwrap();
        assert!(bash.contains("complete -F") && bash.contains("contributions"));
    }
}
