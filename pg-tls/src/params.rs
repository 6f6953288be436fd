//! Taking libpq's TLS parameters (`sslmode`, `sslrootcert`) out of a
//! connection string before tokio-postgres reads the rest: its parser knows
//! `sslmode` only up to `require` and refuses `sslrootcert`.
//!
//! Both forms libpq reads are handled: a URL
//! (`postgres://u@h/db?sslmode=verify-full&sslrootcert=/ca.pem`) and a
//! key-value string (`host=h sslmode=verify-full sslrootcert='/ca.pem'`).
//! Everything else is handed on untouched (URL) or re-quoted (key-value).

/// The TLS parameters found, and the connection string without them.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Split {
    /// The connection string without `sslmode` and `sslrootcert`.
    pub(crate) rest: String,
    /// The last `sslmode` given, decoded.
    pub(crate) sslmode: Option<String>,
    /// The last `sslrootcert` given, decoded.
    pub(crate) sslrootcert: Option<String>,
}

/// The parameters this crate reads itself.
const OURS: [&str; 2] = ["sslmode", "sslrootcert"];

/// Splits `sslmode` and `sslrootcert` off `url`. Text that cannot be split
/// (a malformed key-value string, bad percent-encoding) is handed on whole,
/// so that tokio-postgres reports what is wrong with it.
pub(crate) fn split(url: &str) -> Split {
    let is_url = url.starts_with("postgres://") || url.starts_with("postgresql://");
    let split = if is_url {
        split_url(url)
    } else {
        split_key_values(url)
    };
    split.unwrap_or_else(|| Split {
        rest: url.to_owned(),
        ..Split::default()
    })
}

fn split_url(url: &str) -> Option<Split> {
    let Some((base, query)) = url.split_once('?') else {
        return Some(Split {
            rest: url.to_owned(),
            ..Split::default()
        });
    };
    let mut split = Split::default();
    let mut kept = Vec::new();
    for piece in query.split('&') {
        let (key, value) = piece.split_once('=').unwrap_or((piece, ""));
        match percent_decode(key)?.as_str() {
            "sslmode" => split.sslmode = Some(percent_decode(value)?),
            "sslrootcert" => split.sslrootcert = Some(percent_decode(value)?),
            _ => kept.push(piece),
        }
    }
    split.rest = if kept.is_empty() {
        base.to_owned()
    } else {
        format!("{base}?{}", kept.join("&"))
    };
    Some(split)
}

fn split_key_values(text: &str) -> Option<Split> {
    let mut split = Split::default();
    let mut kept = Vec::new();
    for (key, value) in key_values(text)? {
        match key.as_str() {
            "sslmode" => split.sslmode = Some(value),
            "sslrootcert" => split.sslrootcert = Some(value),
            _ => kept.push(format!("{key}={}", quote(&value))),
        }
    }
    debug_assert!(kept.iter().all(|k| !OURS.iter().any(|o| k.starts_with(o))));
    split.rest = kept.join(" ");
    Some(split)
}

/// The `key = value` pairs of a libpq key-value string: values bare or
/// single-quoted, a backslash escaping the next character in either.
fn key_values(text: &str) -> Option<Vec<(String, String)>> {
    let mut pairs = Vec::new();
    let mut chars = text.chars().peekable();
    loop {
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        if chars.peek().is_none() {
            return Some(pairs);
        }
        let mut key = String::new();
        while let Some(c) = chars.next_if(|c| !c.is_whitespace() && *c != '=') {
            key.push(c);
        }
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        chars.next_if_eq(&'=')?;
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        let mut value = String::new();
        if chars.next_if_eq(&'\'').is_some() {
            loop {
                match chars.next()? {
                    '\'' => break,
                    '\\' => value.push(chars.next()?),
                    c => value.push(c),
                }
            }
        } else {
            while let Some(c) = chars.next_if(|c| !c.is_whitespace()) {
                if c == '\\' {
                    value.push(chars.next()?);
                } else {
                    value.push(c);
                }
            }
        }
        pairs.push((key, value));
    }
}

/// A single-quoted key-value string value.
fn quote(value: &str) -> String {
    format!("'{}'", value.replace('\\', "\\\\").replace('\'', "\\'"))
}

/// `%XX` decoded (no `+` for space, as libpq), or `None` when malformed or not UTF-8.
fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn some(text: &str) -> Option<String> {
        Some(text.to_owned())
    }

    #[test]
    fn urls_lose_only_the_tls_parameters() {
        let cases = [
            (
                "postgres://u:pw@h:5432/db",
                "postgres://u:pw@h:5432/db",
                None,
                None,
            ),
            (
                "postgres://u@h/db?sslmode=verify-full&sslrootcert=/etc/ca.pem",
                "postgres://u@h/db",
                some("verify-full"),
                some("/etc/ca.pem"),
            ),
            (
                "postgresql://u@h/db?application_name=x&sslmode=require&connect_timeout=3",
                "postgresql://u@h/db?application_name=x&connect_timeout=3",
                some("require"),
                None,
            ),
            (
                "postgres://u@h/db?sslrootcert=%2Fdir%20with%20space%2Fca.pem&sslmode=disable&sslmode=verify-ca",
                "postgres://u@h/db",
                some("verify-ca"),
                some("/dir with space/ca.pem"),
            ),
            (
                "postgres://u@h/db?ssl%6Dode=prefer&channel_binding=require",
                "postgres://u@h/db?channel_binding=require",
                some("prefer"),
                None,
            ),
        ];
        for (url, rest, sslmode, sslrootcert) in cases {
            let split = split(url);
            assert_eq!(
                split,
                Split {
                    rest: rest.to_owned(),
                    sslmode,
                    sslrootcert
                },
                "{url}"
            );
        }
    }

    #[test]
    fn key_value_strings_lose_only_the_tls_parameters() {
        let split = split(
            "host=127.0.0.1 port = 5432 sslmode=verify-full \
             sslrootcert='/a dir/ca.pem' dbname=d\\ b",
        );
        assert_eq!(split.sslmode, some("verify-full"));
        assert_eq!(split.sslrootcert, some("/a dir/ca.pem"));
        assert_eq!(split.rest, "host='127.0.0.1' port='5432' dbname='d b'");
        let config: tokio_postgres::Config = split.rest.parse().unwrap();
        assert_eq!(config.get_dbname(), Some("d b"));
        assert_eq!(config.get_ports(), &[5432]);
    }

    #[test]
    fn quoted_values_survive_the_round_trip() {
        let text = r"host=h user=u password='p w \'q\' \\' sslmode=require";
        let split = split(text);
        assert_eq!(split.sslmode, some("require"));
        let config: tokio_postgres::Config = split.rest.parse().unwrap();
        assert_eq!(config.get_password(), Some(&br"p w 'q' \"[..]));
        assert_eq!(config.get_user(), Some("u"));
    }

    #[test]
    fn malformed_text_is_handed_on_whole() {
        for text in [
            "host=h password='unterminated",
            "host",
            "postgres://u@h/db?sslmode=%zz",
            "postgres://u@h/db?sslmode=%ff",
        ] {
            let split = split(text);
            assert_eq!(split.rest, text);
            assert_eq!(split.sslmode, None);
        }
    }
}
