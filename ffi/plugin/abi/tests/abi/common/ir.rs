//! Reading clang's textual LLVM IR, and asking LLVM for struct layouts.

use super::{Clang, TARGET};
use object::{Object, ObjectSection, ObjectSymbol};
use std::path::Path;

/// One part of a textual clang offload bundle (what clang 14 writes for
/// `-S -emit-llvm` with offloading): the text between
/// `; __CLANG_OFFLOAD_BUNDLE____START__ <kind>-<triple>` and its END marker.
/// `kind` is `host` or `openmp`.
pub fn bundle_part(text: &str, kind: &str) -> Option<String> {
    let start = format!("; __CLANG_OFFLOAD_BUNDLE____START__ {kind}-");
    let end = format!("; __CLANG_OFFLOAD_BUNDLE____END__ {kind}-");
    let mut part: Option<String> = None;
    for line in text.lines() {
        if line.starts_with(&start) {
            part = Some(String::new());
        } else if line.starts_with(&end) {
            return part;
        } else if let Some(p) = part.as_mut() {
            p.push_str(line);
            p.push('\n');
        }
    }
    None
}

/// The body of `%<name> = type { ... }`, looking for `%struct.<name>` too.
pub fn struct_body(ir: &str, name: &str) -> Option<String> {
    let heads = [
        format!("%struct.{name} = type "),
        format!("%{name} = type "),
    ];
    ir.lines().find_map(|l| {
        let rest = heads.iter().find_map(|h| l.strip_prefix(h.as_str()))?;
        let open = rest.find('{')?;
        let close = rest.rfind('}')?;
        Some(rest[open + 1..close].trim().to_string())
    })
}

/// The `%name` under which the struct is defined (`%struct.X` or `%X`).
pub fn struct_ref(ir: &str, name: &str) -> Option<String> {
    [format!("%struct.{name}"), format!("%{name}")]
        .into_iter()
        .find(|r| ir.lines().any(|l| l.starts_with(&format!("{r} = type "))))
}

/// Split a comma separated list at the top level (not inside brackets).
pub fn split_top_level(list: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut depth = 0i32;
    let mut cur = String::new();
    for c in list.chars() {
        match c {
            '{' | '[' | '(' | '<' => depth += 1,
            '}' | ']' | ')' | '>' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(cur.trim().to_string());
                cur.clear();
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    if !cur.trim().is_empty() {
        parts.push(cur.trim().to_string());
    }
    parts
}

/// A struct's layout as LLVM computes it for the x86_64 data layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IrLayout {
    pub size: u64,
    pub align: u64,
    /// (offset, size, IR type) of each field, in order.
    pub fields: Vec<(u64, u64, String)>,
}

/// Ask LLVM (the same release that printed `ir`) for the layout of struct
/// `name` defined in `ir`: the test writes a module of `ptrtoint(gep null)`
/// constants, compiles it, and reads the folded numbers out of the object.
/// No layout rule is re-implemented here.
pub fn llvm_layout(clang: &Clang, dir: &Path, ir: &str, name: &str) -> IrLayout {
    let ty = struct_ref(ir, name).unwrap_or_else(|| panic!("no %{name} in the IR"));
    let body = struct_body(ir, name).expect("struct_ref found it");
    let field_types = split_top_level(&body);
    let ptr_to = |t: &str| {
        if clang.opaque_pointers() {
            "ptr".to_string()
        } else {
            format!("{t}*")
        }
    };
    let size_of = |t: &str| {
        format!(
            "ptrtoint ({p} getelementptr ({t}, {p} null, i32 1) to i64)",
            p = ptr_to(t)
        )
    };
    // Target lines first, then every named type (the struct may use others).
    let mut m = String::new();
    for l in ir.lines().filter(|l| l.starts_with("target datalayout")) {
        m.push_str(l);
        m.push('\n');
    }
    m.push_str(&format!("target triple = \"{TARGET}\"\n"));
    for l in ir
        .lines()
        .filter(|l| l.starts_with('%') && l.contains(" = type "))
    {
        m.push_str(l);
        m.push('\n');
    }
    m.push_str(&format!("@layout_size = constant i64 {}\n", size_of(&ty)));
    let pair = format!("{{ i8, {ty} }}");
    // With typed pointers (clang 14) a field GEP yields a pointer to the field.
    m.push_str(&format!(
        "@layout_align = constant i64 ptrtoint ({r} getelementptr ({pair}, {p} null, i32 0, i32 1) to i64)\n",
        r = ptr_to(&ty),
        p = ptr_to(&pair)
    ));
    for (i, ft) in field_types.iter().enumerate() {
        m.push_str(&format!(
            "@layout_off_{i} = constant i64 ptrtoint ({r} getelementptr ({ty}, {p} null, i32 0, i32 {i}) to i64)\n",
            r = ptr_to(ft),
            p = ptr_to(&ty)
        ));
        m.push_str(&format!(
            "@layout_fsize_{i} = constant i64 {}\n",
            size_of(ft)
        ));
    }
    let src = dir.join(format!("layout-{name}.ll"));
    let obj = format!("layout-{name}.o");
    std::fs::write(&src, &m).expect("writing the layout module");
    let src_name = src.file_name().unwrap().to_str().unwrap().to_string();
    let out = clang.plain(dir, &["-c", "-x", "ir", &src_name, "-o", &obj]);
    assert!(
        out.status.success(),
        "LLVM rejected the layout module:\n{m}\n{}",
        out.stderr
    );
    let data = std::fs::read(dir.join(&obj)).expect("reading the layout object");
    let file = object::File::parse(&*data).expect("parsing the layout object");
    let value = |sym: &str| -> u64 {
        let s = file
            .symbols()
            .find(|s| s.name() == Ok(sym))
            .unwrap_or_else(|| panic!("{sym} missing from the layout object"));
        let section = file
            .section_by_index(s.section_index().expect("defined constant"))
            .expect("its section");
        let bytes = section.data().expect("section data");
        let at = s.address() as usize;
        u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap())
    };
    IrLayout {
        size: value("layout_size"),
        align: value("layout_align"),
        fields: field_types
            .iter()
            .enumerate()
            .map(|(i, ft)| {
                (
                    value(&format!("layout_off_{i}")),
                    value(&format!("layout_fsize_{i}")),
                    ft.clone(),
                )
            })
            .collect(),
    }
}

/// The functions of a module: (header line, body lines).
pub fn functions(ir: &str) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    let mut cur: Option<(String, Vec<String>)> = None;
    for l in ir.lines() {
        if l.starts_with("define ") {
            cur = Some((l.to_string(), Vec::new()));
        } else if l == "}" {
            if let Some(f) = cur.take() {
                out.push(f);
            }
        } else if let Some((_, body)) = cur.as_mut() {
            body.push(l.to_string());
        }
    }
    out
}

/// The parameter types of the function defined by `header`
/// (`define ... @name(i64 noundef %0, ptr noundef %1) #0 {`).
pub fn param_types(header: &str) -> Vec<String> {
    let at = header.find('@').expect("a function name");
    let open = at + header[at..].find('(').expect("a parameter list");
    let mut depth = 0;
    let mut close = open;
    for (i, c) in header[open..].char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    close = open + i;
                    break;
                }
            }
            _ => {}
        }
    }
    split_top_level(&header[open + 1..close])
        .into_iter()
        .map(|p| p.split_whitespace().next().unwrap_or("").to_string())
        .collect()
}

/// The function name in a `define` header.
pub fn function_name(header: &str) -> &str {
    let at = header.find('@').expect("a function name");
    let rest = &header[at + 1..];
    &rest[..rest.find('(').expect("a parameter list")]
}

/// The values a function stores into fields of a local `%struct.<name>`:
/// field index -> stored value text (`i32 3`, `[3 x i32] [i32 2, ...]`).
pub fn stores_into_struct(body: &[String], name: &str) -> Vec<(u32, String)> {
    let mut geps: Vec<(String, u32)> = Vec::new();
    let mut out = Vec::new();
    let needle = format!("%struct.{name}, ");
    for l in body {
        let l = l.trim();
        if l.contains("getelementptr") && l.contains(&needle) {
            let reg = l.split(" = ").next().unwrap().to_string();
            let idx = l.rsplit("i32 ").next().unwrap().trim();
            if let Ok(i) = idx.parse() {
                geps.push((reg, i));
            }
        } else if let Some(rest) = l.strip_prefix("store ") {
            // store <ty> <value>, ptr %reg, align N
            let parts = split_top_level(rest);
            if parts.len() >= 2 {
                let dest = parts[1].split_whitespace().last().unwrap_or("");
                if let Some((_, i)) = geps.iter().find(|(r, _)| r == dest) {
                    out.push((*i, parts[0].clone()));
                }
            }
        }
    }
    out
}
