//! The ENVIRONMENT section of each man page: every `MESH_*` variable the
//! page's command takes (the units set them in `/etc/mesh/<unit>.env`),
//! the flag each stands for, and the systemd credentials that stand in for
//! its secret files (`$CREDENTIALS_DIRECTORY`). `clap_mangen` writes no
//! such section, so it is made here from the same command line and put
//! before the page's VERSION section.

use mesh_runtime::credentials::StandIn;

/// The section for `command` (its own and its global flags, as built),
/// with `credentials` the stand-ins its binary reads; empty when the
/// command takes no variable.
pub fn section(command: &clap::Command, credentials: &[StandIn]) -> String {
    let mut rows: Vec<(String, String)> = command
        .get_arguments()
        .filter_map(|arg| {
            let variable = arg.get_env()?.to_str()?.to_owned();
            let flag = arg
                .get_long()
                .map(|long| format!("--{long}"))
                .unwrap_or_else(|| arg.get_id().to_string().to_uppercase());
            Some((variable, flag))
        })
        .collect();
    rows.sort();
    rows.dedup();
    if rows.is_empty() {
        return String::new();
    }
    let mut text = String::from(
        ".SH ENVIRONMENT\n\
         Each flag below may be given in its variable instead; a flag on the command line wins. \
         The systemd units read them from /etc/mesh/<unit>.env.\n",
    );
    for (variable, flag) in &rows {
        text.push_str(&format!(
            ".TP\n\\fB{}\\fR\n{}\n",
            roff(variable),
            roff(flag)
        ));
    }
    let taken: Vec<&StandIn> = credentials
        .iter()
        .filter(|s| rows.iter().any(|(variable, _)| variable == s.variable))
        .collect();
    if !taken.is_empty() {
        text.push_str(
            ".TP\n\\fBCREDENTIALS_DIRECTORY\\fR\n\
             Set by systemd for a unit with LoadCredential=. When a variable below is not set \
             (nor its flag given), the credential of that name in this folder is its file:\n",
        );
        for s in taken {
            let condition = match (s.with, s.unless) {
                (Some(with), _) => format!(" (when {with} is set)"),
                (None, Some(unless)) => format!(" (unless {unless} is set)"),
                (None, None) => String::new(),
            };
            text.push_str(&format!(
                ".br\n{} for {}{}\n",
                roff(s.credential),
                roff(s.variable),
                roff(&condition)
            ));
        }
    }
    text
}

/// `page` (a man page's roff) with `section` put before its VERSION
/// section, or at its end when it has none.
pub fn insert(page: &str, section: &str) -> String {
    match page.find("\n.SH VERSION") {
        Some(at) => format!("{}\n{}{}", &page[..at], section, &page[at + 1..]),
        None if page.ends_with('\n') || page.is_empty() => format!("{page}{section}"),
        None => format!("{page}\n{section}"),
    }
}

/// Text as roff shows it: a backslash and a minus escaped, a leading dot
/// or quote kept from starting a request.
fn roff(text: &str) -> String {
    let text = text.replace('\\', "\\e").replace('-', "\\-");
    if text.starts_with('.') || text.starts_with('\'') {
        format!("\\&{text}")
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PASSWORD: StandIn = StandIn {
        variable: "MESH_X_PASSWORD_FILE",
        credential: "x-password",
        with: Some("MESH_X_USER"),
        unless: None,
    };

    fn command() -> clap::Command {
        clap::Command::new("mesh-x")
            .arg(clap::Arg::new("url").long("url").env("MESH_X_URL"))
            .arg(clap::Arg::new("user").long("x-user").env("MESH_X_USER"))
            .arg(
                clap::Arg::new("password_file")
                    .long("x-password-file")
                    .env("MESH_X_PASSWORD_FILE"),
            )
            .arg(clap::Arg::new("plain").long("plain"))
    }

    #[test]
    fn every_variable_is_listed_with_its_flag_and_the_credentials_standing_in() {
        let text = section(&command(), &[PASSWORD]);
        assert_eq!(
            text,
            ".SH ENVIRONMENT\n\
             Each flag below may be given in its variable instead; a flag on the command line \
             wins. The systemd units read them from /etc/mesh/<unit>.env.\n\
             .TP\n\\fBMESH_X_PASSWORD_FILE\\fR\n\\-\\-x\\-password\\-file\n\
             .TP\n\\fBMESH_X_URL\\fR\n\\-\\-url\n\
             .TP\n\\fBMESH_X_USER\\fR\n\\-\\-x\\-user\n\
             .TP\n\\fBCREDENTIALS_DIRECTORY\\fR\n\
             Set by systemd for a unit with LoadCredential=. When a variable below is not set \
             (nor its flag given), the credential of that name in this folder is its file:\n\
             .br\nx\\-password for MESH_X_PASSWORD_FILE (when MESH_X_USER is set)\n"
        );
        // A credential of a variable this command does not take is not listed.
        let other = StandIn {
            variable: "MESH_Y_FILE",
            ..PASSWORD
        };
        assert!(!section(&command(), &[other]).contains("CREDENTIALS_DIRECTORY"));
        assert_eq!(section(&clap::Command::new("bare"), &[PASSWORD]), "");
    }

    #[test]
    fn the_section_goes_before_the_version() {
        let page = ".TH x 1\n.SH OPTIONS\nfoo\n.SH VERSION\nv0.1.0\n";
        assert_eq!(
            insert(page, ".SH ENVIRONMENT\nE\n"),
            ".TH x 1\n.SH OPTIONS\nfoo\n.SH ENVIRONMENT\nE\n.SH VERSION\nv0.1.0\n"
        );
        assert_eq!(insert(".TH x 1\n", "S\n"), ".TH x 1\nS\n");
        assert_eq!(insert("", ""), "");
    }
}
