//! Secrets kept out of what latlab shows and keeps: a store is shared, and a result, a
//! message or a table row is read by others, so a store's password and a threshold action's
//! environment values are hidden wherever a store spec or a command line is shown or saved.

/// libpq connection keywords: a store given as `host=... dbname=...` is a PostgreSQL one.
const LIBPQ_KEYS: &[&str] = &[
    "host",
    "hostaddr",
    "port",
    "dbname",
    "user",
    "password",
    "passfile",
    "service",
    "sslmode",
    "connect_timeout",
    "application_name",
    "options",
    "target_session_attrs",
];

/// Whether `s` is a libpq `key=value` string: a PostgreSQL store to the spec's reader, and
/// one whose `password=` redaction must find (so the keywords are kept here, below both).
pub(crate) fn is_libpq(s: &str) -> bool {
    let t = s.trim_start();
    LIBPQ_KEYS.iter().any(|k| {
        t.strip_prefix(k)
            .is_some_and(|r| r.trim_start().starts_with('='))
    })
}

const HIDDEN: &str = "***";

/// Hides `password=VALUE` in a libpq string (VALUE bare or single-quoted with `\` escapes).
fn redact_libpq(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < b.len() {
        // At a keyword start (beginning or after white space)?
        let at_word = i == 0 || b[i - 1].is_ascii_whitespace();
        let rest = &s[i..];
        let key_len = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        let key = &rest[..key_len];
        let after = rest[key_len..].trim_start();
        if at_word && key.to_ascii_lowercase().contains("password") && after.starts_with('=') {
            out.push_str(key);
            out.push('=');
            out.push_str(HIDDEN);
            // Skip the value.
            let mut j = i + key_len + (rest[key_len..].len() - after.len()) + 1;
            while j < b.len() && b[j].is_ascii_whitespace() {
                j += 1;
            }
            if j < b.len() && b[j] == b'\'' {
                j += 1;
                while j < b.len() && b[j] != b'\'' {
                    j += if b[j] == b'\\' { 2 } else { 1 };
                }
                j += 1;
            } else {
                while j < b.len() && !b[j].is_ascii_whitespace() {
                    j += if b[j] == b'\\' { 2 } else { 1 };
                }
            }
            i = j.min(b.len());
            continue;
        }
        let ch = rest.chars().next().unwrap_or(' ');
        out.push(ch);
        i += ch.len_utf8();
    }
    out
}

/// A store spec with any password hidden: URL userinfo (also one holding `@` or `/`), query
/// parameters named like `password`, and libpq `password=` values. Never shows more than it
/// must, but errs on hiding.
pub fn redact(spec: &str) -> String {
    let Some(i) = spec.find("://") else {
        return if is_libpq(spec) || spec.contains("password") {
            redact_libpq(spec)
        } else {
            spec.to_string()
        };
    };
    let (scheme, rest) = (&spec[..i + 3], &spec[i + 3..]);
    // Userinfo ends at the last '@': a password may hold '@', '/', '?' or ':' unencoded.
    let rest = match rest.rfind('@') {
        Some(at) => {
            let (user, host) = (&rest[..at], &rest[at..]);
            match user.split_once(':') {
                Some((u, _)) => format!("{u}:{HIDDEN}{host}"),
                None if user.contains(['/', '?', '&', '=']) => format!("{HIDDEN}{host}"),
                None => rest.to_string(),
            }
        }
        None => rest.to_string(),
    };
    // Query parameters.
    let rest = match rest.split_once('?') {
        Some((base, q)) => {
            let q: Vec<String> = q
                .split('&')
                .map(|kv| match kv.split_once('=') {
                    Some((k, _)) if k.to_ascii_lowercase().contains("password") => {
                        format!("{k}={HIDDEN}")
                    }
                    _ => kv.to_string(),
                })
                .collect();
            format!("{base}?{}", q.join("&"))
        }
        None => rest,
    };
    format!("{scheme}{rest}")
}

/// A command line with the secrets in it redacted, for results and messages: the password of
/// every `--store` (and `--store=`), and the value of every `--on-threshold-env NAME=VALUE`
/// (kept as `NAME=<redacted>`: the value is for the action, not for the record).
pub fn redact_argv(argv: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(argv.len());
    let mut next: Option<fn(&str) -> String> = None;
    for a in argv {
        if let Some(f) = next.take() {
            out.push(f(a));
        } else if a == "--store" {
            out.push(a.clone());
            next = Some(redact);
        } else if a == ENV_FLAG {
            out.push(a.clone());
            next = Some(redact_env);
        } else if let Some(v) = a.strip_prefix("--store=") {
            out.push(format!("--store={}", redact(v)));
        } else if let Some(v) = a.strip_prefix(ENV_FLAG).and_then(|v| v.strip_prefix('=')) {
            out.push(format!("{ENV_FLAG}={}", redact_env(v)));
        } else {
            out.push(a.clone());
        }
    }
    out
}

/// The flag whose value may carry a secret for a threshold action.
const ENV_FLAG: &str = "--on-threshold-env";

/// `NAME=VALUE` as `NAME=<redacted>`; a bare `NAME` (the value taken from latlab's own
/// environment) as it is.
pub fn redact_env(spec: &str) -> String {
    match spec.split_once('=') {
        Some((name, _)) => format!("{name}=<redacted>"),
        None => spec.to_string(),
    }
}

/// The run with any store password in its command line hidden (a store is shared: what is
/// saved there is read by others).
pub(super) fn redacted(body: &serde_json::Value) -> std::borrow::Cow<'_, serde_json::Value> {
    let Some(cl) = body.get("command_line").and_then(|v| v.as_array()) else {
        return std::borrow::Cow::Borrowed(body);
    };
    let argv: Vec<String> = cl
        .iter()
        .map(|v| v.as_str().unwrap_or_default().to_string())
        .collect();
    let clean = redact_argv(&argv);
    if clean == argv {
        return std::borrow::Cow::Borrowed(body);
    }
    let mut b = body.clone();
    b["command_line"] = serde_json::Value::from(clean);
    std::borrow::Cow::Owned(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_never_survive_redaction() {
        for (spec, secret) in [
            ("postgres://me:secret@db/x", "secret"),
            ("postgresql://me:p@ss@w0rd@db:5432/x", "p@ss"),
            ("postgres://me:pa/ss@db/x", "pa/ss"),
            ("postgres://me:pa?ss@db/x", "pa?ss"),
            (
                "postgres://db/x?user=me&password=hunter2&sslmode=disable",
                "hunter2",
            ),
            ("postgres://db/x?PassWord=hunter2", "hunter2"),
            ("host=db user=me password=hunter2 dbname=x", "hunter2"),
            ("host=db password = 'hun ter2' dbname=x", "hun ter2"),
            ("host=db password='it\\'s' dbname=x", "it\\'s"),
        ] {
            let r = redact(spec);
            assert!(!r.contains(secret), "{spec} -> {r}");
            let argv: Vec<String> = ["latlab", "cyclic", "--store", spec]
                .iter()
                .map(|s| s.to_string())
                .collect();
            assert!(!redact_argv(&argv).join(" ").contains(secret));
            let eq = format!("--store={spec}");
            assert!(!redact_argv(&[eq]).join(" ").contains(secret));
            let env = ["--on-threshold-env".to_string(), format!("TOKEN={secret}")];
            assert_eq!(redact_argv(&env)[1], "TOKEN=<redacted>");
            let env = [format!("--on-threshold-env=TOKEN={secret}")];
            assert_eq!(redact_argv(&env)[0], "--on-threshold-env=TOKEN=<redacted>");
        }
        assert_eq!(
            redact("host=db user=me password=x dbname=y"),
            "host=db user=me password=*** dbname=y"
        );
        assert_eq!(redact("/tmp/plain.db"), "/tmp/plain.db");
    }
}
