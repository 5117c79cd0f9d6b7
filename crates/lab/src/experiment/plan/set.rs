//! `latlab run --set KEY=VALUE`: overrides of a plan's keys, applied to its TOML before it is
//! read, and the `duration` shortcut that rewrites the measurement's `-D`.

/// Keys `--set` accepts besides dotted plan paths.
pub(crate) const SET_KEYS: &str =
    "repeats, order, seed, metric, higher_is_better, duration, description, \
    or a dotted plan key (design.repeats, analysis.metric, measure.args, ...)";

fn parse_set_value(v: &str) -> toml::Value {
    // A TOML value when it is one (3, true, ["-D", "1s"]), else the text as a string.
    let doc = format!("v = {v}");
    match toml::from_str::<toml::Table>(&doc) {
        Ok(mut t) => t
            .remove("v")
            .unwrap_or_else(|| toml::Value::String(v.into())),
        Err(_) => toml::Value::String(v.to_string()),
    }
}

/// Replaces `-D`/`--duration` (the measurements' one definition of it) in `args` by `value`
/// (appended when absent).
fn set_duration(args: &mut Vec<String>, value: &str) {
    use crate::driver::args::groups::{DURATION_LONG, DURATION_SHORT};
    let short = format!("-{DURATION_SHORT}");
    let long = format!("--{DURATION_LONG}");
    let long_eq = format!("{long}=");
    let mut out = Vec::with_capacity(args.len() + 2);
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        if *a == short || *a == long {
            i += 2;
            continue;
        }
        if a.starts_with(&long_eq) || (a.starts_with(&short) && a.len() > short.len()) {
            i += 1;
            continue;
        }
        out.push(a.clone());
        i += 1;
    }
    out.push(short);
    out.push(value.into());
    *args = out;
}

pub(super) fn apply_set(table: &mut toml::Table, set: &str) -> std::result::Result<(), String> {
    let (key, value) = set
        .split_once('=')
        .ok_or_else(|| format!("expected KEY=VALUE ({SET_KEYS})"))?;
    let key = key.trim();
    let value = value.trim();
    if key == "duration" {
        let measure = table
            .entry("measure")
            .or_insert_with(|| toml::Value::Table(toml::Table::new()))
            .as_table_mut()
            .ok_or("[measure] is not a table")?;
        let mut args: Vec<String> = match measure.get("args") {
            None => Vec::new(),
            Some(toml::Value::Array(a)) => a
                .iter()
                .map(|v| {
                    v.as_str()
                        .map(String::from)
                        .ok_or("measure.args holds a non-string")
                })
                .collect::<std::result::Result<_, _>>()?,
            Some(_) => return Err("measure.args is not a list".into()),
        };
        set_duration(&mut args, value);
        measure.insert(
            "args".into(),
            toml::Value::Array(args.into_iter().map(toml::Value::String).collect()),
        );
        return Ok(());
    }
    let path: Vec<&str> = match key {
        "repeats" => vec!["design", "repeats"],
        "order" => vec!["design", "order"],
        "seed" => vec!["design", "seed"],
        "metric" => vec!["analysis", "metric"],
        "higher_is_better" => vec!["analysis", "higher_is_better"],
        k => k.split('.').collect(),
    };
    if path.iter().any(|p| p.is_empty()) || path.len() > 2 || path[0] == "factor" {
        return Err(format!("unknown key '{key}' (use {SET_KEYS})"));
    }
    let mut t = table;
    for p in &path[..path.len() - 1] {
        t = t
            .entry(p.to_string())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()))
            .as_table_mut()
            .ok_or_else(|| format!("'{p}' is not a table"))?;
    }
    t.insert(path[path.len() - 1].to_string(), parse_set_value(value));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spelling_of_the_duration_is_replaced_once() {
        for given in [
            &["-D", "1s", "-x"][..],
            &["-D1s", "-x"],
            &["--duration", "1s", "-x"],
            &["--duration=1s", "-x"],
            &["-x"],
        ] {
            let mut args: Vec<String> = given.iter().map(|s| s.to_string()).collect();
            set_duration(&mut args, "5s");
            assert_eq!(args, ["-x", "-D", "5s"], "{given:?}");
        }
    }
}
