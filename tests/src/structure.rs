//! The shape of the source tree, read from the files themselves: which module each `.rs` file
//! is (following the `mod` declarations from each crate root), which files each file imports
//! (`use` items and paths written in the code), and the checks CI runs on that: every file is
//! declared by a `mod`, no files import each other in a loop, and extension-wasm's modules keep
//! the layers ARCHITECTURE.md gives them.
//!
//! It reads Rust as text, the way a reviewer skims imports: comments and string literals are
//! left out first, a path is followed to the longest module prefix that is a file, and `mod`
//! declarations themselves are not imports (a parent declaring a child is not a dependency; a
//! child reaching back into its parent with `super::` is). A re-export (`pub use errors::OpError`
//! in `lib.rs`) is a face, not a dependency: it is no import of the file that writes it, and a
//! path through it (`crate::OpError`) is an import of the file that defines the item. Test code
//! (`#[cfg(test)]` modules, inline or in files of their own) is left out of the imports: a test
//! may use the whole crate.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// One `.rs` file of a crate, as a module.
#[derive(Debug, Clone)]
pub struct SourceFile {
    /// The file, relative to the repository.
    pub path: PathBuf,
    /// Its module path from the crate root (`["ops", "act"]` for `src/ops/act/mod.rs`).
    pub module: Vec<String>,
    /// Its code with comments and string literals blanked out.
    code: String,
    /// The child modules it declares, by name.
    children: BTreeSet<String>,
    /// Compiled for tests only: declared under `#[cfg(test)]`, or inside such a module.
    pub test: bool,
}

/// One compiled target (a library, a binary): its files, reached through `mod` declarations.
#[derive(Debug)]
pub struct Target {
    /// The crate root, relative to the repository.
    pub root: PathBuf,
    /// Every file of the target, by path.
    pub files: BTreeMap<PathBuf, SourceFile>,
}

/// The package directories of the workspace.
pub const PACKAGES: &[&str] = &[
    "protocol",
    "observation",
    "hub",
    "mcp-shim",
    "cli",
    "extension-wasm",
    "tests",
    "devices/kit",
    "devices/android",
    "bindgen",
];

/// The targets of one package: `src/lib.rs`, `src/main.rs`, `src/bin/*.rs`, and the
/// integration tests' roots (`e2e/main.rs`).
pub fn targets(repo: &Path, package: &str) -> Vec<Target> {
    let dir = repo.join(package);
    let mut roots: Vec<PathBuf> = ["src/lib.rs", "src/main.rs", "e2e/main.rs"]
        .iter()
        .map(|root| dir.join(root))
        .filter(|root| root.exists())
        .collect();
    if let Ok(bins) = std::fs::read_dir(dir.join("src/bin")) {
        let mut bins: Vec<PathBuf> = bins.map(|entry| entry.unwrap().path()).collect();
        bins.sort();
        roots.extend(bins.into_iter().filter(|path| is_rust(path)));
    }
    roots
        .into_iter()
        .map(|root| load_target(repo, &root))
        .collect()
}

fn is_rust(path: &Path) -> bool {
    path.extension().is_some_and(|ext| ext == "rs")
}

fn load_target(repo: &Path, root: &Path) -> Target {
    let mut files = BTreeMap::new();
    let mut pending = vec![(root.to_path_buf(), Vec::<String>::new(), true, false)];
    while let Some((path, module, mod_root, test)) = pending.pop() {
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|error| panic!("{}: {error}", path.display()));
        let code = blank_comments_and_strings(&text);
        let mut children = BTreeSet::new();
        for (name, explicit, test_only) in declared_modules(&text, &code) {
            let dir = path.parent().unwrap();
            let child = match explicit {
                Some(file) => dir.join(file),
                None => {
                    let base = if mod_root {
                        dir.to_path_buf()
                    } else {
                        dir.join(path.file_stem().unwrap())
                    };
                    let flat = base.join(format!("{name}.rs"));
                    if flat.exists() {
                        flat
                    } else {
                        base.join(&name).join("mod.rs")
                    }
                }
            };
            assert!(
                child.exists(),
                "{} declares `mod {name}` but {} is missing",
                path.display(),
                child.display()
            );
            let child_is_root = child.file_name().is_some_and(|name| name == "mod.rs");
            let mut child_module = module.clone();
            child_module.push(name.clone());
            children.insert(name);
            pending.push((child, child_module, child_is_root, test || test_only));
        }
        let relative = path.strip_prefix(repo).unwrap_or(&path).to_path_buf();
        files.insert(
            relative.clone(),
            SourceFile {
                path: relative,
                module,
                code,
                children,
                test,
            },
        );
    }
    Target {
        root: root.strip_prefix(repo).unwrap_or(root).to_path_buf(),
        files,
    }
}

/// `mod name;` declarations (not inline `mod name { … }` blocks), with their `#[path]` and
/// whether they are `#[cfg(test)]`.
fn declared_modules(text: &str, code: &str) -> Vec<(String, Option<String>, bool)> {
    let mut found = Vec::new();
    let mut path_attr: Option<String> = None;
    let mut test_attr = false;
    // The code and the text have the same line structure; the path attribute's string is read
    // from the text, since strings are blanked in the code.
    for (line, raw) in code.lines().zip(text.lines()) {
        let trimmed = line.trim();
        if let Some(rest) = raw.trim().strip_prefix("#[path") {
            path_attr = rest.split('"').nth(1).map(str::to_owned);
            continue;
        }
        if trimmed == "#[cfg(test)]" {
            test_attr = true;
            continue;
        }
        let declaration = trimmed
            .trim_start_matches("pub(crate) ")
            .trim_start_matches("pub(super) ")
            .trim_start_matches("pub ");
        if let Some(name) = declaration.strip_prefix("mod ")
            && let Some(name) = name.strip_suffix(';')
        {
            found.push((name.trim().to_owned(), path_attr.take(), test_attr));
            test_attr = false;
        } else if !trimmed.starts_with("#[") && !trimmed.is_empty() {
            path_attr = None;
            test_attr = false;
        }
    }
    found
}

/// The code with every comment and string or char literal replaced by spaces, lines kept.
fn blank_comments_and_strings(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(chars[i]));
                    i += 1;
                }
            }
        } else if c == 'r' && (next == Some('"') || next == Some('#')) && !ident_before(&chars, i) {
            // A raw string: r"…", r#"…"#.
            let mut j = i + 1;
            let mut hashes = 0;
            while chars.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if chars.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            let closing: String = std::iter::once('"')
                .chain(std::iter::repeat_n('#', hashes))
                .collect();
            out.push_str(&" ".repeat(j + 1 - i));
            i = j + 1;
            while i < chars.len() {
                let rest: String = chars[i..chars.len().min(i + closing.len())]
                    .iter()
                    .collect();
                if rest == closing {
                    out.push_str(&" ".repeat(closing.len()));
                    i += closing.len();
                    break;
                }
                out.push(blank(chars[i]));
                i += 1;
            }
        } else if c == '"' {
            out.push(' ');
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                if i < chars.len() {
                    out.push(blank(chars[i]));
                    i += 1;
                }
            }
            out.push(' ');
            i += 1;
        } else if c == '\'' && is_char_literal(&chars, i) {
            let end = chars[i + 1..]
                .iter()
                .position(|&d| d == '\'')
                .map_or(chars.len(), |p| i + 1 + p + 1);
            let end = if chars.get(i + 1) == Some(&'\\') {
                chars[i + 3..]
                    .iter()
                    .position(|&d| d == '\'')
                    .map_or(chars.len(), |p| i + 3 + p + 1)
            } else {
                end
            };
            out.push_str(&" ".repeat(end - i));
            i = end;
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

fn ident_before(chars: &[char], i: usize) -> bool {
    i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_')
}

/// `'a'`, `'\n'`, not a lifetime (`'a`).
fn is_char_literal(chars: &[char], i: usize) -> bool {
    matches!(
        (chars.get(i + 1), chars.get(i + 2)),
        (Some('\\'), _) | (Some(_), Some('\''))
    )
}

impl Target {
    /// The file of a module path, if the path or one of its prefixes is a file's module.
    fn file_of(&self, module: &[String]) -> Option<&SourceFile> {
        (0..=module.len())
            .rev()
            .find_map(|len| self.files.values().find(|f| f.module == module[..len]))
    }

    /// The files `file` imports (itself left out).
    pub fn imports(&self, file: &SourceFile) -> BTreeSet<PathBuf> {
        let inline = inline_modules(&file.code);
        let leaves = use_leaves(&file.code);
        let in_use_item = |at: &usize| leaves.iter().any(|leaf| leaf.span.contains(at));
        let in_tests = |at: &usize| {
            inline
                .iter()
                .any(|module| module.test && (module.start..module.end).contains(at))
        };
        let written = inline_paths(&file.code, &file.children)
            .into_iter()
            .filter(|(at, _)| !in_use_item(at));
        let paths: Vec<(usize, Vec<String>)> = leaves
            .iter()
            .filter(|leaf| !leaf.public)
            .map(|leaf| (leaf.span.start, leaf.path.clone()))
            .chain(written)
            .filter(|(at, _)| !in_tests(at))
            .collect();
        paths
            .into_iter()
            .filter_map(|(at, path)| {
                // Where the path is written: the file's module, inside its inline modules.
                let mut module = file.module.clone();
                module.extend(
                    inline
                        .iter()
                        .filter(|inner| (inner.start..inner.end).contains(&at))
                        .map(|inner| inner.name.clone()),
                );
                self.resolve(&module, &file.children, &path)
            })
            .filter_map(|module| self.defining_file(module, 0).map(|f| f.path.clone()))
            .filter(|path| *path != file.path)
            .collect()
    }

    /// The file that defines what a module path names: the file of its longest module prefix,
    /// or, where that file only re-exports the next name, the file the re-export leads to.
    fn defining_file(&self, module: Vec<String>, hops: usize) -> Option<&SourceFile> {
        const MAX_HOPS: usize = 8;
        let file = self.file_of(&module)?;
        let rest = &module[file.module.len()..];
        let Some(name) = rest.first().filter(|_| hops < MAX_HOPS) else {
            return Some(file);
        };
        let through = use_leaves(&file.code)
            .into_iter()
            .filter(|leaf| leaf.public && leaf.name.as_deref() == Some(name.as_str()))
            .find_map(|leaf| {
                let mut target = self.resolve(&file.module, &file.children, &leaf.path)?;
                target.extend(rest[1..].iter().cloned());
                self.defining_file(target, hops + 1)
            });
        Some(through.unwrap_or(file))
    }

    /// A path written in module `at` (whose file declares `children`) as a module path from
    /// the crate root; `None` for other crates.
    fn resolve(
        &self,
        at: &[String],
        children: &BTreeSet<String>,
        path: &[String],
    ) -> Option<Vec<String>> {
        let mut segments = path.iter();
        let first = segments.next()?;
        let mut module: Vec<String> = match first.as_str() {
            "crate" => Vec::new(),
            "self" => at.to_vec(),
            "super" => at[..at.len().checked_sub(1)?].to_vec(),
            child if children.contains(child) => {
                let mut module = at.to_vec();
                module.push(child.to_owned());
                module
            }
            _ => return None,
        };
        for segment in segments {
            if segment == "super" {
                module.pop();
            } else {
                module.push(segment.clone());
            }
        }
        Some(module)
    }

    /// The files of the target that import each other in a loop, one list per loop.
    pub fn loops(&self) -> Vec<Vec<PathBuf>> {
        let graph: BTreeMap<PathBuf, BTreeSet<PathBuf>> = self
            .files
            .values()
            .filter(|file| !file.test)
            .map(|file| (file.path.clone(), self.imports(file)))
            .collect();
        strongly_connected(&graph)
            .into_iter()
            .filter(|component| component.len() > 1)
            .collect()
    }
}

/// One leaf of a `use` item: `use a::{b, c as d}` has two.
#[derive(Debug)]
struct UseLeaf {
    /// The bytes of its `use` item, from `use` to `;`.
    span: std::ops::Range<usize>,
    /// The path it names (`a::c`); a glob names its module.
    path: Vec<String>,
    /// The name it brings into scope (`d`); `None` for a glob.
    name: Option<String>,
    /// `pub use`, `pub(crate) use`: a re-export.
    public: bool,
}

/// The leaves of the `use` items of `code`.
fn use_leaves(code: &str) -> Vec<UseLeaf> {
    let mut leaves = Vec::new();
    let mut from = 0;
    while let Some(found) = find_keyword(&code[from..], "use") {
        let at = from + found;
        let after = &code[at + 3..];
        let Some(end) = after.find(';') else { break };
        let before = code[..at].trim_end();
        let before = match before.strip_suffix(')') {
            Some(scoped) => scoped
                .rsplit_once('(')
                .map_or(before, |(head, _)| head.trim_end()),
            None => before,
        };
        let public = before.ends_with("pub")
            && !before[..before.len() - 3].ends_with(|c: char| c.is_alphanumeric() || c == '_');
        let mut found = Vec::new();
        expand_use_tree(&after[..end], &mut Vec::new(), &mut found);
        leaves.extend(found.into_iter().map(|(path, name)| UseLeaf {
            span: at..at + 3 + end,
            path,
            name,
            public,
        }));
        from = at + 3 + end;
    }
    leaves
}

/// An inline module (`mod tests { … }`): the bytes of its body, its name, and whether it is
/// `#[cfg(test)]`.
#[derive(Debug)]
struct InlineModule {
    start: usize,
    end: usize,
    name: String,
    test: bool,
}

/// The inline modules of a file.
fn inline_modules(code: &str) -> Vec<InlineModule> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(found_at) = find_keyword(&code[from..], "mod") {
        let at = from + found_at;
        from = at + 3;
        let rest = &code[from..];
        let name: String = rest
            .trim_start()
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let after_name = rest.trim_start()[name.len()..].trim_start();
        if name.is_empty() || !after_name.starts_with('{') {
            continue;
        }
        let open = code.len() - after_name.len();
        let mut depth = 0;
        let mut end = code.len();
        for (i, c) in code[open..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = open + i;
                        break;
                    }
                }
                _ => {}
            }
        }
        let before = code[..at].trim_end();
        let before = before.strip_suffix("pub").unwrap_or(before).trim_end();
        found.push(InlineModule {
            start: open,
            end,
            name,
            test: before.ends_with("#[cfg(test)]"),
        });
    }
    found
}

/// The offset of `keyword` standing alone as a word in `code`.
fn find_keyword(code: &str, keyword: &str) -> Option<usize> {
    let bytes = code.as_bytes();
    let mut from = 0;
    while let Some(found) = code[from..].find(keyword) {
        let at = from + found;
        let before = at.checked_sub(1).map(|b| bytes[b]);
        let after = bytes.get(at + keyword.len());
        let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
        if !before.is_some_and(word) && !after.is_some_and(|b| word(*b)) {
            return Some(at);
        }
        from = at + keyword.len();
    }
    None
}

/// The leaves of a use tree: each path with the name it brings into scope (`None` for a glob).
fn expand_use_tree(
    tree: &str,
    prefix: &mut Vec<String>,
    out: &mut Vec<(Vec<String>, Option<String>)>,
) {
    let tree = tree.trim();
    if let Some(open) = tree.find('{') {
        let head: Vec<String> = tree[..open]
            .split("::")
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect();
        let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
        let depth_before = prefix.len();
        prefix.extend(head);
        for part in split_top_level(inner) {
            expand_use_tree(part, prefix, out);
        }
        prefix.truncate(depth_before);
        return;
    }
    let (leaf, alias) = match tree.split_once(" as ") {
        Some((leaf, alias)) => (leaf.trim(), Some(alias.trim().to_owned())),
        None => (tree, None),
    };
    if leaf.is_empty() {
        return;
    }
    let glob = leaf.ends_with('*');
    let mut path = prefix.clone();
    path.extend(
        leaf.split("::")
            .map(str::trim)
            .filter(|s| !s.is_empty() && *s != "*")
            .map(str::to_owned),
    );
    // `use super::{self, …}`: `self` names the prefix itself.
    if path.last().is_some_and(|last| last == "self") {
        path.pop();
    }
    let name = if glob {
        None
    } else {
        alias.or_else(|| path.last().cloned())
    };
    if !path.is_empty() {
        out.push((path, name));
    }
}

/// Splits at the commas not inside braces.
fn split_top_level(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut depth = 0;
    let mut start = 0;
    for (i, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

/// Paths written in the code: `crate::…`, `super::…`, `self::…`, and `child::…` for the
/// file's own child modules, with their byte offsets.
fn inline_paths(code: &str, children: &BTreeSet<String>) -> Vec<(usize, Vec<String>)> {
    let chars: Vec<char> = code.chars().collect();
    let offsets: Vec<usize> = code.char_indices().map(|(offset, _)| offset).collect();
    let mut paths = Vec::new();
    let mut i = 0;
    let word = |c: char| c.is_alphanumeric() || c == '_';
    while i < chars.len() {
        if !word(chars[i]) || (i > 0 && (word(chars[i - 1]) || chars[i - 1] == ':')) {
            i += 1;
            continue;
        }
        let mut segments = Vec::new();
        let mut j = i;
        loop {
            let start = j;
            while j < chars.len() && word(chars[j]) {
                j += 1;
            }
            segments.push(chars[start..j].iter().collect::<String>());
            if chars.get(j) == Some(&':') && chars.get(j + 1) == Some(&':') {
                j += 2;
                if chars.get(j).is_some_and(|c| word(*c)) {
                    continue;
                }
            }
            break;
        }
        let first = segments[0].as_str();
        let rooted = matches!(first, "crate" | "super" | "self") || children.contains(first);
        // `pub(in crate::mcp)` is a visibility, not a path to an item.
        let visibility = code[..offsets[i]].trim_end().ends_with("(in");
        if rooted && segments.len() > 1 && !visibility {
            paths.push((offsets[i], segments));
        }
        i = j.max(i + 1);
    }
    paths
}

/// Tarjan's strongly connected components.
fn strongly_connected(graph: &BTreeMap<PathBuf, BTreeSet<PathBuf>>) -> Vec<Vec<PathBuf>> {
    struct State<'a> {
        graph: &'a BTreeMap<PathBuf, BTreeSet<PathBuf>>,
        index: BTreeMap<&'a PathBuf, usize>,
        low: BTreeMap<&'a PathBuf, usize>,
        stack: Vec<&'a PathBuf>,
        on_stack: BTreeSet<&'a PathBuf>,
        next: usize,
        out: Vec<Vec<PathBuf>>,
    }
    fn visit<'a>(s: &mut State<'a>, node: &'a PathBuf) {
        s.index.insert(node, s.next);
        s.low.insert(node, s.next);
        s.next += 1;
        s.stack.push(node);
        s.on_stack.insert(node);
        for next in s.graph.get(node).into_iter().flatten() {
            let Some((next, _)) = s.graph.get_key_value(next) else {
                continue;
            };
            if !s.index.contains_key(next) {
                visit(s, next);
                let low = s.low[next].min(s.low[node]);
                s.low.insert(node, low);
            } else if s.on_stack.contains(next) {
                let low = s.index[next].min(s.low[node]);
                s.low.insert(node, low);
            }
        }
        if s.low[node] == s.index[node] {
            let mut component = Vec::new();
            while let Some(top) = s.stack.pop() {
                s.on_stack.remove(top);
                component.push(top.clone());
                if top == node {
                    break;
                }
            }
            component.sort();
            s.out.push(component);
        }
    }
    let mut state = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        next: 0,
        out: Vec::new(),
    };
    for node in graph.keys() {
        if !state.index.contains_key(node) {
            visit(&mut state, node);
        }
    }
    state.out
}

/// The `.rs` files under a package's `src/` (and `e2e/`) that no target's `mod` tree reaches:
/// they are never compiled.
pub fn undeclared_files(repo: &Path, package: &str, targets: &[Target]) -> Vec<PathBuf> {
    let reached: BTreeSet<&PathBuf> = targets.iter().flat_map(|t| t.files.keys()).collect();
    let mut found = Vec::new();
    for dir in ["src", "e2e"] {
        collect_rust_files(&repo.join(package).join(dir), &mut found);
    }
    found
        .into_iter()
        .map(|path| path.strip_prefix(repo).unwrap_or(&path).to_path_buf())
        .filter(|path| !reached.contains(path))
        .collect()
}

fn collect_rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries {
        let path = entry.unwrap().path();
        if path.is_dir() {
            collect_rust_files(&path, out);
        } else if is_rust(&path) {
            out.push(path);
        }
    }
}

/// One layer of a crate as ARCHITECTURE.md lists it: its name and its modules (module paths
/// such as `ops::act`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layer {
    /// The layer's name.
    pub name: String,
    /// Its modules.
    pub modules: Vec<Vec<String>>,
}

/// The layers of the table that follows `heading` in ARCHITECTURE.md, bottom first: rows
/// `| name | `module`, `module` | … |`.
pub fn layers(architecture: &str, heading: &str) -> Vec<Layer> {
    let section = architecture
        .split_once(heading)
        .map(|(_, rest)| rest)
        .unwrap_or_else(|| panic!("ARCHITECTURE.md has no {heading:?}"));
    section
        .lines()
        .skip_while(|line| !line.starts_with('|'))
        .take_while(|line| line.starts_with('|'))
        .filter_map(|row| {
            let cells: Vec<&str> = row.split('|').map(str::trim).collect();
            let (name, modules) = (cells.get(1)?, cells.get(2)?);
            // `crate` is the crate root itself (lib.rs).
            let modules: Vec<Vec<String>> = modules
                .split('`')
                .skip(1)
                .step_by(2)
                .map(|module| match module {
                    "crate" => Vec::new(),
                    module => module.split("::").map(str::to_owned).collect(),
                })
                .collect();
            (!modules.is_empty()).then(|| Layer {
                name: name.trim_matches('*').to_owned(),
                modules,
            })
        })
        .collect()
}

/// Where a file stands among `layers`: the layer and module listed for the longest prefix of
/// its module path (the crate root stands only for itself).
fn place<'a>(layers: &'a [Layer], module: &[String]) -> Option<(usize, &'a Vec<String>)> {
    layers
        .iter()
        .enumerate()
        .flat_map(|(i, layer)| layer.modules.iter().map(move |m| (i, m)))
        .filter(|(_, m)| module.starts_with(m) && (!m.is_empty() || module.is_empty()))
        .max_by_key(|(_, m)| m.len())
}

/// The imports of `target` that break `layers`: a module importing a module of a higher
/// layer, a file of no listed module, and modules of one layer importing each other both ways.
pub fn layer_violations(target: &Target, layers: &[Layer]) -> Vec<String> {
    let mut problems = Vec::new();
    let mut unit_edges: BTreeSet<(Vec<String>, Vec<String>)> = BTreeSet::new();
    for file in target.files.values().filter(|file| !file.test) {
        let Some((from_layer, from)) = place(layers, &file.module) else {
            problems.push(format!(
                "{} ({}) is in no layer",
                file.path.display(),
                file.module.join("::")
            ));
            continue;
        };
        for imported in target.imports(file) {
            let module = &target.files[&imported].module;
            let Some((to_layer, to)) = place(layers, module) else {
                continue;
            };
            if to == from {
                continue;
            }
            if to_layer > from_layer {
                problems.push(format!(
                    "{} ({}, layer {}) imports {} ({}, layer {})",
                    file.path.display(),
                    from.join("::"),
                    layers[from_layer].name,
                    imported.display(),
                    to.join("::"),
                    layers[to_layer].name
                ));
            }
            unit_edges.insert((from.clone(), to.clone()));
        }
    }
    for (a, b) in &unit_edges {
        if a < b && unit_edges.contains(&(b.clone(), a.clone())) {
            problems.push(format!(
                "{} and {} import each other",
                a.join("::"),
                b.join("::")
            ));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_and_strings_are_not_code() {
        let code = blank_comments_and_strings(
            "use a::b; // crate::x\nlet s = \"crate::y\"; let r = r#\"super::z\"#; /* self::w */ let c = ':';",
        );
        assert!(code.contains("use a::b;"));
        for hidden in ["crate::x", "crate::y", "super::z", "self::w"] {
            assert!(!code.contains(hidden), "{code}");
        }
        assert_eq!(code.lines().count(), 2);
    }

    #[test]
    fn use_trees_expand_to_their_leaves() {
        let leaves = use_leaves(
            "use crate::a::{self, b::{c, d as e}, f};\npub(crate) use super::g::*;\nuse std::x;\npub use h::i;",
        );
        let printed: Vec<String> = leaves
            .iter()
            .map(|leaf| {
                let name = leaf.name.as_deref().unwrap_or("*");
                let public = if leaf.public { "pub " } else { "" };
                format!("{public}{} as {name}", leaf.path.join("::"))
            })
            .collect();
        assert_eq!(
            printed,
            [
                "crate::a as a",
                "crate::a::b::c as c",
                "crate::a::b::d as e",
                "crate::a::f as f",
                "pub super::g as *",
                "std::x as x",
                "pub h::i as i",
            ]
        );
    }

    #[test]
    fn a_path_through_a_re_export_imports_the_defining_file() {
        let repo = std::env::temp_dir().join(format!("tabwire-structure-{}", std::process::id()));
        std::fs::create_dir_all(repo.join("src")).unwrap();
        let write =
            |name: &str, text: &str| std::fs::write(repo.join("src").join(name), text).unwrap();
        write(
            "lib.rs",
            "mod errors;\nmod ids;\npub use errors::Failure;\npub use ids::Id as TabId;\n",
        );
        write(
            "errors.rs",
            "use crate::TabId;\npub struct Failure(TabId);\n",
        );
        write("ids.rs", "pub struct Id;\nfn f(_: crate::Failure) {}\n");
        let target = load_target(&repo, &repo.join("src/lib.rs"));
        let imports = |name: &str| target.imports(&target.files[&PathBuf::from("src").join(name)]);
        assert!(imports("lib.rs").is_empty(), "a re-export is no import");
        assert_eq!(
            imports("errors.rs"),
            BTreeSet::from([PathBuf::from("src/ids.rs")])
        );
        assert_eq!(
            imports("ids.rs"),
            BTreeSet::from([PathBuf::from("src/errors.rs")])
        );
        assert_eq!(
            target.loops().len(),
            1,
            "errors.rs and ids.rs import each other"
        );
        std::fs::remove_dir_all(&repo).unwrap();
    }

    #[test]
    fn inline_paths_are_rooted_ones_only() {
        let children = BTreeSet::from(["pointer".to_owned()]);
        let paths = inline_paths(
            "crate::text::cap(x); pointer::click(); other::thing(); a::crate::b",
            &children,
        );
        let printed: Vec<String> = paths.iter().map(|(_, p)| p.join("::")).collect();
        assert_eq!(printed, ["crate::text::cap", "pointer::click"]);
    }

    #[test]
    fn inline_modules_are_found_with_their_extent() {
        let code = "fn a() {}\nmod tests {\n    use super::*;\n    fn b() { {} }\n}\nmod child;\n";
        let found = inline_modules(code);
        assert_eq!(found.len(), 1);
        let InlineModule {
            start,
            end,
            name,
            test,
        } = &found[0];
        assert_eq!(name, "tests");
        assert!(!test);
        assert!(code[*start..*end].contains("use super::*"));
        assert!(!code[*end..].contains("fn b"));
        assert!(inline_modules("#[cfg(test)]\nmod tests { }")[0].test);
    }

    #[test]
    fn loops_are_found() {
        let graph = BTreeMap::from([
            (PathBuf::from("a"), BTreeSet::from([PathBuf::from("b")])),
            (PathBuf::from("b"), BTreeSet::from([PathBuf::from("a")])),
            (PathBuf::from("c"), BTreeSet::from([PathBuf::from("a")])),
        ]);
        let loops: Vec<_> = strongly_connected(&graph)
            .into_iter()
            .filter(|c| c.len() > 1)
            .collect();
        assert_eq!(loops, [vec![PathBuf::from("a"), PathBuf::from("b")]]);
    }

    #[test]
    fn layer_tables_are_read_bottom_first() {
        let doc = "## Layers\n\nText.\n\n| layer | modules |\n| --- | --- |\n| platform | `chrome`, `timer` |\n| ops | `ops::act` |\n\nAfter.";
        let layers = layers(doc, "## Layers");
        assert_eq!(layers.len(), 2);
        assert_eq!(layers[0].modules, [vec!["chrome"], vec!["timer"]]);
        assert_eq!(
            layers[1].modules,
            [vec!["ops".to_owned(), "act".to_owned()]]
        );
        assert_eq!(
            place(&layers, &["ops".into(), "act".into(), "pointer".into()])
                .unwrap()
                .0,
            1
        );
        assert!(place(&layers, &["popup".into()]).is_none());
    }
}
