//! `--web-config FILE`: TLS and basic authentication for the monitor's endpoint, in the
//! Prometheus exporter-toolkit format that node_exporter reads (`tls_server_config` with
//! `cert_file`/`key_file`, `basic_auth_users` with bcrypt hashes). Everything is checked at
//! start: a bad file is refused (exit 2) naming the key.

use crate::error::{Error, Result};
use base64::Engine;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

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
}

impl WebConfig {
    /// Reads and checks FILE (exit 2 naming the key on any fault).
    pub fn load(path: &Path) -> Result<WebConfig> {
        let bad = |key: &str, why: String| {
            Error::flag("--web-config", path.display(), format!("{key}: {why}"))
        };
        let text = crate::io::read_text_limited(path, 1 << 20, "--web-config")?;
        let file: File = if text.trim().is_empty() {
            File {
                tls_server_config: None,
                basic_auth_users: None,
            }
        } else {
            serde_norway::from_str(&text).map_err(|e| bad("YAML", e.to_string()))?
        };
        // exporter-toolkit resolves relative paths against the file's directory.
        let dir = path.parent().unwrap_or(Path::new("."));
        let resolve = |p: &str| -> PathBuf { dir.join(p) };
        let tls = match file.tls_server_config {
            None => None,
            Some(t) => {
                let cert = t.cert_file.ok_or_else(|| {
                    bad("tls_server_config.cert_file", "missing (required)".into())
                })?;
                let key = t.key_file.ok_or_else(|| {
                    bad("tls_server_config.key_file", "missing (required)".into())
                })?;
                let certs: Vec<CertificateDer<'static>> =
                    CertificateDer::pem_file_iter(resolve(&cert))
                        .and_then(|it| it.collect::<std::result::Result<Vec<_>, _>>())
                        .map_err(|e| bad("tls_server_config.cert_file", format!("{cert}: {e}")))?;
                if certs.is_empty() {
                    return Err(bad(
                        "tls_server_config.cert_file",
                        format!("{cert}: no certificate in it"),
                    ));
                }
                let pk = PrivateKeyDer::from_pem_file(resolve(&key))
                    .map_err(|e| bad("tls_server_config.key_file", format!("{key}: {e}")))?;
                let versions: &[&rustls::SupportedProtocolVersion] = match t.min_version.as_deref()
                {
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
                let cfg = rustls::ServerConfig::builder_with_provider(provider)
                    .with_protocol_versions(versions)
                    .map_err(|e| bad("tls_server_config", e.to_string()))?
                    .with_no_client_auth()
                    .with_single_cert(certs, pk)
                    .map_err(|e| {
                        bad(
                            "tls_server_config.key_file",
                            format!("{key} does not go with {cert}: {e}"),
                        )
                    })?;
                Some(Arc::new(cfg))
            }
        };
        let users = file.basic_auth_users.unwrap_or_default();
        for (user, hash) in &users {
            if user.is_empty() || user.contains(':') {
                return Err(bad(
                    "basic_auth_users",
                    format!("{user:?}: a user name is not empty and has no ':'"),
                ));
            }
            // A bcrypt hash: $2a$/$2b$/$2y$, a cost, 53 characters of salt and hash.
            let ok = hash.len() == 60
                && ["$2a$", "$2b$", "$2y$"].iter().any(|p| hash.starts_with(p))
                && bcrypt::verify("", hash).is_ok();
            if !ok {
                return Err(bad(
                    &format!("basic_auth_users.{user}"),
                    "not a bcrypt hash (make one with `htpasswd -nBC 10 \"\" | tr -d ':\\n'`)"
                        .into(),
                ));
            }
        }
        Ok(WebConfig { tls, users })
    }

    /// True when requests must authenticate.
    pub fn needs_auth(&self) -> bool {
        !self.users.is_empty()
    }

    /// Whether a request with this `Authorization` header value may pass.
    pub fn authorized(&self, authorization: Option<&str>) -> bool {
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
        match self.users.get(user) {
            Some(hash) => bcrypt::verify(pass, hash).unwrap_or(false),
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
        ] {
            let p = write(d.path(), "bad.yml", text);
            let e = WebConfig::load(&p).unwrap_err();
            assert_eq!(e.exit_code(), 2);
            assert!(e.to_string().contains(key), "{text}: {e}");
        }
    }
}
