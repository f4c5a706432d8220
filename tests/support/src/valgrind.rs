//! Valgrind: reading its `--xml=yes` report (the errors, memory errors and
//! leak records, with their kind, size and allocation/error stack),
//! charging a stack to its owner, the suppressions every run uses, and
//! which runtime a run checks ([`lib_dir`], [`our_lib_dir`]).
//!
//! Valgrind writes this XML itself in a fixed layout (protocol version 4), so
//! a small tag extractor is enough; no general XML parser is needed.

use std::path::PathBuf;

/// `tests/support/valgrind.supp`: the suppressions of every valgrind run
/// of the tests (each entry says why it is not ours to fix).
pub fn suppressions() -> PathBuf {
    crate::paths::workspace_root().join("tests/support/valgrind.supp")
}

/// The variable that points the valgrind runs at a library folder.
pub const LIB_DIR_ENV: &str = "OMPTARGET_VALGRIND_LIB_DIR";

/// The runtime a valgrind run checks: the folder [`LIB_DIR_ENV`] names
/// (`cargo xtask test` names the release copy it builds: the build users
/// install and leak-check, which memcheck runs about twice as fast as the
/// debug build), else the staged debug build. The folder may hold another
/// runtime (LLVM's, to see what the C suite's rules say of it).
pub fn lib_dir() -> Result<PathBuf, String> {
    match std::env::var_os(LIB_DIR_ENV) {
        Some(dir) => Ok(PathBuf::from(dir)),
        None => crate::stage::try_staged().map(|s| s.lib_dir.clone()),
    }
}

/// [`lib_dir`] when it is a build of ours (a folder under
/// `target/omptarget`, as the release copy), else the staged debug build:
/// for the checks that only hold of our runtime (the shim's edge tests
/// expect its fixes, and charge leaks to libraries by file name).
pub fn our_lib_dir() -> Result<PathBuf, String> {
    let ours = crate::paths::omptarget_dir();
    match std::env::var_os(LIB_DIR_ENV).map(PathBuf::from) {
        Some(dir) if dir.starts_with(&ours) => Ok(dir),
        _ => crate::stage::try_staged().map(|s| s.lib_dir.clone()),
    }
}

/// One stack frame: the object (library or executable) and function.
#[derive(Clone, Debug, Default)]
pub struct Frame {
    pub obj: String,
    pub func: String,
    pub file: String,
    pub line: String,
}

/// One `<error>` record.
#[derive(Clone, Debug)]
pub struct Error {
    /// E.g. `InvalidRead`, `Leak_DefinitelyLost`, `Leak_StillReachable`.
    pub kind: String,
    /// Valgrind's one-line description.
    pub what: String,
    /// For leak records: bytes and blocks (direct + indirect).
    pub leaked_bytes: u64,
    pub leaked_blocks: u64,
    /// The first stack: where the error happened, or where a leaked block was
    /// allocated (innermost frame first).
    pub stack: Vec<Frame>,
    /// The `<auxwhat>` notes in order, each with the stack that follows it
    /// (empty if none): e.g. "Address 0x.. is 8 bytes inside a block of size
    /// 15 alloc'd" with the allocation stack, or (with `--track-origins=yes`)
    /// "Uninitialised value was created by a stack allocation" with the stack
    /// of the function whose frame it was.
    pub aux: Vec<(String, Vec<Frame>)>,
}

impl Error {
    pub fn is_leak(&self) -> bool {
        self.kind.starts_with("Leak_")
    }

    /// Stacks as readable text, one frame a line.
    pub fn stack_text(&self) -> String {
        let mut text = frames_text(&self.stack);
        for (note, frames) in &self.aux {
            text.push_str(&format!("  {note}\n"));
            text.push_str(&frames_text(frames));
        }
        text
    }

    /// The origin of an uninitialised value, if valgrind tracked it: its
    /// description and stack.
    pub fn origin(&self) -> Option<&(String, Vec<Frame>)> {
        self.aux
            .iter()
            .find(|(note, _)| note.starts_with("Uninitialised value was created"))
    }
}

fn frames_text(frames: &[Frame]) -> String {
    frames
        .iter()
        .map(|f| {
            let loc = if f.file.is_empty() {
                String::new()
            } else {
                format!(" ({}:{})", f.file, f.line)
            };
            format!("    {} in {}{}\n", f.func_or_unknown(), f.obj, loc)
        })
        .collect()
}

impl Frame {
    fn func_or_unknown(&self) -> &str {
        if self.func.is_empty() {
            "???"
        } else {
            &self.func
        }
    }
}

/// What a report says.
#[derive(Clone, Debug, Default)]
pub struct Report {
    pub errors: Vec<Error>,
    /// `<status><state>FINISHED` seen: valgrind completed the report.
    pub finished: bool,
}

fn unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&amp;", "&")
}

/// The text of the first `<tag>...</tag>` in `s`.
fn first<'a>(s: &'a str, tag: &str) -> Option<&'a str> {
    let open = format!("<{tag}>");
    let close = format!("</{tag}>");
    let start = s.find(&open)? + open.len();
    let end = s[start..].find(&close)? + start;
    Some(&s[start..end])
}

/// Every `<tag>...</tag>` body in `s`, in order (tags are not nested in
/// themselves in valgrind's format).
fn all<'a>(s: &'a str, tag: &str) -> Vec<&'a str> {
    let open = format!("<{tag}>");
    let close = format!("</{tag}>");
    let mut out = Vec::new();
    let mut rest = s;
    while let Some(pos) = rest.find(&open) {
        let body_start = pos + open.len();
        let Some(len) = rest[body_start..].find(&close) else {
            break;
        };
        out.push(&rest[body_start..body_start + len]);
        rest = &rest[body_start + len + close.len()..];
    }
    out
}

fn parse_frames(stack: &str) -> Vec<Frame> {
    all(stack, "frame")
        .into_iter()
        .map(|fr| Frame {
            obj: unescape(first(fr, "obj").unwrap_or_default()),
            func: unescape(first(fr, "fn").unwrap_or_default()),
            file: unescape(first(fr, "file").unwrap_or_default()),
            line: first(fr, "line").unwrap_or_default().to_string(),
        })
        .collect()
}

/// Pairs each `<auxwhat>` with the `<stack>` right after it, if any.
fn aux_notes(body: &str) -> Vec<(String, Vec<Frame>)> {
    let open = "<auxwhat>";
    let mut notes = Vec::new();
    let mut rest = body;
    while let Some(pos) = rest.find(open) {
        rest = &rest[pos..];
        let note = first(rest, "auxwhat").unwrap_or_default();
        rest = &rest[open.len()..];
        let next_note = rest.find(open).unwrap_or(rest.len());
        let frames = match rest.find("<stack>") {
            Some(st) if st < next_note => first(&rest[st..], "stack")
                .map(parse_frames)
                .unwrap_or_default(),
            _ => Vec::new(),
        };
        notes.push((unescape(note), frames));
    }
    notes
}

/// Objects that allocate or fail on behalf of their caller (the allocator
/// and system libraries): skipped when charging a stack to an owner.
pub const PLUMBING_OBJECTS: &[&str] = &[
    "vgpreload_",
    "libc.so",
    "ld-linux",
    "libstdc++.so",
    "libgcc_s.so",
    "libm.so",
    "libdl.so",
    "libpthread.so",
];

/// The object a stack is charged to: walking from the innermost frame
/// outwards, the first object that is not plumbing. For a leak stack that
/// is who allocated the block; for an error stack, whose code went wrong;
/// for a stack-allocation origin, whose frame holds the bytes. The object
/// is valgrind's path; callers compare file names. None if the stack holds
/// only plumbing.
pub fn owner(frames: &[Frame]) -> Option<&str> {
    frames.iter().map(|f| f.obj.as_str()).find(|obj| {
        let file = obj.rsplit('/').next().unwrap_or(obj);
        !PLUMBING_OBJECTS.iter().any(|p| file.starts_with(p))
    })
}

/// Parses the whole XML file text.
pub fn parse(xml: &str) -> Report {
    let mut report = Report {
        finished: all(xml, "status")
            .iter()
            .any(|st| first(st, "state").map(str::trim) == Some("FINISHED")),
        ..Report::default()
    };
    for body in all(xml, "error") {
        let kind = first(body, "kind").unwrap_or_default().trim().to_string();
        let (what, leaked_bytes, leaked_blocks) = match first(body, "xwhat") {
            Some(xwhat) => (
                first(xwhat, "text").unwrap_or_default(),
                first(xwhat, "leakedbytes")
                    .and_then(|v| v.trim().parse().ok())
                    .unwrap_or(0),
                first(xwhat, "leakedblocks")
                    .and_then(|v| v.trim().parse().ok())
                    .unwrap_or(0),
            ),
            None => (first(body, "what").unwrap_or_default(), 0, 0),
        };
        let stack = first(body, "stack").map(parse_frames).unwrap_or_default();
        report.errors.push(Error {
            kind,
            what: unescape(what),
            leaked_bytes,
            leaked_blocks,
            stack,
            aux: aux_notes(body),
        });
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_leak_and_error_records() {
        let xml = r#"<valgrindoutput>
<status><state>RUNNING</state></status>
<error><unique>0x1</unique><kind>UninitCondition</kind><what>Conditional jump</what>
<stack><frame><ip>0x1</ip><obj>/bin/prog</obj><fn>main</fn></frame></stack>
<auxwhat>Address 0x1 is 1 bytes inside a block of size 8 alloc'd</auxwhat>
<stack><frame><ip>0x3</ip><obj>/lib/libc.so.6</obj><fn>malloc</fn></frame></stack>
<auxwhat>Uninitialised value was created by a stack allocation</auxwhat>
<stack><frame><ip>0x2</ip><obj>/bin/prog</obj><fn>kernel</fn></frame></stack></error>
<error><unique>0x2</unique><kind>Leak_StillReachable</kind>
<xwhat><text>16 bytes in 1 blocks are still reachable</text><leakedbytes>16</leakedbytes><leakedblocks>1</leakedblocks></xwhat>
<stack><frame><obj>/v/vgpreload.so</obj><fn>malloc</fn></frame><frame><obj>/t/libomptarget.so</obj><fn>f&lt;T&gt;</fn><file>a.rs</file><line>3</line></frame></stack></error>
<status><state>FINISHED</state></status>
</valgrindoutput>"#;
        let r = parse(xml);
        assert!(r.finished);
        assert_eq!(r.errors.len(), 2);
        assert_eq!(r.errors[0].kind, "UninitCondition");
        assert!(!r.errors[0].is_leak());
        assert_eq!(r.errors[0].stack[0].func, "main");
        let (note, origin) = r.errors[0].origin().expect("origin parsed");
        assert!(note.contains("stack allocation"));
        assert_eq!(origin[0].func, "kernel");
        assert!(r.errors[1].aux.is_empty());
        assert_eq!(r.errors[1].leaked_bytes, 16);
        assert_eq!(r.errors[1].stack[1].func, "f<T>");
        assert_eq!(r.errors[1].stack[1].obj, "/t/libomptarget.so");
    }
}
