//! A fleet's view of the store in text: `runs list --host H --since T` over monitor snapshots.

use crate::util::{expect_exit, latlab};

#[test]
fn runs_list_filters_snapshots_by_host_and_since() {
    let dir = tempfile::tempdir().unwrap();
    let store = format!("sqlite:{}", dir.path().join("m.db").display());
    let st = latlab()
        .args([
            "monitor",
            "-a",
            "0",
            "-p",
            "0",
            "-i",
            "1ms",
            "--snapshot-every",
            "1s",
        ])
        .args(["-D", "2500ms", "--listen", "127.0.0.1:0", "--store", &store])
        .output()
        .unwrap();
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    let host = latlab::result::Environment::hostname();
    let list = |extra: &[&str]| {
        let o = latlab()
            .args(["runs", "list", "--kind", "monitor", "--store", &store])
            .args(extra)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).lines().skip(1).count()
    };
    let all = list(&[]);
    assert!(all >= 2, "{all} snapshots");
    assert_eq!(list(&["--host", &host, "--since", "1h"]), all);
    assert_eq!(list(&["--host", "no-such-host", "--since", "1h"]), 0);
    assert_eq!(list(&["--since", "2099-01-01T00:00:00Z"]), 0);
    assert_eq!(list(&["--since", "2000-01-01T00:00:00Z"]), all);
    expect_exit(&["runs", "list"], &["--since", "lately"], 2, "--since");
}
