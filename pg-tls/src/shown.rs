//! A configuration as it may be shown: a `postgres://` URL without its
//! password, for logs, errors and `Debug` output.

use tokio_postgres::config::Host;
use tokio_postgres::Config;

/// The port PostgreSQL listens on when a configuration names none.
pub const DEFAULT_PORT: u16 = 5432;

/// `config` as a `postgres://` URL that never holds its password (nor any
/// other parameter): `postgres://USER@HOST:PORT/DATABASE`.
///
/// - The user and `@` are left out when there is no user; the database is
///   the user's name when none is given, as libpq does.
/// - Each TCP host gets its port (the one port given for all, or
///   [`DEFAULT_PORT`]); hosts are joined by `,`, an IPv6 address is
///   bracketed.
/// - A unix socket directory is given as libpq's URLs do:
///   `postgres://USER@/DATABASE?host=DIR&port=PORT`.
///
/// ```
/// let (config, _) = mesh_pg_tls::parse("postgres://mesh:s3cret@db.example/store").unwrap();
/// assert_eq!(mesh_pg_tls::shown(&config), "postgres://mesh@db.example:5432/store");
/// ```
pub fn shown(config: &Config) -> String {
    let user = config.get_user().unwrap_or("");
    let at = if user.is_empty() {
        String::new()
    } else {
        format!("{user}@")
    };
    let db = config.get_dbname().unwrap_or(user);
    let hosts = config.get_hosts();
    let ports = config.get_ports();
    let port = |i: usize| {
        ports
            .get(i)
            .or(ports.first())
            .copied()
            .unwrap_or(DEFAULT_PORT)
    };
    let name = |host: &Host| match host {
        Host::Tcp(name) => name.clone(),
        Host::Unix(dir) => dir.display().to_string(),
    };
    let list = |part: &dyn Fn(usize, &Host) -> String| {
        hosts
            .iter()
            .enumerate()
            .map(|(i, h)| part(i, h))
            .collect::<Vec<_>>()
            .join(",")
    };
    if hosts.iter().any(|h| matches!(h, Host::Unix(_))) {
        let host = list(&|_, h| name(h));
        let port = list(&|i, _| port(i).to_string());
        return format!("postgres://{at}/{db}?host={host}&port={port}");
    }
    let authority = list(&|i, h| match h {
        Host::Tcp(tcp) if tcp.contains(':') => format!("[{tcp}]:{}", port(i)),
        other => format!("{}:{}", name(other), port(i)),
    });
    format!("postgres://{at}{authority}/{db}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_configuration_is_shown_without_its_password() {
        // (URL or key-value string, shown)
        let cases = [
            ("postgres://mesh@h/", "postgres://mesh@h:5432/mesh"),
            (
                "host=127.0.0.1 port=6543 user=mesh password=s3cret dbname=store",
                "postgres://mesh@127.0.0.1:6543/store",
            ),
            (
                "postgres://mesh:s3cret@db.example:5433/store",
                "postgres://mesh@db.example:5433/store",
            ),
            (
                "postgres://admin:s%40cret@db.example/postgres?sslmode=require",
                "postgres://admin@db.example:5432/postgres",
            ),
            (
                "host=/run/postgresql user=postgres dbname=postgres",
                "postgres://postgres@/postgres?host=/run/postgresql&port=5432",
            ),
            (
                "postgres://u:s3cret@[::1]:6432/db",
                "postgres://u@[::1]:6432/db",
            ),
            (
                "postgres://u:s3cret@h1:5433,h2:5434/db",
                "postgres://u@h1:5433,h2:5434/db",
            ),
            (
                "host=h1,h2 port=6000 user=u password=s3cret",
                "postgres://u@h1:6000,h2:6000/u",
            ),
            ("host=h dbname=db password=s3cret", "postgres://h:5432/db"),
        ];
        for (url, expected) in cases {
            let (config, _) = crate::parse(url).unwrap();
            let text = shown(&config);
            assert_eq!(text, expected, "{url}");
            assert!(!text.contains("s3cret") && !text.contains("cret"), "{text}");
        }
    }
}
