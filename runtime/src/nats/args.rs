//! The transport flags ([`NatsArgs`]) and the connection options every
//! mesh client shares ([`connect_options`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use async_nats::{ConnectOptions, ServerAddr};
use clap::Args;

use super::callback::BusLog;
use super::error::BusError;
use super::servers::{self, UrlCredentials};
use crate::backoff::Backoff;
use crate::redact::shown_url;

/// The reconnect delays: 100 ms, doubling, at most 2 s (docs/contracts/bus.md#connections-and-inbox-prefixes).
const RECONNECT: Backoff = Backoff::new(Duration::from_millis(100), Duration::from_secs(2));

/// The server when `--nats` is not given.
const DEFAULT_SERVERS: &str = "nats://127.0.0.1:4222";

/// The NATS transport flags every mesh binary shares, with env fallbacks.
///
/// How the client proves who it is: a user and password file, a `.creds`
/// file, an nkey seed file, or a user and password inside the URLs
/// (`nats://user:pw@host`; alternatives: give at most one); none for a
/// server without authorization. TLS: `tls://` URLs, or a server that
/// requires it, or any of the TLS flags (which make TLS required: the client
/// never falls back to plain text). The flags are global: a command line may
/// give them before or after a subcommand.
#[derive(Args, Clone, Debug, PartialEq, Eq)]
pub struct NatsArgs {
    /// NATS server URL, or a comma-separated list of the servers of one cluster (nats:// or tls://);
    /// a URL may hold the user and password (nats://user:pw@host).
    #[arg(
        id = "nats",
        long = "nats",
        env = "MESH_NATS_URL",
        default_value = DEFAULT_SERVERS,
        hide_env_values = true,
        global = true
    )]
    pub url: String,

    /// NATS user name (with --nats-password-file).
    #[arg(
        id = "nats_user",
        long = "nats-user",
        env = "MESH_NATS_USER",
        requires = "nats_password_file",
        global = true
    )]
    pub user: Option<String>,

    /// File holding the NATS user's password (with --nats-user).
    #[arg(
        id = "nats_password_file",
        long = "nats-password-file",
        env = "MESH_NATS_PASSWORD_FILE",
        requires = "nats_user",
        global = true
    )]
    pub password_file: Option<PathBuf>,

    /// A NATS `.creds` file (user JWT and nkey seed), instead of a user and password.
    #[arg(
        id = "nats_creds",
        long = "nats-creds",
        env = "MESH_NATS_CREDS",
        conflicts_with_all = ["nats_user", "nats_password_file", "nats_nkey_file"],
        global = true
    )]
    pub creds: Option<PathBuf>,

    /// File holding the user's nkey seed (SU...), instead of a user and password.
    #[arg(
        id = "nats_nkey_file",
        long = "nats-nkey-file",
        env = "MESH_NATS_NKEY_FILE",
        conflicts_with_all = ["nats_user", "nats_password_file"],
        global = true
    )]
    pub nkey_file: Option<PathBuf>,

    /// CA certificates (PEM) the NATS server's certificate must chain to; makes TLS required.
    #[arg(
        id = "nats_ca_file",
        long = "nats-ca-file",
        env = "MESH_NATS_CA_FILE",
        global = true
    )]
    pub ca_file: Option<PathBuf>,

    /// Client certificate (PEM) for mutual TLS (with --nats-key-file); makes TLS required.
    #[arg(
        id = "nats_cert_file",
        long = "nats-cert-file",
        env = "MESH_NATS_CERT_FILE",
        requires = "nats_key_file",
        global = true
    )]
    pub cert_file: Option<PathBuf>,

    /// The client certificate's private key (PEM, with --nats-cert-file).
    #[arg(
        id = "nats_key_file",
        long = "nats-key-file",
        env = "MESH_NATS_KEY_FILE",
        requires = "nats_cert_file",
        global = true
    )]
    pub key_file: Option<PathBuf>,
}

impl Default for NatsArgs {
    /// `nats://127.0.0.1:4222`, no authentication, no TLS flag.
    fn default() -> NatsArgs {
        NatsArgs {
            url: DEFAULT_SERVERS.to_owned(),
            user: None,
            password_file: None,
            creds: None,
            nkey_file: None,
            ca_file: None,
            cert_file: None,
            key_file: None,
        }
    }
}

/// How the client proves who it is, as the flags ask.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Auth<'a> {
    /// No credentials.
    Anonymous,
    /// A user and the file holding its password.
    Password {
        /// The user.
        user: &'a str,
        /// The password file.
        file: &'a Path,
    },
    /// A `.creds` file.
    Creds(&'a Path),
    /// A file holding an nkey seed.
    Nkey(&'a Path),
    /// A user and password taken out of the URLs.
    InUrl(UrlCredentials),
}

impl Auth<'_> {
    /// The flags that ask for these credentials.
    fn flags(&self) -> &'static str {
        match self {
            Auth::Anonymous => "no flag",
            Auth::Password { .. } => "--nats-user/--nats-password-file",
            Auth::Creds(_) => "--nats-creds",
            Auth::Nkey(_) => "--nats-nkey-file",
            Auth::InUrl(_) => "--nats",
        }
    }
}

/// What to check when the bus refuses `auth` (an authorization
/// violation): the user and the file it was given with, and the flags and
/// variables that give them; a password file in `credentials`
/// (`$CREDENTIALS_DIRECTORY`) is named as the systemd credential it is.
/// Never a password.
pub(crate) fn credentials_to_check(auth: &Auth<'_>, credentials: Option<&Path>) -> String {
    let restart = "; they are read when the program starts: restart it once they are fixed";
    match auth {
        Auth::Anonymous => "the credentials: none were given and the server asks for them \
             (--nats-user and --nats-password-file, MESH_NATS_USER and MESH_NATS_PASSWORD_FILE, \
             or --nats-creds, or --nats-nkey-file)"
            .to_owned(),
        Auth::Password { user, file } => {
            let credential = match credentials {
                Some(dir) if file.starts_with(dir) => {
                    ", here the systemd credential nats-password: its LoadCredential= file"
                }
                _ => "",
            };
            format!(
                "the user {user} (--nats-user, MESH_NATS_USER) and the password in {} \
                 (--nats-password-file, MESH_NATS_PASSWORD_FILE{credential}){restart}",
                file.display()
            )
        }
        Auth::Creds(path) => format!(
            "the .creds file {} (--nats-creds, MESH_NATS_CREDS){restart}",
            path.display()
        ),
        Auth::Nkey(path) => format!(
            "the nkey seed in {} (--nats-nkey-file, MESH_NATS_NKEY_FILE){restart}",
            path.display()
        ),
        Auth::InUrl(UrlCredentials { user, .. }) => {
            format!("the user {user} and its password inside --nats (MESH_NATS_URL){restart}")
        }
    }
}

impl NatsArgs {
    /// What to check when the bus refuses these credentials: the user and
    /// the password file (flag, variable, systemd credential), the `.creds`
    /// or nkey file, or the URL's user; the flags' own error when they do
    /// not go together.
    pub fn credentials_to_check(&self) -> String {
        let dir = std::env::var_os(crate::credentials::DIRECTORY_VARIABLE).map(PathBuf::from);
        match self.auth() {
            Ok(auth) => credentials_to_check(&auth, dir.as_deref()),
            Err(error) => error.to_string(),
        }
    }

    /// The servers of `--nats`, each entry of the comma-separated list
    /// parsed (`nats://` assumed without a scheme, port 4222 without one),
    /// a user and password inside an entry taken out of it (they are the
    /// client's credentials, see [`connect_options`]).
    ///
    /// # Errors
    /// [`BusError::Servers`] naming the first empty or invalid entry (shown
    /// without its password), an entry holding a token or half of a user
    /// and password, or two entries holding different ones.
    pub fn servers(&self) -> Result<Vec<ServerAddr>, BusError> {
        Ok(servers::parse(&self.url)?.servers)
    }

    /// The servers as they may be shown: every password replaced.
    pub fn shown_servers(&self) -> String {
        shown_url(&self.url)
    }

    /// Which credentials the flags (and the URLs) give.
    ///
    /// # Errors
    /// [`BusError::HalfCredentials`] for a user without a password file (or
    /// the other way round), [`BusError::ManyCredentials`] when more than one
    /// of password, `.creds` and nkey is given, [`BusError::CredentialsTwice`]
    /// when a URL holds a user and password and a flag gives credentials too,
    /// and [`BusError::Servers`] when the URLs' credentials cannot be used.
    pub(crate) fn auth(&self) -> Result<Auth<'_>, BusError> {
        let in_url = servers::parse(&self.url)?.credentials;
        let password = match (&self.user, &self.password_file) {
            (Some(user), Some(file)) => Some(Auth::Password { user, file }),
            (None, None) => None,
            _ => return Err(BusError::HalfCredentials),
        };
        let mut given: Vec<Auth<'_>> = [
            password,
            self.creds.as_deref().map(Auth::Creds),
            self.nkey_file.as_deref().map(Auth::Nkey),
        ]
        .into_iter()
        .flatten()
        .collect();
        if given.len() > 1 {
            return Err(BusError::ManyCredentials);
        }
        if let Some(in_url) = in_url {
            if let Some(flag) = given.first() {
                return Err(BusError::CredentialsTwice {
                    position: in_url.position,
                    flags: flag.flags(),
                });
            }
            given.push(Auth::InUrl(in_url));
        }
        Ok(given.pop().unwrap_or(Auth::Anonymous))
    }

    /// Whether a TLS flag is given (TLS is then required).
    fn wants_tls(&self) -> bool {
        self.ca_file.is_some() || self.cert_file.is_some() || self.key_file.is_some()
    }
}

/// The connection options every mesh client shares: the given name and
/// inbox prefix, the credentials and TLS files of `nats` (each read or
/// checked now; a user and password inside the URLs handed over as the
/// client's user and password, for the servers of [`NatsArgs::servers`],
/// which no longer hold them), a short capped reconnect backoff (100 ms doubling to 2 s;
/// 30 s while the server refuses the credentials), and an event callback that logs
/// permission refusals, refused credentials (once, naming what to check) and disconnects.
///
/// # Errors
/// [`BusError`] when the flags do not go together (see [`NatsArgs`]) or a
/// file they name cannot be read or holds no usable key.
pub async fn connect_options(
    nats: &NatsArgs,
    name: &str,
    inbox_prefix: &str,
) -> Result<ConnectOptions, BusError> {
    let log = BusLog::new(nats.shown_servers(), nats.credentials_to_check());
    let refused = Arc::clone(&log);
    let mut connect = ConnectOptions::new()
        .name(name)
        .custom_inbox_prefix(inbox_prefix)
        .connection_timeout(Duration::from_secs(5))
        .reconnect_delay_callback(move |attempts| {
            let delay = RECONNECT.after(
                u32::try_from(attempts)
                    .unwrap_or(u32::MAX)
                    .saturating_add(1),
            );
            // Credentials refused stay refused until someone fixes them.
            match refused.credentials_refused() {
                true => delay.max(super::outage::REFUSED_RECONNECT),
                false => delay,
            }
        })
        .event_callback(move |event| {
            let log = Arc::clone(&log);
            async move { log.event(&event) }
        });
    connect = match nats.auth()? {
        Auth::Anonymous => connect,
        Auth::Password { user, file } => {
            let password =
                std::fs::read_to_string(file).map_err(|source| BusError::PasswordFile {
                    path: file.to_owned(),
                    source,
                })?;
            connect.user_and_password(user.to_owned(), password.trim().to_owned())
        }
        Auth::Creds(path) => {
            connect
                .credentials_file(path)
                .await
                .map_err(|source| BusError::CredsFile {
                    path: path.to_owned(),
                    source,
                })?
        }
        Auth::Nkey(path) => connect.nkey(read_nkey_seed(path)?),
        Auth::InUrl(UrlCredentials { user, password, .. }) => {
            connect.user_and_password(user, password)
        }
    };
    if nats.wants_tls() {
        connect = connect.require_tls(true);
    }
    if let Some(ca) = &nats.ca_file {
        check_readable("--nats-ca-file", ca)?;
        connect = connect.add_root_certificates(ca.clone());
    }
    match (&nats.cert_file, &nats.key_file) {
        (Some(cert), Some(key)) => {
            check_readable("--nats-cert-file", cert)?;
            check_readable("--nats-key-file", key)?;
            connect = connect.add_client_certificate(cert.clone(), key.clone());
        }
        (None, None) => {}
        _ => return Err(BusError::HalfClientCertificate),
    }
    Ok(connect)
}

/// The user nkey seed in `path`: the first line starting with `SU` (a file
/// written by `nk -gen user` or holding only the seed).
///
/// # Errors
/// [`BusError::NkeyFile`] when the file cannot be read or holds no valid
/// user seed (the file's content is never part of the error).
fn read_nkey_seed(path: &Path) -> Result<String, BusError> {
    let fail = |reason: String| BusError::NkeyFile {
        path: path.to_owned(),
        reason,
    };
    let text =
        std::fs::read_to_string(path).map_err(|e| fail(format!("it cannot be read: {e}")))?;
    let seed = text
        .lines()
        .map(str::trim)
        .find(|line| line.starts_with("SU"))
        .ok_or_else(|| fail("it holds no user nkey seed (a line starting with SU)".to_owned()))?;
    nkeys::KeyPair::from_seed(seed)
        .map_err(|_| fail("its user nkey seed is not valid".to_owned()))?;
    Ok(seed.to_owned())
}

/// Checks that a TLS file given by `flag` can be opened (async-nats reads
/// it only when it connects, and a provider retries that forever).
fn check_readable(flag: &'static str, path: &Path) -> Result<(), BusError> {
    std::fs::File::open(path)
        .map(drop)
        .map_err(|source| BusError::TlsFile {
            flag,
            path: path.to_owned(),
            source,
        })
}

#[cfg(test)]
mod credentials_tests {
    use super::*;

    #[test]
    fn refused_credentials_name_what_to_check_and_never_a_password() {
        let file = Path::new("/run/credentials/mesh-controller.service/nats-password");
        let systemd = Some(Path::new("/run/credentials/mesh-controller.service"));
        let in_url = UrlCredentials {
            user: "wiki".into(),
            password: "secret-in-url".into(),
            position: 1,
        };
        // (credentials, $CREDENTIALS_DIRECTORY, what it names)
        let cases: Vec<(Auth<'_>, Option<&Path>, &[&str])> = vec![
            (
                Auth::Password {
                    user: "controller",
                    file: Path::new("/etc/mesh/pw"),
                },
                None,
                &[
                    "the user controller (--nats-user, MESH_NATS_USER)",
                    "the password in /etc/mesh/pw (--nats-password-file, MESH_NATS_PASSWORD_FILE)",
                    "restart",
                ],
            ),
            (
                Auth::Password {
                    user: "controller",
                    file,
                },
                systemd,
                &[
                    "the systemd credential nats-password",
                    "/run/credentials/mesh-controller.service/nats-password",
                ],
            ),
            (
                Auth::Creds(Path::new("/etc/mesh/c.creds")),
                None,
                &["/etc/mesh/c.creds (--nats-creds"],
            ),
            (
                Auth::Nkey(Path::new("/etc/mesh/seed")),
                None,
                &["/etc/mesh/seed (--nats-nkey-file"],
            ),
            (Auth::InUrl(in_url), None, &["the user wiki", "--nats"]),
            (
                Auth::Anonymous,
                None,
                &["none were given", "--nats-user and --nats-password-file"],
            ),
        ];
        for (auth, dir, names) in cases {
            let said = credentials_to_check(&auth, dir);
            for name in names {
                assert!(said.contains(name), "{auth:?}: {said}");
            }
            assert!(!said.contains("secret"), "{said}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser, Debug)]
    struct Cli {
        #[command(flatten)]
        nats: NatsArgs,
    }

    fn parse(args: &[&str]) -> Result<NatsArgs, clap::Error> {
        Cli::try_parse_from(std::iter::once("p").chain(args.iter().copied())).map(|c| c.nats)
    }

    #[test]
    fn the_flags_parse_and_their_pairs_and_alternatives_are_checked() {
        let ok: &[&[&str]] = &[
            &[],
            &["--nats-user", "u", "--nats-password-file", "pw"],
            &["--nats-creds", "u.creds"],
            &["--nats-nkey-file", "u.nk"],
            &["--nats-ca-file", "ca.pem"],
            &["--nats-cert-file", "c.pem", "--nats-key-file", "c.key"],
            &[
                "--nats",
                "tls://a:4222,tls://b:4222",
                "--nats-nkey-file",
                "u.nk",
                "--nats-ca-file",
                "ca.pem",
                "--nats-cert-file",
                "c.pem",
                "--nats-key-file",
                "c.key",
            ],
        ];
        for args in ok {
            let nats = parse(args).unwrap_or_else(|e| panic!("{args:?}: {e}"));
            nats.auth().unwrap_or_else(|e| panic!("{args:?}: {e}"));
        }
        let bad: &[(&[&str], &str)] = &[
            (&["--nats-user", "u"], "--nats-password-file"),
            (&["--nats-password-file", "pw"], "--nats-user"),
            (&["--nats-cert-file", "c.pem"], "--nats-key-file"),
            (&["--nats-key-file", "c.key"], "--nats-cert-file"),
            (
                &["--nats-creds", "u.creds", "--nats-nkey-file", "u.nk"],
                "cannot be used with",
            ),
            (
                &[
                    "--nats-nkey-file",
                    "u.nk",
                    "--nats-user",
                    "u",
                    "--nats-password-file",
                    "pw",
                ],
                "cannot be used with",
            ),
            (
                &[
                    "--nats-creds",
                    "u.creds",
                    "--nats-user",
                    "u",
                    "--nats-password-file",
                    "pw",
                ],
                "cannot be used with",
            ),
        ];
        for (args, expected) in bad {
            let error = parse(args).unwrap_err().to_string();
            assert!(error.contains(expected), "{args:?}: {error}");
        }
    }

    #[test]
    fn options_built_in_code_are_checked_the_same_way() {
        let path = PathBuf::from("f");
        let with = |change: &dyn Fn(&mut NatsArgs)| {
            let mut nats = NatsArgs::default();
            change(&mut nats);
            nats
        };
        let half = with(&|n| n.user = Some("u".into()));
        assert!(matches!(half.auth(), Err(BusError::HalfCredentials)));
        let two = with(&|n| {
            n.creds = Some(path.clone());
            n.nkey_file = Some(path.clone());
        });
        let error = two.auth().unwrap_err();
        assert!(matches!(error, BusError::ManyCredentials), "{error}");
        assert!(error.to_string().contains("give one"), "{error}");
        let nkey = with(&|n| n.nkey_file = Some(path.clone()));
        assert_eq!(nkey.auth().unwrap(), Auth::Nkey(&path));
        assert_eq!(NatsArgs::default().auth().unwrap(), Auth::Anonymous);
    }

    #[test]
    fn a_user_and_password_inside_the_url_are_the_credentials_and_no_flag_may_give_others() {
        let url = "nats://u:s3cret@a:4222,nats://b:4222";
        let in_url = NatsArgs {
            url: url.into(),
            ..NatsArgs::default()
        };
        let Auth::InUrl(found) = in_url.auth().unwrap() else {
            panic!("the URL's credentials are used")
        };
        assert_eq!(
            (found.user.as_str(), found.password.as_str()),
            ("u", "s3cret")
        );
        assert!(in_url.servers().unwrap().iter().all(|s| !s.has_user_pass()));
        assert_eq!(in_url.shown_servers(), "nats://u:***@a:4222,nats://b:4222");

        let path = PathBuf::from("f");
        for (nats, flags) in [
            (
                NatsArgs {
                    user: Some("u".into()),
                    password_file: Some(path.clone()),
                    ..in_url.clone()
                },
                "--nats-user/--nats-password-file",
            ),
            (
                NatsArgs {
                    creds: Some(path.clone()),
                    ..in_url.clone()
                },
                "--nats-creds",
            ),
            (
                NatsArgs {
                    nkey_file: Some(path.clone()),
                    ..in_url.clone()
                },
                "--nats-nkey-file",
            ),
        ] {
            let error = nats.auth().unwrap_err();
            let text = error.to_string();
            assert!(
                matches!(error, BusError::CredentialsTwice { position: 1, .. })
                    && text.contains(flags)
                    && text.contains("give one")
                    && !text.contains("s3cret"),
                "{text}"
            );
        }
    }

    #[tokio::test]
    async fn a_half_client_certificate_is_refused_before_any_file_is_read() {
        let nats = NatsArgs {
            cert_file: Some("c.pem".into()),
            ..NatsArgs::default()
        };
        let error = connect_options(&nats, "n", "_INBOX.a.b").await.unwrap_err();
        assert!(matches!(error, BusError::HalfClientCertificate), "{error}");
    }

    #[test]
    fn a_comma_separated_list_gives_each_server() {
        let nats = NatsArgs {
            url: "nats://a:4222, tls://b:4223,c".into(),
            ..NatsArgs::default()
        };
        let servers = nats.servers().unwrap();
        let shown: Vec<String> = servers
            .iter()
            .map(|s| format!("{}://{}:{}", s.scheme(), s.host(), s.port()))
            .collect();
        assert_eq!(shown, ["nats://a:4222", "tls://b:4223", "nats://c:4222"]);
        assert!(servers[1].tls_required());
        assert_eq!(NatsArgs::default().servers().unwrap().len(), 1);
    }

    #[tokio::test]
    async fn files_are_read_now_and_a_seed_never_shows_in_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let seed = nkeys::KeyPair::new_user().seed().unwrap();
        let good = dir.path().join("good.nk");
        std::fs::write(&good, format!("{seed}\n")).unwrap();
        let with_nkey = |path: PathBuf| NatsArgs {
            nkey_file: Some(path),
            ..NatsArgs::default()
        };
        connect_options(&with_nkey(good), "n", "_INBOX.a.b")
            .await
            .unwrap();

        // A seed whose checksum is broken, and a file holding something else.
        let broken = dir.path().join("broken.nk");
        let mut bad_seed = seed.clone();
        bad_seed.replace_range(10..12, if &seed[10..12] == "AA" { "BB" } else { "AA" });
        std::fs::write(&broken, &bad_seed).unwrap();
        let other = dir.path().join("other.nk");
        std::fs::write(&other, "hunter2\n").unwrap();
        for (path, expected) in [
            (broken, "not valid"),
            (other, "no user nkey seed"),
            (dir.path().join("missing"), "cannot be read"),
        ] {
            let error = connect_options(&with_nkey(path), "n", "_INBOX.a.b")
                .await
                .unwrap_err()
                .to_string();
            assert!(error.contains(expected), "{error}");
            assert!(!error.contains(&bad_seed[..20]) && !error.contains("hunter2"));
        }

        let creds = NatsArgs {
            creds: Some(dir.path().join("none.creds")),
            ..NatsArgs::default()
        };
        let error = connect_options(&creds, "n", "_INBOX.a.b")
            .await
            .unwrap_err()
            .to_string();
        assert!(error.contains("none.creds"), "{error}");

        let tls = NatsArgs {
            ca_file: Some(dir.path().join("ca.pem")),
            ..NatsArgs::default()
        };
        let error = connect_options(&tls, "n", "_INBOX.a.b")
            .await
            .unwrap_err()
            .to_string();
        assert!(error.contains("--nats-ca-file"), "{error}");
    }
}
