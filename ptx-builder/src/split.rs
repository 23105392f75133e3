//! Splitting llc's one PTX module into one standalone module per entry.

use crate::Error;

/// The names of the `.entry` (kernel) functions in a PTX text, in order.
pub fn entry_names(ptx: &str) -> Vec<String> {
    ptx.lines()
        .filter_map(|l| l.trim_start().strip_prefix(".visible .entry "))
        .map(|rest| rest.split(['(', ' ']).next().unwrap_or("").to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Entry,
    Func,
}

/// If `line` begins a function definition or declaration, its kind and whether it is an
/// `.extern` declaration.
fn function_directive(line: &str) -> Option<(Kind, bool)> {
    let mut extern_ = false;
    for tok in line.split_whitespace() {
        match tok {
            ".visible" | ".weak" | ".common" => {}
            ".extern" => extern_ = true,
            ".entry" => return Some((Kind::Entry, extern_)),
            ".func" => return Some((Kind::Func, extern_)),
            _ => return None,
        }
    }
    None
}

/// The entry name on a `.entry NAME(` line.
fn entry_name(line: &str) -> Option<&str> {
    let rest = line.split(".entry").nth(1)?.trim_start();
    let name = rest.split(['(', ' ', '\t']).next()?;
    (!name.is_empty()).then_some(name)
}

fn shape(msg: impl Into<String>) -> Error {
    Error::PtxShape(msg.into())
}

/// Split llc's PTX into one standalone module per entry: `(entry name, module text)` in PTX
/// order.
///
/// llc writes a header (`.version`, `.target`, `.address_size`, file-scope inline asm such as
/// `.shared` arrays), then one chunk per function, each ending with a `}` line right after a
/// `// -- End function` line. The forward declarations of the `.func`s (and any module-scope
/// variables) sit inside the first chunk, before its definition: they move to the header. A
/// module is the header (less the module-scope `.shared` arrays it never names and the
/// declarations of `.func`s it never calls), one entry's chunk, the `.func` chunks the entry
/// calls (directly or through each other) and whatever follows the last chunk.
///
/// Why: the CUDA driver JIT-compiles a whole module at load time, so one module per kernel
/// lets a host that loads kernels lazily pay only for the kernels it uses (and a `.func` of
/// each of a few hundred kernels, in every module, had made each module the whole library's
/// size).
///
/// Text of any other shape is an error, not a panic.
pub fn split_modules(ptx: &str) -> Result<Vec<(String, String)>, Error> {
    let ptx = apply_launch_bounds(ptx)?;
    let lines: Vec<&str> = ptx.lines().collect();
    let closes: Vec<usize> = (1..lines.len())
        .filter(|&i| lines[i].trim_end() == "}" && lines[i - 1].contains("// -- End function"))
        .collect();
    let Some(&last_close) = closes.last() else {
        return Err(shape(
            "no function found (none ends with `// -- End function` and `}`)",
        ));
    };

    // The first chunk: its definition is the last function directive before the first body.
    let first_close = closes[0];
    let body = (0..first_close)
        .find(|&i| lines[i].trim() == "{")
        .ok_or_else(|| shape("the first function has no `{` body"))?;
    let def = (0..body)
        .rev()
        .find(|&i| matches!(function_directive(lines[i]), Some((_, false))))
        .ok_or_else(|| shape("the first chunk has no .entry or .func definition"))?;
    let mut header = Vec::new();
    let mut first_chunk = Vec::new();
    for &l in &lines[..def] {
        let t = l.trim_start();
        // The first function's own marker comments stay with it; everything else before its
        // definition (header, forward declarations, globals) is shared.
        if t.starts_with("// .globl") || t.starts_with("// @") {
            first_chunk.push(l);
        } else {
            header.push(l);
        }
    }
    for want in [".version", ".target"] {
        if !header.iter().any(|l| l.trim_start().starts_with(want)) {
            return Err(shape(format!("no `{want}` line before the first function")));
        }
    }
    first_chunk.extend_from_slice(&lines[def..=first_close]);

    let mut chunks: Vec<(Kind, Option<&str>, Vec<&str>)> = Vec::new();
    let mut start = 0;
    for (n, &close) in closes.iter().enumerate() {
        let chunk: Vec<&str> = if n == 0 {
            std::mem::take(&mut first_chunk)
        } else {
            lines[start..=close].to_vec()
        };
        start = close + 1;
        let mut defs = chunk.iter().filter_map(|l| match function_directive(l) {
            Some((k, false)) => Some((k, *l)),
            _ => None,
        });
        let (kind, line) = defs.next().ok_or_else(|| {
            shape(format!(
                "function chunk {n} (ending at line {}) has no .entry or .func definition",
                close + 1
            ))
        })?;
        if defs.next().is_some() {
            return Err(shape(format!(
                "function chunk {n} (ending at line {}) defines more than one function",
                close + 1
            )));
        }
        let name = match kind {
            Kind::Entry => Some(
                entry_name(line)
                    .ok_or_else(|| shape(format!("no entry name on `{}`", line.trim())))?,
            ),
            Kind::Func => None,
        };
        chunks.push((kind, name, chunk));
    }
    let trailer = &lines[last_close + 1..];
    if let Some(l) = trailer
        .iter()
        .find(|l| function_directive(l).is_some_and(|(_, ext)| !ext) || l.trim() == "{")
    {
        return Err(shape(format!(
            "a function after the last `// -- End function`: `{}`",
            l.trim()
        )));
    }

    // The `.func` chunks by name, and what each chunk calls.
    let funcs: Vec<(&str, &Vec<&str>)> = chunks
        .iter()
        .filter(|(k, _, _)| *k == Kind::Func)
        .map(|(_, _, c)| {
            let name = c
                .iter()
                .find(|l| function_directive(l) == Some((Kind::Func, false)))
                .and_then(|l| func_name(l))
                .ok_or_else(|| shape("a .func definition without a name"))?;
            Ok((name, c))
        })
        .collect::<Result<_, Error>>()?;
    let index: std::collections::HashMap<&str, usize> = funcs
        .iter()
        .enumerate()
        .map(|(i, (n, _))| (*n, i))
        .collect();
    let callees = |chunk: &[&str]| -> Vec<usize> {
        chunk
            .iter()
            .filter(|l| l.trim_start().starts_with("call"))
            .flat_map(|l| l.split([' ', '\t', ',', '(', ')', ';']))
            .filter_map(|t| index.get(t).copied())
            .collect()
    };
    let func_calls: Vec<Vec<usize>> = funcs.iter().map(|(_, c)| callees(c)).collect();
    let mut seen = std::collections::HashSet::new();
    let mut modules = Vec::new();
    for (_, name, chunk) in chunks.iter().filter(|(k, _, _)| *k == Kind::Entry) {
        let name = name.expect("entries have names");
        if !seen.insert(name) {
            return Err(shape(format!("entry `{name}` is defined twice")));
        }
        // The `.func`s this entry reaches, kept in the PTX's order.
        let mut reached = vec![false; funcs.len()];
        let mut todo = callees(chunk);
        while let Some(f) = todo.pop() {
            if !std::mem::replace(&mut reached[f], true) {
                todo.extend(&func_calls[f]);
            }
        }
        let own: Vec<&Vec<&str>> = funcs
            .iter()
            .zip(&reached)
            .filter(|(_, r)| **r)
            .map(|((_, c), _)| *c)
            .collect();
        // Module-scope `.shared` arrays only where this module uses them: the driver's JIT
        // gives every block of an entry all the module's `.shared` arrays, used or not (a 32
        // KiB array of the scans cost the reduce by key two of its five blocks per SM).
        let uses = |var: &str| {
            std::iter::once(chunk)
                .chain(own.iter().copied())
                .any(|part| part.iter().any(|l| mentions(l, var)))
        };
        // A `.func` declared and not defined does not assemble: declarations of the others go.
        let mut dropping = false;
        let mut kept = Vec::with_capacity(header.len());
        for l in header
            .iter()
            .filter(|l| shared_array_name(l).is_none_or(&uses))
        {
            let ends = l.trim_end().ends_with(';');
            if function_directive(l) == Some((Kind::Func, false)) {
                let keep = func_name(l).is_none_or(|f| index.get(f).is_none_or(|&i| reached[i]));
                dropping = !keep && !ends;
                kept.extend(keep.then_some(*l));
            } else if dropping {
                // Inside a dropped declaration, up to its `;`.
                dropping = !ends;
            } else {
                kept.push(*l);
            }
        }
        let mut text = String::new();
        for l in kept
            .iter()
            .chain(chunk.iter())
            .chain(own.iter().copied().flatten())
        {
            text.push_str(l);
            text.push('\n');
        }
        for l in trailer {
            text.push_str(l);
            text.push('\n');
        }
        modules.push((name.to_string(), text));
    }
    Ok(modules)
}

/// The name on a `.func` line: `.func NAME(`, `.func NAME`, or with a return value `.func
/// (.param .b32 func_retval0) NAME(`.
fn func_name(line: &str) -> Option<&str> {
    let rest = line.split(".func").nth(1)?.trim_start();
    let rest = match rest.strip_prefix('(') {
        Some(r) => r[r.find(')')? + 1..].trim_start(),
        None => rest,
    };
    let name = rest.split(['(', ' ', '\t']).next()?;
    (!name.is_empty()).then_some(name)
}

/// The name `NAME` of a module-scope array definition `.shared .align A .bN NAME[SIZE];`
/// (not of an `.extern` declaration).
fn shared_array_name(line: &str) -> Option<&str> {
    let t = line.trim();
    if !t.starts_with(".shared ") {
        return None;
    }
    let last = t.split_whitespace().last()?;
    let name = &last[..last.find('[')?];
    (!name.is_empty()).then_some(name)
}

/// Whether `line` mentions the identifier `name` (not as part of a longer one).
fn mentions(line: &str, name: &str) -> bool {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '$';
    line.match_indices(name).any(|(i, _)| {
        !line[..i].chars().next_back().is_some_and(ident)
            && !line[i + name.len()..].chars().next().is_some_and(ident)
    })
}

/// The marker `kernels::launch_bounds!` leaves in the PTX (file-scope inline asm):
/// `// ptx-builder launch-bounds ENTRY THREADS MIN_BLOCKS`.
const LAUNCH_BOUNDS: &str = "// ptx-builder launch-bounds ";

/// Give every entry named by a launch-bounds marker the directives CUDA C++'s
/// `__launch_bounds__(THREADS, MIN_BLOCKS)` produces: `.maxntid THREADS, 1, 1` and
/// `.minnctapersm MIN_BLOCKS`, between its parameter list and its body, so that ptxas (and the
/// driver's JIT) keep its registers low enough for MIN_BLOCKS blocks per SM. rustc has no
/// attribute for them. Text that already has them (prebuilt PTX) is left as it is; a marker
/// naming no entry is an error.
pub fn apply_launch_bounds(ptx: &str) -> Result<String, Error> {
    let mut bounds = Vec::new();
    for l in ptx.lines() {
        if let Some(rest) = l.trim_start().strip_prefix(LAUNCH_BOUNDS) {
            let f: Vec<&str> = rest.split_whitespace().collect();
            let ok = f.len() == 3 && f[1].parse::<u32>().is_ok() && f[2].parse::<u32>().is_ok();
            if !ok {
                return Err(shape(format!(
                    "malformed launch-bounds marker `{}`",
                    l.trim()
                )));
            }
            bounds.push((f[0].to_string(), f[1].to_string(), f[2].to_string()));
        }
    }
    if bounds.is_empty() {
        return Ok(ptx.to_string());
    }
    let lines: Vec<&str> = ptx.lines().collect();
    let mut out = String::with_capacity(ptx.len() + 64 * bounds.len());
    let mut found = vec![false; bounds.len()];
    let mut pending: Option<usize> = None;
    for (i, l) in lines.iter().enumerate() {
        out.push_str(l);
        out.push('\n');
        if function_directive(l).is_some_and(|(k, ext)| k == Kind::Entry && !ext) {
            let name = entry_name(l).unwrap_or("");
            pending = bounds.iter().position(|b| b.0 == name);
        }
        if let Some(b) = pending
            && l.trim_start().starts_with(')')
        {
            pending = None;
            found[b] = true;
            let already = lines
                .get(i + 1)
                .is_some_and(|n| n.trim_start().starts_with(".maxntid"));
            if !already {
                out.push_str(&format!(
                    ".maxntid {}, 1, 1\n.minnctapersm {}\n",
                    bounds[b].1, bounds[b].2
                ));
            }
        }
    }
    if let Some(b) = found.iter().position(|f| !f) {
        return Err(shape(format!(
            "a launch-bounds marker names `{}`, which is not an entry with a parameter list",
            bounds[b].0
        )));
    }
    Ok(out)
}

/// The module text a binary embeds: comments and blank lines dropped, and llc's block labels
/// (`$L__BB<function>_<block>`, numbered by the function's place in the whole module)
/// renumbered by first use in this module. The program is unchanged; what changes is that two
/// entries whose code is the same (an `i32` and a `u32` sum) give the same text up to their
/// names, so [`write_embed_index`](crate::write_embed_index) embeds it once, and the text
/// compresses better.
pub fn compact_module(text: &str) -> String {
    let mut out = String::with_capacity(text.len() / 2);
    let mut functions: Vec<String> = Vec::new();
    for line in text.lines() {
        // PTX has no string literal that holds `//` (the only strings are `.pragma` names).
        let code = line.split("//").next().unwrap_or("").trim();
        if code.is_empty() {
            continue;
        }
        let code = one_space(code);
        let mut rest = code.as_str();
        while let Some(i) = rest.find("$L__BB") {
            let (before, after) = rest.split_at(i + "$L__BB".len());
            out.push_str(before);
            let digits = after.bytes().take_while(u8::is_ascii_digit).count();
            if digits > 0 && after[digits..].starts_with('_') {
                let f = &after[..digits];
                let n = functions.iter().position(|g| g == f).unwrap_or_else(|| {
                    functions.push(f.to_string());
                    functions.len() - 1
                });
                out.push_str(&n.to_string());
                rest = &after[digits..];
            } else {
                rest = after;
            }
        }
        out.push_str(rest);
        out.push('\n');
    }
    short_names(&out)
}

/// `line` with each run of spaces and tabs outside string literals made one space: what PTX's
/// tokens need (`ptxas` makes byte-identical cubins), less for every module to carry.
fn one_space(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let (mut quoted, mut space) = (false, false);
    for c in line.chars() {
        if c == '"' {
            quoted = !quoted;
        }
        if !quoted && (c == ' ' || c == '\t') {
            space = true;
            continue;
        }
        if space {
            out.push(' ');
            space = false;
        }
        out.push(c);
    }
    out
}

/// `text` with its long private names made short: Rust's mangled symbols (`_R...`: the
/// module's `.func`s and statics, never an entry, whose names are the kernels') become `_f0`,
/// `_f1`, ... by first use, and parameters (`<function>_param_<i>`, scoped to their function)
/// `_p<i>`. Every module repeats them; the driver and `ptxas` see the same program.
fn short_names(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut symbols: Vec<&str> = Vec::new();
    let ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || b == b'$';
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if !ident(bytes[i]) {
            let j = i + bytes[i..].iter().take_while(|&&b| !ident(b)).count();
            out.push_str(&text[i..j]);
            i = j;
            continue;
        }
        let j = i + bytes[i..].iter().take_while(|&&b| ident(b)).count();
        let word = &text[i..j];
        // A register (`%rd1`) or a number is not a name: only words after a non-`%`.
        let named = i == 0 || bytes[i - 1] != b'%';
        if let Some((_, n)) = word
            .rsplit_once("_param_")
            .filter(|(f, n)| named && !f.is_empty() && !n.is_empty())
            .filter(|(_, n)| n.bytes().all(|b| b.is_ascii_digit()))
        {
            out.push_str("_p");
            out.push_str(n);
        } else if named && word.starts_with("_R") {
            let k = symbols.iter().position(|s| *s == word).unwrap_or_else(|| {
                symbols.push(word);
                symbols.len() - 1
            });
            out.push_str("_f");
            out.push_str(&k.to_string());
        } else {
            out.push_str(word);
        }
        i = j;
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// llc's shape: a .func called by both entries, defined between them; its forward
    /// declaration inside the first chunk.
    pub(crate) const PTX: &str = "//
// Generated by LLVM NVPTX Back-End
//

.version 7.0
.target sm_80
.address_size 64

                                        // Start of file scope inline assembly
.shared .align 16 .b8 SCRATCH[512];
                                        // End of file scope inline assembly
\t// .globl\tfirst                   // -- Begin function first
.func panic_fmt
()
.noreturn;
                                        // @first
.visible .entry first(
\t.param .u64 .ptr .align 1 first_param_0
)
{
\t.reg .b32 \t%r<2>;
\t.reg .b64 \t%rd<2>;

// %bb.0:
\tcvta.shared.u64 %rd1, SCRATCH;
\t{ // callseq 0, 0
\tcall.uni panic_fmt, ();
\t} // callseq 0
\tret;
                                        // -- End function
}
.func panic_fmt()
.noreturn                               // -- Begin function panic_fmt
                                        // @panic_fmt
{


// %bb.0:
\ttrap; exit;
                                        // -- End function
}
\t// .globl\tsecond                  // -- Begin function second
.visible .entry second(
\t.param .u32 second_param_0
)                                       // @second
{
\tret;
                                        // -- End function
}
";

    #[test]
    fn splits_into_standalone_modules() {
        assert_eq!(entry_names(PTX), ["first", "second"]);
        let mods = split_modules(PTX).unwrap();
        let names: Vec<&str> = mods.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["first", "second"]);
        for (name, text) in &mods {
            assert_eq!(entry_names(text), [name.as_str()], "{text}");
            assert!(text.contains(".target sm_80"));
            assert_eq!(text.matches(".version").count(), 1);
            assert!(text.ends_with("}\n"));
            let entry = text.find(".visible .entry").unwrap();
            if name == "first" {
                // Header, shared arrays and the forward declaration come before the entry.
                let decl = text.find(".func panic_fmt\n()\n.noreturn;").expect(text);
                assert!(text.find(".target sm_80").unwrap() < decl);
                assert!(text.find("SCRATCH[512]").unwrap() < decl);
                assert!(decl < entry, "{text}");
                // The .func it calls comes with it, after the entry.
                assert_eq!(text.matches(".func panic_fmt()").count(), 1, "{text}");
                assert!(entry < text.find(".func panic_fmt()").unwrap());
            } else {
                // A .func the entry never calls stays out, declaration and all.
                assert!(!text.contains("panic_fmt"), "{text}");
            }
        }
        let (_, first) = &mods[0];
        assert!(first.contains("// .globl\tfirst"));
        assert!(!first.contains("second"));
        let (_, second) = &mods[1];
        assert!(!second.contains("first"), "{second}");
        // A module-scope array the module never names stays out of it.
        assert!(!second.contains("SCRATCH"), "{second}");
        assert!(!second.contains("// @first"));
    }

    #[test]
    fn trailing_text_goes_to_every_module() {
        let ptx = format!("{PTX}\t// trailing note\n");
        for (_, text) in split_modules(&ptx).unwrap() {
            assert!(text.ends_with("\t// trailing note\n"));
        }
    }

    #[test]
    fn other_shapes_are_errors() {
        let bad = [
            ("", "no function"),
            ("hello world\n", "no function"),
            (&PTX.replace(".target sm_80\n", ""), "no `.target` line"),
            (&PTX.replace(".version 7.0\n", ""), "no `.version` line"),
            (
                &format!("{PTX}.visible .entry third(\n)\n{{\n\tret;\n}}\n"),
                "after the last",
            ),
            (
                // Two functions in one chunk: the marker between them is missing.
                &PTX.replacen(
                    "\tret;\n                                        // -- End function\n}\n.func",
                    "\tret;\n}\n.func",
                    1,
                ),
                "more than one function",
            ),
            (
                &PTX.replace(".visible .entry second(", ".visible .entry first("),
                "defined twice",
            ),
        ];
        for (text, want) in bad {
            match split_modules(text) {
                Err(Error::PtxShape(m)) => assert!(m.contains(want), "{m} (wanted {want})"),
                other => panic!("expected a shape error ({want}), got {other:?}"),
            }
        }
    }

    #[test]
    fn shared_arrays_by_name() {
        assert_eq!(
            shared_array_name(".shared .align 16 .b8 RBK_TILE[32768];"),
            Some("RBK_TILE")
        );
        assert_eq!(
            shared_array_name(".extern .shared .align 16 .b8 __dynamic_smem[];"),
            None
        );
        assert_eq!(shared_array_name("\tld.shared.u32 %r1, [%rd1];"), None);
        assert!(mentions("\tcvta.shared.u64 %rd3, RBK_TILE;", "RBK_TILE"));
        assert!(!mentions(
            "\tcvta.shared.u64 %rd3, RBK_TILE_PREFIX;",
            "RBK_TILE"
        ));
        assert!(!mentions(
            "\tcvta.shared.u64 %rd3, SCAN_RBK_TILE;",
            "RBK_TILE"
        ));
    }

    #[test]
    fn finds_entries() {
        let ptx =
            ".visible .entry reduce_sum_f32(\n.param .u64 a\n)\n.visible .entry k2()\n.func f()";
        assert_eq!(entry_names(ptx), vec!["reduce_sum_f32", "k2"]);
    }

    #[test]
    fn launch_bounds_markers_become_entry_directives() {
        let marked = PTX.replace(
            "// End of file scope inline assembly",
            "// ptx-builder launch-bounds first 256 4\n// End of file scope inline assembly",
        );
        let out = apply_launch_bounds(&marked).unwrap();
        assert!(
            out.contains("first_param_0\n)\n.maxntid 256, 1, 1\n.minnctapersm 4\n{"),
            "{out}"
        );
        assert_eq!(out.matches(".maxntid").count(), 1, "only the named entry");
        // Idempotent (prebuilt PTX already has them), and the split modules keep them.
        assert_eq!(apply_launch_bounds(&out).unwrap(), out);
        let first = &split_modules(&marked).unwrap()[0].1;
        assert!(first.contains(".minnctapersm 4"));
        // A marker naming no entry, or a malformed one, is an error.
        let bad = marked.replace("launch-bounds first", "launch-bounds nothing");
        assert!(apply_launch_bounds(&bad).is_err());
        let bad = marked.replace("first 256 4", "first 256");
        assert!(apply_launch_bounds(&bad).is_err());
        assert_eq!(apply_launch_bounds(PTX).unwrap(), PTX);
    }

    #[test]
    fn compact_module_drops_comments_and_renumbers_labels() {
        let text = "// header\n.version 8.0\n\n.visible .entry k(\n)\n{\n\t@%p1 bra \t$L__BB7_2;   // loop\n// %bb.1:\n$L__BB7_2:\n\tbra.uni $L__BB9_1;\n\t.pragma \"nounroll\";\n$L__BB9_1:\n}\n";
        let want = ".version 8.0\n.visible .entry k(\n)\n{\n@%p1 bra $L__BB0_2;\n$L__BB0_2:\nbra.uni $L__BB1_1;\n.pragma \"nounroll\";\n$L__BB1_1:\n}\n";
        assert_eq!(compact_module(text), want);
    }

    #[test]
    fn one_space_between_tokens_outside_strings() {
        assert_eq!(
            one_space("ld.param.b64 \t%rd1,  [_p0];"),
            "ld.param.b64 %rd1, [_p0];"
        );
        assert_eq!(one_space(".pragma \"a  b\";"), ".pragma \"a  b\";");
    }

    #[test]
    fn compact_module_shortens_private_names() {
        let text = ".func _RNvCs1_4core9panic_fmt\n()\n;\n.visible .entry k(\n\t.param .u64 k_param_0,\n\t.param .u32 k_param_1\n)\n{\n\tld.param.b64 \t%rd1, [k_param_0];\n\tld.param.b32 \t%r_param_2, [k_param_1];\n\tcall.uni _RNvCs1_4core9panic_fmt, ();\n\tcall.uni _RNvCs2_4core5other, ();\n}\n";
        let want = ".func _f0\n()\n;\n.visible .entry k(\n.param .u64 _p0,\n.param .u32 _p1\n)\n{\nld.param.b64 %rd1, [_p0];\nld.param.b32 %r_param_2, [_p1];\ncall.uni _f0, ();\ncall.uni _f1, ();\n}\n";
        assert_eq!(compact_module(text), want);
    }
}
