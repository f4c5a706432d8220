//! The README's facts that code can check, checked against their sources
//! of truth, so the docs cannot drift from them unnoticed:
//!
//! * "What `cargo xtask deps` installs": every package of
//!   `.ci/apt-packages.txt` ([`crate::deps::packages`]) and nothing else;
//! * "Layout of `target/omptarget`": exactly the files `cargo xtask stage`
//!   writes ([`crate::stage::staged_files`], from the constants it stages
//!   from);
//! * the program counts of README.md and `tests/c/README.md` ("N programs",
//!   "N for clang R"): the programs of `tests/c`, as the suite's own header
//!   parser finds them (`omptarget_test_support::suite::spec::discover`).
//!
//! Each section is found by its heading, and each failure says what
//! differs.

use omptarget_test_support::release::Release;
use omptarget_test_support::suite::spec;
use std::collections::BTreeSet;

const DEPS_HEADING: &str = "What `cargo xtask deps` installs";
const LAYOUT_HEADING: &str = "Layout of `target/omptarget`";
/// How the layout block names the folder [`crate::stage::staged_files`]
/// counts from.
const LAYOUT_ROOT: &str = "target/omptarget/";

fn read(relative: &str) -> String {
    let path = crate::stage::workspace_root().join(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The lines of the section whose heading (a `#` line) contains `heading`,
/// up to the next heading of any level.
pub(crate) fn section<'t>(text: &'t str, heading: &str) -> Result<Vec<&'t str>, String> {
    let mut lines = text.lines();
    lines
        .by_ref()
        .find(|l| l.starts_with('#') && l.contains(heading))
        .ok_or_else(|| format!("no heading containing {heading:?}"))?;
    Ok(lines.take_while(|l| !l.starts_with('#')).collect())
}

/// The names in backquotes in the first cell of each row of the section's
/// table (header and separator rows skipped).
fn table_first_cells(lines: &[&str]) -> Vec<String> {
    lines
        .iter()
        .filter(|l| l.starts_with('|'))
        .skip(2)
        .filter_map(|row| row.split('|').nth(1))
        .flat_map(|cell| {
            cell.split('`')
                .skip(1)
                .step_by(2)
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The files the section's fenced block lists, relative to
/// [`LAYOUT_ROOT`]: a line at column 0 names a folder (ending in `/`, the
/// folder of the entries that follow) or a file; a line indented by two
/// spaces lists file names (comma-separated) up to the next run of two
/// spaces; deeper lines continue a description.
fn layout_block_files(lines: &[&str]) -> Result<Vec<String>, String> {
    let mut block = lines.iter().skip_while(|l| !l.starts_with("```")).skip(1);
    let mut files = Vec::new();
    let mut folder: Option<&str> = None;
    for line in block.by_ref() {
        if line.starts_with("```") {
            return Ok(files);
        }
        if line.trim().is_empty() || line.starts_with("   ") {
            continue;
        }
        if let Some(entry) = line.strip_prefix("  ") {
            let dir = folder.ok_or_else(|| format!("{line:?} comes before any folder"))?;
            let names = entry.split("  ").next().unwrap_or_default();
            files.extend(names.split(',').map(|n| format!("{dir}{}", n.trim())));
            continue;
        }
        let path = line.split_whitespace().next().unwrap_or_default();
        let relative = path
            .strip_prefix(LAYOUT_ROOT)
            .ok_or_else(|| format!("{path:?} is not under {LAYOUT_ROOT}"))?;
        if relative.ends_with('/') {
            folder = Some(relative);
        } else {
            files.push(relative.to_string());
        }
    }
    Err("no closed ``` block".into())
}

/// "only in A: ...; only in B: ..." for two sets that differ, else `None`.
fn difference(
    a_name: &str,
    a: &BTreeSet<String>,
    b_name: &str,
    b: &BTreeSet<String>,
) -> Option<String> {
    let only = |x: &BTreeSet<String>, y: &BTreeSet<String>| {
        x.difference(y).cloned().collect::<Vec<_>>().join(", ")
    };
    let (only_a, only_b) = (only(a, b), only(b, a));
    (!only_a.is_empty() || !only_b.is_empty())
        .then(|| format!("only in {a_name}: [{only_a}]; only in {b_name}: [{only_b}]"))
}

/// A count the docs state: "N programs" (the whole suite) or "N for clang
/// R" (the programs release R builds).
#[derive(Debug, PartialEq, Eq)]
enum Claim {
    Total(usize),
    Release(u32, usize),
}

/// Every [`Claim`] in `text`, with the words around it for the message.
fn count_claims(text: &str) -> Vec<(Claim, String)> {
    let words: Vec<&str> = text.split_whitespace().collect();
    let number = |w: &str| w.trim_start_matches(['(', '[']).parse::<usize>().ok();
    let release = |w: &str| {
        w.trim_end_matches([',', ';', ':', ')', '.'])
            .parse::<u32>()
            .ok()
    };
    let mut claims = Vec::new();
    for (i, w) in words.iter().enumerate() {
        let Some(n) = number(w) else { continue };
        let next = |k: usize| words.get(i + k).copied().unwrap_or_default();
        let claim = if next(1).starts_with("programs") {
            Claim::Total(n)
        } else if next(1) == "for" && next(2) == "clang" {
            match release(next(3)) {
                Some(r) => Claim::Release(r, n),
                None => continue,
            }
        } else {
            continue;
        };
        let context = words[i.saturating_sub(3)..(i + 4).min(words.len())].join(" ");
        claims.push((claim, context));
    }
    claims
}

/// What is wrong with the counts `doc` states, given the suite's total and
/// per-release counts; a doc must state the total at least once.
fn check_counts(doc: &str, text: &str, total: usize, per_release: &[(u32, usize)]) -> Vec<String> {
    let claims = count_claims(text);
    let mut errors = Vec::new();
    if !claims.iter().any(|(c, _)| matches!(c, Claim::Total(_))) {
        errors.push(format!(
            "{doc} states no \"N programs\" count of tests/c (it has {total})"
        ));
    }
    for (claim, context) in claims {
        let (stated, actual, what) = match claim {
            Claim::Total(n) => (n, total, "programs".to_string()),
            Claim::Release(r, n) => {
                let actual = per_release.iter().find(|(m, _)| *m == r).map(|(_, c)| *c);
                match actual {
                    Some(actual) => (n, actual, format!("programs for clang {r}")),
                    None => {
                        errors.push(format!("{doc}: \"{context}\": no release {r} in the suite"));
                        continue;
                    }
                }
            }
        };
        if stated != actual {
            errors.push(format!(
                "{doc}: \"{context}\" says {stated}, tests/c has {actual} {what}"
            ));
        }
    }
    errors
}

#[test]
fn deps_table_lists_exactly_the_apt_packages() {
    let readme = read("README.md");
    let rows = section(&readme, DEPS_HEADING).unwrap();
    let listed = table_first_cells(&rows);
    assert!(!listed.is_empty(), "README.md, {DEPS_HEADING:?}: no table");
    let documented: BTreeSet<String> = listed.iter().cloned().collect();
    assert_eq!(
        documented.len(),
        listed.len(),
        "README.md, {DEPS_HEADING:?}: a package is listed twice: {listed:?}"
    );
    let packages: BTreeSet<String> = crate::deps::packages()
        .into_iter()
        .map(|(name, _)| name.to_string())
        .collect();
    if let Some(diff) = difference(
        "README.md's table",
        &documented,
        ".ci/apt-packages.txt",
        &packages,
    ) {
        panic!("README.md, {DEPS_HEADING:?} disagrees with .ci/apt-packages.txt: {diff}");
    }
}

#[test]
fn layout_block_lists_exactly_the_staged_files() {
    let readme = read("README.md");
    let lines = section(&readme, LAYOUT_HEADING).unwrap();
    let listed =
        layout_block_files(&lines).unwrap_or_else(|e| panic!("README.md, {LAYOUT_HEADING:?}: {e}"));
    let documented: BTreeSet<String> = listed.iter().cloned().collect();
    assert_eq!(
        documented.len(),
        listed.len(),
        "README.md, {LAYOUT_HEADING:?}: a file is listed twice: {listed:?}"
    );
    let staged: BTreeSet<String> = crate::stage::staged_files()
        .into_iter()
        .map(|(dir, name)| match dir {
            "" => name.to_string(),
            dir => format!("{dir}/{name}"),
        })
        .collect();
    if let Some(diff) = difference(
        "README.md's layout",
        &documented,
        "what `cargo xtask stage` writes (xtask/src/stage.rs)",
        &staged,
    ) {
        panic!("README.md, {LAYOUT_HEADING:?} disagrees with the staged files: {diff}");
    }
}

#[test]
fn program_counts_match_tests_c() {
    let root = crate::stage::workspace_root();
    let programs = spec::discover(&root.join("tests/c"), None).unwrap();
    let per_release: Vec<(u32, usize)> = Release::ALL
        .iter()
        .map(|r| {
            let n = programs.iter().filter(|p| p.releases.contains(r)).count();
            (r.major(), n)
        })
        .collect();
    let errors: Vec<String> = ["README.md", "tests/c/README.md"]
        .into_iter()
        .flat_map(|doc| check_counts(doc, &read(doc), programs.len(), &per_release))
        .collect();
    assert!(
        errors.is_empty(),
        "program counts that disagree with tests/c ({} programs; {}):\n{}",
        programs.len(),
        per_release
            .iter()
            .map(|(r, n)| format!("{n} for clang {r}"))
            .collect::<Vec<_>>()
            .join(", "),
        errors.join("\n")
    );
}

/// The parsers on small inputs: what they accept and how they fail.
mod parsers {
    use super::*;

    #[test]
    fn a_section_ends_at_the_next_heading_and_a_table_yields_its_first_cells() {
        let text = "## A\n| p | why |\n|---|---|\n| `x`, `y` | `z` |\n## B\n| `w` | |\n";
        let lines = section(text, "A").unwrap();
        assert_eq!(table_first_cells(&lines), ["x", "y"]);
        assert!(section(text, "C").unwrap_err().contains("\"C\""));
    }

    #[test]
    fn the_layout_block_yields_paths_under_the_root() {
        let lines = [
            "```",
            "target/omptarget/lib/    libs",
            "  a.so, b.so             two",
            "                         more text, c.so",
            "target/omptarget/.token  a file",
            "```",
        ];
        assert_eq!(
            layout_block_files(&lines).unwrap(),
            ["lib/a.so", "lib/b.so", ".token"]
        );
        let stray = ["```", "  a.so  x", "```"];
        assert!(layout_block_files(&stray)
            .unwrap_err()
            .contains("before any folder"));
        assert!(layout_block_files(&["```", "elsewhere/ x", "```"])
            .unwrap_err()
            .contains("not under"));
    }

    #[test]
    fn counts_are_found_and_compared() {
        let text =
            "the suite (12 programs: 10 for clang 14, 11 for clang 22) and clang 14/19/22 programs";
        assert_eq!(
            count_claims(text)
                .into_iter()
                .map(|(c, _)| c)
                .collect::<Vec<_>>(),
            [
                Claim::Total(12),
                Claim::Release(14, 10),
                Claim::Release(22, 11)
            ]
        );
        assert!(check_counts("d", text, 12, &[(14, 10), (22, 11)]).is_empty());
        let errors = check_counts("d", text, 13, &[(14, 10), (22, 9)]);
        assert_eq!(errors.len(), 2, "{errors:?}");
        assert!(errors[0].contains("says 12, tests/c has 13 programs"));
        assert!(errors[1].contains("says 11, tests/c has 9 programs for clang 22"));
        assert!(check_counts("d", "no count", 1, &[])[0].contains("no \"N programs\""));
    }
}
