//! `--web-config FILE`: TLS and basic authentication for the monitor's endpoint, in the
//! Prometheus exporter-toolkit format that node_exporter reads (`tls_server_config` with
//! `cert_file`/`key_file`, `basic_auth_users` with bcrypt hashes). Everything is checked at
//! start, in bounded time: a bad file is refused (exit 2) naming the key; the certificate and
//! key must be regular files of at most [`MAX_PEM_BYTES`], and a bcrypt cost above
//! [`MAX_BCRYPT_COST`] is refused (a hash is checked by its form, never by hashing, so no cost
//! is paid at start). Verified credentials are remembered, so a scraper pays bcrypt once.

use base64::Engine;
use latlab_core::error::{Error, Result};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use serde::Deserialize;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Largest web configuration file read.
pub(crate) const MAX_CONFIG_BYTES: u64 = 1 << 20;
/// Largest certificate or key file read (a chain of PEM certificates is a few KiB).
pub(crate) const MAX_PEM_BYTES: u64 = 1 << 20;
/// Highest bcrypt cost accepted. exporter-toolkit's docs make hashes with `htpasswd -nBC 10`
/// and say a cost of 10 takes about 70 ms; every step doubles it, so 12 is about 0.3 s per
/// verification (a scraper's first request) and 31 would be days.
pub(crate) const MAX_BCRYPT_COST: u32 = 12;
/// Verified (user, password) pairs remembered: a scraper's later requests skip bcrypt.
const AUTH_CACHE: usize = 64;

/// The file as written (exporter-toolkit's keys; others are refused by name).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    tls_server_config: Option<TlsFile>,
    basic_auth_users: Option<BTreeMap<String, String>>,
}

/// `tls_server_config`: the subset latlab serves (a server certificate and key).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TlsFile {
    cert_file: Option<String>,
    key_file: Option<String>,
    min_version: Option<String>,
}

/// A checked web configuration.
#[derive(Debug)]
pub struct WebConfig {
    /// The TLS server configuration, when `tls_server_config` is given.
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// User name → bcrypt hash; empty: no authentication.
    users: BTreeMap<String, String>,
    /// Credentials verified so far (user → password), at most [`AUTH_CACHE`].
    verified: Mutex<HashMap<String, Vec<u8>>>,
}

/// Reads a PEM file named in the web config: a regular file (never a FIFO or a device: exit 2
/// at once), at most [`MAX_PEM_BYTES`].
fn read_pem(path: &Path) -> std::result::Result<Vec<u8>, String> {
    use std::io::Read;
    let f =
        latlab_core::io::open_typed(path, Some(MAX_PEM_BYTES), false).map_err(|e| e.to_string())?;
    let mut bytes = Vec::new();
    f.take(MAX_PEM_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    Ok(bytes)
}

/// Checks a bcrypt hash by its form ($2a$/$2b$/$2y$, a cost, 53 characters of salt and hash)
/// and returns its cost, without hashing anything.
fn bcrypt_cost(hash: &str) -> Option<u32> {
    if hash.len() != 60 || !["$2a$", "$2b$", "$2y$"].iter().any(|p| hash.starts_with(p)) {
        return None;
    }
    hash.parse::<bcrypt::HashParts>().ok().map(|h| h.get_cost())
}

/// Equal byte strings, in time that depends only on their lengths.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// A fault in the web configuration at `path`: exit 2 naming the flag, the file and the key.
fn refused(path: &Path, key: &str, why: String) -> Error {
    Error::flag("--web-config", path.display(), format!("{key}: {why}"))
}

/// The file as written (an empty one configures nothing).
fn read_file(path: &Path) -> Result<File> {
    // A file that cannot be read is named by its flag too: `--web-config x.yml: why`.
    let text = latlab_core::io::read_text_limited(path, MAX_CONFIG_BYTES, "--web-config").map_err(
        |e| match e {
            Error::Usage(m) => Error::Usage(format!("--web-config {m}")),
            e => e,
        },
    )?;
    if text.trim().is_empty() {
        return Ok(File {
            tls_server_config: None,
            basic_auth_users: None,
        });
    }
    serde_norway::from_str(&text).map_err(|e| refused(path, "YAML", e.to_string()))
}

/// The TLS server configuration `t` (of the file at `path`) asks for: its certificate and key
/// read and checked to go together.
fn tls_config(path: &Path, t: TlsFile) -> Result<rustls::ServerConfig> {
    let bad = |key: &str, why: String| refused(path, key, why);
    // exporter-toolkit resolves relative paths against the file's directory.
    let dir = path.parent().unwrap_or(Path::new("."));
    let resolve = |p: &str| -> PathBuf { dir.join(p) };
    let cert = t
        .cert_file
        .ok_or_else(|| bad("tls_server_config.cert_file", "missing (required)".into()))?;
    let key = t
        .key_file
        .ok_or_else(|| bad("tls_server_config.key_file", "missing (required)".into()))?;
    let cert_pem = read_pem(&resolve(&cert))
        .map_err(|e| bad("tls_server_config.cert_file", format!("{cert}: {e}")))?;
    let key_pem = read_pem(&resolve(&key))
        .map_err(|e| bad("tls_server_config.key_file", format!("{key}: {e}")))?;
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&cert_pem)
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| bad("tls_server_config.cert_file", format!("{cert}: {e}")))?;
    if certs.is_empty() {
        return Err(bad(
            "tls_server_config.cert_file",
            format!("{cert}: no certificate in it"),
        ));
    }
    let pk = PrivateKeyDer::from_pem_slice(&key_pem)
        .map_err(|e| bad("tls_server_config.key_file", format!("{key}: {e}")))?;
    let versions: &[&rustls::SupportedProtocolVersion] = match t.min_version.as_deref() {
        None | Some("TLS12") => rustls::ALL_VERSIONS,
        Some("TLS13") => &[&rustls::version::TLS13],
        Some(v) => {
            return Err(bad(
                "tls_server_config.min_version",
                format!("{v}: latlab serves TLS12 or TLS13"),
            ))
        }
    };
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(versions)
        .map_err(|e| bad("tls_server_config", e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(certs, pk)
        .map_err(|e| {
            bad(
                "tls_server_config.key_file",
                format!("{key} does not go with {cert}: {e}"),
            )
        })
}

/// Checks `basic_auth_users` (of the file at `path`): user names a Basic header can carry,
/// and bcrypt hashes of a cost latlab verifies in bounded time.
fn check_users(path: &Path, users: &BTreeMap<String, String>) -> Result<()> {
    for (user, hash) in users {
        if user.is_empty() || user.contains(':') {
            return Err(refused(
                path,
                "basic_auth_users",
                format!("{user:?}: a user name is not empty and has no ':'"),
            ));
        }
        match bcrypt_cost(hash) {
            None => {
                return Err(refused(
                    path,
                    &format!("basic_auth_users.{user}"),
                    "not a bcrypt hash (make one with `htpasswd -nBC 10 \"\" | tr -d ':\\n'`)"
                        .into(),
                ))
            }
            Some(cost) if cost > MAX_BCRYPT_COST => {
                return Err(refused(
                    path,
                    &format!("basic_auth_users.{user}"),
                    format!(
                        "bcrypt cost {cost} is above {MAX_BCRYPT_COST}, the most latlab verifies \
                         (each step doubles the time a scrape waits; exporter-toolkit's docs \
                         use 10: `htpasswd -nBC 10 \"\" | tr -d ':\\n'`)"
                    ),
                ))
            }
            Some(_) => {}
        }
    }
    Ok(())
}

impl WebConfig {
    /// Reads and checks FILE (exit 2 naming the key on any fault).
    pub fn load(path: &Path) -> Result<WebConfig> {
        let file = read_file(path)?;
        let tls = match file.tls_server_config {
            None => None,
            Some(t) => Some(Arc::new(tls_config(path, t)?)),
        };
        let users = file.basic_auth_users.unwrap_or_default();
        check_users(path, &users)?;
        Ok(WebConfig {
            tls,
            users,
            verified: Mutex::new(HashMap::new()),
        })
    }

    /// True when requests must authenticate.
    pub fn needs_auth(&self) -> bool {
        !self.users.is_empty()
    }

    /// Whether a request with this `Authorization` header value may pass.
    pub(crate) fn authorized(&self, authorization: Option<&str>) -> bool {
        if self.users.is_empty() {
            return true;
        }
        let Some(b64) = authorization.and_then(|a| {
            let (scheme, rest) = a.trim().split_once(' ')?;
            scheme.eq_ignore_ascii_case("basic").then_some(rest.trim())
        }) else {
            return false;
        };
        let Ok(raw) = base64::engine::general_purpose::STANDARD.decode(b64) else {
            return false;
        };
        let Ok(text) = String::from_utf8(raw) else {
            return false;
        };
        let Some((user, pass)) = text.split_once(':') else {
            return false;
        };
        let known = self
            .verified
            .lock()
            .ok()
            .and_then(|v| v.get(user).map(|p| same(p, pass.as_bytes())));
        if known == Some(true) {
            return true;
        }
        match self.users.get(user) {
            Some(hash) => {
                let ok = bcrypt::verify(pass, hash).unwrap_or(false);
                if ok {
                    if let Ok(mut v) = self.verified.lock() {
                        if v.len() >= AUTH_CACHE {
                            v.clear();
                        }
                        v.insert(user.to_string(), pass.as_bytes().to_vec());
                    }
                }
                ok
            }
            // Spend the same time on an unknown user as on a wrong password.
            None => {
                if let Some(any) = self.users.values().next() {
                    let _ = bcrypt::verify(pass, any);
                }
                false
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::File::create(&p)
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
        p
    }

    #[test]
    fn contribs_example_users_part_is_valid() {
        let text = include_str!("../../../contrib/web-config.yml");
        let users = &text[text.find("basic_auth_users:").unwrap()..];
        let d = tempfile::tempdir().unwrap();
        let w = WebConfig::load(&write(d.path(), "w.yml", users)).unwrap();
        let b = base64::engine::general_purpose::STANDARD.encode("prometheus:change-me");
        assert!(w.authorized(Some(&format!("Basic {b}"))));
    }

    #[test]
    fn basic_auth_checks_bcrypt_and_bad_files_name_the_key() {
        let d = tempfile::tempdir().unwrap();
        let hash = bcrypt::hash("s3cret", 4).unwrap();
        let p = write(
            d.path(),
            "w.yml",
            &format!("basic_auth_users:\n  prom: '{hash}'\n"),
        );
        let w = WebConfig::load(&p).unwrap();
        assert!(w.needs_auth() && w.tls.is_none());
        let b = |s: &str| {
            format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(s)
            )
        };
        assert!(w.authorized(Some(&b("prom:s3cret"))));
        assert!(!w.authorized(Some(&b("prom:wrong"))));
        assert!(!w.authorized(Some(&b("other:s3cret"))));
        assert!(!w.authorized(Some("Bearer x")));
        assert!(!w.authorized(None));
        for (text, key) in [
            (
                "basic_auth_users:\n  prom: plaintext\n",
                "basic_auth_users.prom",
            ),
            ("tls_server_config:\n  key_file: k.pem\n", "cert_file"),
            (
                "tls_server_config:\n  cert_file: nope.pem\n  key_file: k.pem\n",
                "tls_server_config.cert_file",
            ),
            ("http_server_config2: {}\n", "http_server_config2"),
            (
                "tls_server_config:\n  cert_file: /dev/zero\n  key_file: /dev/zero\n",
                "/dev/zero: a character device",
            ),
        ] {
            let p = write(d.path(), "bad.yml", text);
            let e = WebConfig::load(&p).unwrap_err();
            assert_eq!(e.exit_code(), 2);
            assert!(e.to_string().contains(key), "{text}: {e}");
        }
        // A cost above the cap is refused at once (verifying one would take days).
        let h31 = bcrypt::hash("x", 4).unwrap().replacen("$04$", "$31$", 1);
        let p = write(
            d.path(),
            "slow.yml",
            &format!("basic_auth_users:\n  p: '{h31}'\n"),
        );
        let e = WebConfig::load(&p).unwrap_err().to_string();
        assert!(
            e.contains("bcrypt cost 31") && e.contains("slow.yml"),
            "{e}"
        );
    }
}
