//! The layouts tracefs describes in text: the ring-buffer page header (`events/header_page`)
//! and each event's fields (`events/<sys>/<event>/format`), so the binary reader follows the
//! running kernel instead of hard-coded offsets.

/// One field of a record: where it is and how wide.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    /// Field name (`prev_pid`, `name`, ...).
    pub(crate) name: String,
    /// Byte offset in the record.
    pub(crate) offset: usize,
    /// Size in bytes.
    pub(crate) size: usize,
    /// A `__data_loc` field: a u32 holding (length << 16 | offset) of the real data.
    pub(crate) data_loc: bool,
}

/// An event's layout: its name, type id and fields.
#[derive(Debug, Clone, Default)]
pub struct Format {
    /// Event name.
    pub name: String,
    /// Type id (the record's `common_type`).
    pub id: u16,
    /// Every field, common ones included.
    pub(crate) fields: Vec<Field>,
}

impl Format {
    /// The field called `name`.
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.name == name)
    }
}

/// Where the page header keeps the page's time stamp, its commit word and its data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageHeader {
    /// Offset of the u64 time stamp of the page's first event.
    pub(crate) ts_offset: usize,
    /// Offset of the commit word (data length and missed-event flags).
    pub(crate) commit_offset: usize,
    /// Size of the commit word (4 or 8).
    pub(crate) commit_size: usize,
    /// Offset of the first event.
    pub(crate) data_offset: usize,
    /// Bytes in one page as `trace_pipe_raw` hands it out (header and data).
    pub page_size: usize,
}

/// Parses one `field:TYPE NAME;\toffset:N;\tsize:N;...` line.
fn field_line(line: &str) -> Option<std::result::Result<Field, String>> {
    let rest = line.trim().strip_prefix("field:")?;
    let mut parts = rest.split(';').map(str::trim);
    let decl = parts.next()?.trim();
    let mut offset = None;
    let mut size = None;
    for p in parts {
        if let Some(v) = p.strip_prefix("offset:") {
            offset = v.trim().parse::<usize>().ok();
        } else if let Some(v) = p.strip_prefix("size:") {
            size = v.trim().parse::<usize>().ok();
        }
    }
    let last = decl.split_whitespace().last().unwrap_or("");
    let name = last.split('[').next().unwrap_or("").to_string();
    match (offset, size) {
        (Some(offset), Some(size)) if !name.is_empty() => Some(Ok(Field {
            name,
            offset,
            size,
            data_loc: decl.starts_with("__data_loc"),
        })),
        _ => Some(Err(format!("unreadable field line '{}'", line.trim()))),
    }
}

/// Parses an event `format` file.
pub fn parse_format(text: &str) -> std::result::Result<Format, String> {
    let mut f = Format::default();
    let mut id = None;
    for line in text.lines() {
        if let Some(n) = line.strip_prefix("name:") {
            f.name = n.trim().to_string();
        } else if let Some(v) = line.strip_prefix("ID:") {
            id = v.trim().parse::<u16>().ok();
        } else if let Some(r) = field_line(line) {
            f.fields.push(r?);
        }
    }
    f.id = id.ok_or("no 'ID:' line")?;
    if f.field("common_type").is_none() {
        return Err("no common_type field".into());
    }
    Ok(f)
}

/// Parses `events/header_page`.
pub fn parse_header_page(text: &str) -> std::result::Result<PageHeader, String> {
    let mut fields = Vec::new();
    for line in text.lines() {
        if let Some(r) = field_line(line) {
            fields.push(r?);
        }
    }
    let get = |n: &str| {
        fields
            .iter()
            .find(|f| f.name == n)
            .cloned()
            .ok_or(format!("no '{n}' field"))
    };
    let (ts, commit, data) = (get("timestamp")?, get("commit")?, get("data")?);
    if ts.size != 8 || !matches!(commit.size, 4 | 8) {
        return Err(format!(
            "unexpected sizes: timestamp {} bytes, commit {} bytes",
            ts.size, commit.size
        ));
    }
    Ok(PageHeader {
        ts_offset: ts.offset,
        commit_offset: commit.offset,
        commit_size: commit.size,
        data_offset: data.offset,
        page_size: data.offset + data.size,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(rel: &str) -> String {
        std::fs::read_to_string(format!(
            "{}/../../tests/fixtures/trace/events/{rel}",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap()
    }

    #[test]
    fn header_page_of_this_kernel() {
        let h = parse_header_page(&fixture("header_page")).unwrap();
        assert_eq!(
            h,
            PageHeader {
                ts_offset: 0,
                commit_offset: 8,
                commit_size: 8,
                data_offset: 16,
                page_size: 4096
            }
        );
    }

    #[test]
    fn sched_switch_layout() {
        let f = parse_format(&fixture("sched/sched_switch/format")).unwrap();
        assert_eq!(f.name, "sched_switch");
        assert_eq!(f.id, 372);
        let n = f.field("next_comm").unwrap();
        assert_eq!((n.offset, n.size, n.data_loc), (40, 16, false));
        assert_eq!(f.field("prev_state").unwrap().size, 8);
    }

    #[test]
    fn data_loc_field() {
        let f = parse_format(&fixture("irq/irq_handler_entry/format")).unwrap();
        let n = f.field("name").unwrap();
        assert!(n.data_loc);
        assert_eq!((n.offset, n.size), (12, 4));
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert!(parse_format("name: x\n").is_err());
        assert!(parse_format("ID: 5\n\tfield:int x;\toffset:zz;\n").is_err());
        assert!(parse_header_page("nothing").is_err());
    }
}
