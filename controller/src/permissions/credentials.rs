//! Each bus user's credential, read from a credentials folder: a bcrypt
//! hash of its password (hashed at once, never kept plain) or its public
//! nkey.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::{CredentialNeed, UserPermissions};

/// The bcrypt cost of the rendered password hashes (nats-server's own
/// `nats server passwd` uses the same): each client login costs the server
/// one bcrypt check of this cost.
const BCRYPT_COST: u32 = 11;

/// How one user proves who it is in the rendered configuration. Never a
/// plain password: the configuration may be read by whoever runs the server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Credential {
    /// A bcrypt hash (`$2b$11$...`) of the user's password: nats-server
    /// checks the password a client sends against it.
    PasswordHash(String),
    /// The user's public nkey (`U...`): the client proves it holds the
    /// matching seed by signing the server's nonce; no secret is rendered.
    Nkey(String),
}

/// A credentials folder could not give a user's credential; nothing is
/// rendered (exit 2). No variant quotes a file's content.
#[derive(Debug, thiserror::Error)]
pub enum CredentialsError {
    /// `DIR/<user>` or `DIR/<user>.pub` could not be read.
    #[error("credentials file {path} of user {user} cannot be read: {source}")]
    Read {
        /// The user.
        user: String,
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// `DIR/<user>` holds only whitespace.
    #[error("password file {path} of user {user} is empty")]
    Empty {
        /// The user.
        user: String,
        /// The file.
        path: PathBuf,
    },
    /// The password is longer than bcrypt's 72 bytes (it would be cut).
    #[error("password file {path} of user {user} holds {len} bytes; bcrypt takes at most 72")]
    TooLong {
        /// The user.
        user: String,
        /// The file.
        path: PathBuf,
        /// Its length in bytes.
        len: usize,
    },
    /// The password could not be hashed.
    #[error("the password of user {user} cannot be hashed: {reason}")]
    Hash {
        /// The user.
        user: String,
        /// Why (bcrypt's message, which holds no password).
        reason: String,
    },
    /// `DIR/<user>.pub` holds no public user nkey.
    #[error("{path} of user {user} holds no public user nkey (one line starting with U)")]
    NotAnNkey {
        /// The user.
        user: String,
        /// The file.
        path: PathBuf,
    },
    /// Both `DIR/<user>` and `DIR/<user>.pub` exist.
    #[error("user {user} has both a password file and a public nkey ({path}): keep one")]
    Both {
        /// The user.
        user: String,
        /// The nkey file.
        path: PathBuf,
    },
}

/// A user left out of the rendered configuration: neither `DIR/<user>`
/// nor `DIR/<user>.pub` exists, and its [`Role`](super::Role) does not require one. It
/// cannot connect to a server started with the configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeftOut {
    /// The user.
    pub user: String,
    /// Its password file, as it was looked for.
    pub path: PathBuf,
    /// Whether its absence is to be warned of ([`CredentialNeed::Warned`]).
    pub need: CredentialNeed,
}

impl LeftOut {
    /// Whether the operator is to be told (a grant agent).
    pub fn is_warned(&self) -> bool {
        self.need == CredentialNeed::Warned
    }
}

impl std::fmt::Display for LeftOut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "no credentials file {} (nor {}.pub) for user {}: left out, it cannot connect",
            self.path.display(),
            self.path.display(),
            self.user
        )?;
        if self.need == CredentialNeed::Warned {
            write!(f, " (write the file if mesh-grants runs on that machine)")?;
        }
        Ok(())
    }
}

/// What [`read_credentials`] found: each user's credential, and the users
/// left out.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Credentials {
    /// The credential of each user that has one.
    pub found: BTreeMap<String, Credential>,
    /// The users without a file that did not need one, in `users` order.
    pub left_out: Vec<LeftOut>,
}

/// Reads each user's credential from the folder `dir`:
///
/// - `dir/<user>.pub`, when it exists: the user's public nkey (`U...`, as
///   `nk -inkey seed -pubout` prints it); the user connects with the seed
///   (`--nats-nkey-file`), which the controller never needs;
/// - otherwise `dir/<user>`: the user's password (surrounding whitespace
///   trimmed), hashed with bcrypt at once.
///
/// Only users that can do something need a file ([`Role::needs_credentials`](super::Role::needs_credentials)):
/// a user with neither file whose role does not require one is
/// [left out](Credentials::left_out).
///
/// # Errors
/// [`CredentialsError`] naming the first file that is missing (for a user
/// that needs one), unreadable, empty or not a public user nkey, or a user
/// with both files.
pub fn read_credentials(
    dir: &Path,
    users: &[UserPermissions],
) -> Result<Credentials, CredentialsError> {
    let mut credentials = Credentials::default();
    for user in users {
        let password_path = dir.join(&user.user);
        let nkey_path = dir.join(format!("{}.pub", user.user));
        let need = user.role.needs_credentials();
        if need != CredentialNeed::Required && !password_path.exists() && !nkey_path.exists() {
            credentials.left_out.push(LeftOut {
                user: user.user.clone(),
                path: password_path,
                need,
            });
            continue;
        }
        let credential = read_credential(&user.user, &password_path, &nkey_path)?;
        credentials.found.insert(user.user.clone(), credential);
    }
    Ok(credentials)
}

/// One user's credential: its public nkey if `nkey_path` exists, else its
/// hashed password.
fn read_credential(
    name: &str,
    password_path: &Path,
    nkey_path: &Path,
) -> Result<Credential, CredentialsError> {
    let read = |path: &Path| {
        std::fs::read_to_string(path).map_err(|source| CredentialsError::Read {
            user: name.to_owned(),
            path: path.to_owned(),
            source,
        })
    };
    if nkey_path.exists() {
        if password_path.exists() {
            return Err(CredentialsError::Both {
                user: name.to_owned(),
                path: nkey_path.to_owned(),
            });
        }
        let text = read(nkey_path)?;
        let key = text.trim();
        let is_user_key = key.starts_with('U') && nkeys::KeyPair::from_public_key(key).is_ok();
        if !is_user_key {
            return Err(CredentialsError::NotAnNkey {
                user: name.to_owned(),
                path: nkey_path.to_owned(),
            });
        }
        return Ok(Credential::Nkey(key.to_owned()));
    }
    let text = read(password_path)?;
    let password = text.trim();
    if password.is_empty() {
        return Err(CredentialsError::Empty {
            user: name.to_owned(),
            path: password_path.to_owned(),
        });
    }
    if password.len() > 72 {
        return Err(CredentialsError::TooLong {
            user: name.to_owned(),
            path: password_path.to_owned(),
            len: password.len(),
        });
    }
    let hash =
        bcrypt::non_truncating_hash(password, BCRYPT_COST).map_err(|e| CredentialsError::Hash {
            user: name.to_owned(),
            reason: e.to_string(),
        })?;
    Ok(Credential::PasswordHash(hash))
}

#[cfg(test)]
mod tests {
    use super::super::tests::declaration;
    use super::super::{derive, render_nats};
    use super::*;

    #[test]
    fn only_users_that_can_do_something_need_a_credentials_file() {
        // forge@app-1 may do nothing; _grants@app-1 may be run or not (the
        // declaration cannot tell); the providers and the controller work.
        let dir = tempfile::tempdir().unwrap();
        let users = derive(&declaration());
        for user in ["identity@db-1", "postgres@db-1", "controller"] {
            std::fs::write(dir.path().join(user), format!("secret-{user}")).unwrap();
        }
        let read = read_credentials(dir.path(), &users).unwrap();
        let found: Vec<&str> = read.found.keys().map(String::as_str).collect();
        assert_eq!(found, ["controller", "identity@db-1", "postgres@db-1"]);
        let left_out: Vec<(&str, bool)> = read
            .left_out
            .iter()
            .map(|l| (l.user.as_str(), l.is_warned()))
            .collect();
        assert_eq!(left_out, [("forge@app-1", false), ("_grants@app-1", true)]);
        let warning = read.left_out[1].to_string();
        assert!(
            warning.contains("_grants@app-1")
                && warning.contains(&dir.path().join("_grants@app-1").display().to_string())
                && warning.contains("cannot connect"),
            "{warning}"
        );
        let rendered = render_nats(&users, &read.found).to_string();
        assert!(!rendered.contains("forge@app-1") && !rendered.contains("_grants@app-1"));

        // Given, a file of either is used; a provider's missing file is an error.
        std::fs::write(dir.path().join("forge@app-1"), "f").unwrap();
        std::fs::write(dir.path().join("_grants@app-1"), "g").unwrap();
        let read = read_credentials(dir.path(), &users).unwrap();
        assert_eq!(read.found.len(), 5);
        assert!(read.left_out.is_empty());
        std::fs::remove_file(dir.path().join("postgres@db-1")).unwrap();
        let error = read_credentials(dir.path(), &users)
            .unwrap_err()
            .to_string();
        assert!(error.contains("postgres@db-1"), "{error}");
        // A file that is there but wrong is an error for an idle user too.
        std::fs::write(dir.path().join("postgres@db-1"), "p").unwrap();
        std::fs::write(dir.path().join("forge@app-1"), " ").unwrap();
        let error = read_credentials(dir.path(), &users)
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("forge@app-1") && error.contains("empty"),
            "{error}"
        );
    }

    #[test]
    fn credentials_are_read_per_user_and_a_bad_file_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let users = derive(&declaration());
        for u in &users[..2] {
            std::fs::write(dir.path().join(&u.user), format!("  secret-{}\n", u.user)).unwrap();
        }
        let error = read_credentials(dir.path(), &users)
            .unwrap_err()
            .to_string();
        assert!(error.contains("postgres@db-1"), "{error}");
        assert!(error.contains(&dir.path().display().to_string()), "{error}");
        std::fs::write(dir.path().join("postgres@db-1"), "pg").unwrap();
        std::fs::write(dir.path().join("_grants@app-1"), "g").unwrap();
        std::fs::write(dir.path().join("controller"), " \n").unwrap();
        let error = read_credentials(dir.path(), &users)
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("controller") && error.contains("empty"),
            "{error}"
        );
        std::fs::write(dir.path().join("controller"), "x".repeat(73)).unwrap();
        let error = read_credentials(dir.path(), &users)
            .unwrap_err()
            .to_string();
        assert!(error.contains("73 bytes"), "{error}");
        std::fs::write(dir.path().join("controller"), "c").unwrap();

        // A public nkey beside a password is ambiguous; a seed or an account
        // key is not a public user nkey, and is never quoted.
        let key = nkeys::KeyPair::new_user();
        let pub_file = dir.path().join("postgres@db-1.pub");
        std::fs::write(&pub_file, key.public_key()).unwrap();
        let error = read_credentials(dir.path(), &users)
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("both") && error.contains("postgres@db-1"),
            "{error}"
        );
        std::fs::remove_file(dir.path().join("postgres@db-1")).unwrap();
        let seed = key.seed().unwrap();
        for wrong in [seed.clone(), nkeys::KeyPair::new_account().public_key()] {
            std::fs::write(&pub_file, &wrong).unwrap();
            let error = read_credentials(dir.path(), &users)
                .unwrap_err()
                .to_string();
            assert!(error.contains("no public user nkey"), "{error}");
            assert!(!error.contains(&wrong), "{error}");
        }
        std::fs::write(&pub_file, key.public_key()).unwrap();
        let credentials = read_credentials(dir.path(), &users).unwrap().found;
        assert!(
            matches!(&credentials["forge@app-1"], Credential::PasswordHash(h)
            if bcrypt::verify("secret-forge@app-1", h).unwrap())
        );
        assert_eq!(
            credentials["postgres@db-1"],
            Credential::Nkey(key.public_key())
        );
    }
}
