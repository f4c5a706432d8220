//! DESIGN.md's "Layers and folders", checked against the manifests: a
//! crate depends (normal dependencies; tests may reach further) only on
//! crates of its own layer or of the layers below it, the layer being the
//! folder it lives in; and DESIGN.md's crate table gives every workspace
//! package with the folder it is in.

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// The layers from the bottom, each by the folder prefixes that hold it
/// (relative to the workspace root; the root package's folder is "").
const LAYERS: &[(&str, &[&str])] = &[
    ("shared by both sides of the ABI", &["ffi/shared/"]),
    ("the C ABI plugins speak", &["ffi/plugin/"]),
    ("the core", &[""]),
    ("OpenMP", &["openmp"]),
    ("the C ABI programs call", &["ffi/program/"]),
    ("programs", &["bin/"]),
    ("tests and tools", &["tests/", "xtask"]),
];

/// The layer of a package folder: the longest prefix that matches.
fn layer_of(folder: &str) -> Option<usize> {
    LAYERS
        .iter()
        .enumerate()
        .flat_map(|(rank, (_, prefixes))| prefixes.iter().map(move |p| (rank, *p)))
        .filter(|(_, prefix)| {
            if prefix.is_empty() {
                folder.is_empty()
            } else {
                folder == prefix.trim_end_matches('/') || folder.starts_with(prefix)
            }
        })
        .max_by_key(|(_, prefix)| prefix.len())
        .map(|(rank, _)| rank)
}

/// Each workspace package: name -> (folder, its normal dependencies in the
/// workspace).
pub(crate) fn packages() -> BTreeMap<String, (String, Vec<String>)> {
    let root = crate::stage::workspace_root();
    let out = std::process::Command::new(env!("CARGO"))
        .args(["metadata", "--no-deps", "--format-version", "1"])
        .current_dir(&root)
        .output()
        .expect("cargo metadata");
    assert!(out.status.success(), "cargo metadata failed");
    let meta: Value = serde_json::from_slice(&out.stdout).expect("cargo metadata's JSON");
    let all = meta["packages"].as_array().expect("packages");
    let names: Vec<&str> = all.iter().filter_map(|p| p["name"].as_str()).collect();
    all.iter()
        .map(|p| {
            let manifest = Path::new(p["manifest_path"].as_str().unwrap());
            let folder = manifest
                .parent()
                .unwrap()
                .strip_prefix(&root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let deps = p["dependencies"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|d| d["kind"].is_null())
                .filter_map(|d| d["name"].as_str())
                .filter(|d| names.contains(d))
                .map(str::to_string)
                .collect();
            (p["name"].as_str().unwrap().to_string(), (folder, deps))
        })
        .collect()
}

#[test]
fn every_crate_depends_only_on_its_layer_and_those_below() {
    let packages = packages();
    let mut wrong = Vec::new();
    for (name, (folder, deps)) in &packages {
        let Some(rank) = layer_of(folder) else {
            wrong.push(format!("{name} ({folder}/) is in no layer of DESIGN.md"));
            continue;
        };
        for dep in deps {
            let dep_folder = &packages[dep].0;
            let dep_rank = layer_of(dep_folder).unwrap_or(usize::MAX);
            if dep_rank > rank {
                wrong.push(format!(
                    "{name} ({folder}/, {}) depends on {dep} ({dep_folder}/, {}), a layer above it",
                    LAYERS[rank].0,
                    LAYERS.get(dep_rank).map_or("no layer", |l| l.0)
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn design_names_every_crate_with_its_folder() {
    let design = std::fs::read_to_string(crate::stage::workspace_root().join("DESIGN.md")).unwrap();
    let table = crate::docs_check::section(&design, "Crates").unwrap();
    // Rows: | `name` (or `a`, `-b` short forms) | `path` | what |
    let mut listed = BTreeMap::new();
    for row in table.iter().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = row.split('|').collect();
        let path = cells[2].trim().trim_matches('`').trim_end_matches('/');
        let mut previous = String::new();
        for name in cells[1].split('`').skip(1).step_by(2) {
            // `omptarget-plugin-test`, `-incomplete`: the second is
            // `omptarget-plugin-incomplete`.
            let name = match name.strip_prefix('-') {
                Some(last) => format!("{}-{last}", previous.rsplit_once('-').unwrap().0),
                None => name.to_string(),
            };
            listed.insert(name.clone(), path.to_string());
            previous = name;
        }
    }
    let mut wrong = Vec::new();
    for (name, (folder, _)) in packages() {
        let folder = if folder.is_empty() {
            "src".to_string()
        } else {
            folder
        };
        match listed.get(&name) {
            None => wrong.push(format!(
                "{name} ({folder}) is not in DESIGN.md's crate table"
            )),
            // `ffi/plugin/{test,incomplete}` names two folders at once.
            Some(path) if path.contains('{') => {
                let (head, alternatives) = path.split_once('{').unwrap();
                let alternatives = alternatives.trim_end_matches('}');
                if !alternatives
                    .split(',')
                    .any(|a| format!("{head}{a}") == folder)
                {
                    wrong.push(format!("{name}: DESIGN.md says {path}, it is in {folder}"));
                }
            }
            Some(path) if *path != folder => {
                wrong.push(format!("{name}: DESIGN.md says {path}, it is in {folder}"))
            }
            Some(_) => {}
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// DESIGN.md's other half of the rule: no two files of one crate reach
/// each other (`scripts/import-cycles.py` says how it reads the uses; a
/// child module's uses of its ancestors are part of its parent).
#[test]
fn no_import_cycles_between_files_of_a_crate() {
    let root = crate::stage::workspace_root();
    let out = std::process::Command::new("python3")
        .arg(root.join("scripts/import-cycles.py"))
        .arg("--check")
        .current_dir(&root)
        .output()
        .expect("python3 runs scripts/import-cycles.py");
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
