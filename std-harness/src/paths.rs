//! One path, one role: before a command writes anything, an output that is
//! another of its outputs or one of its inputs is refused, naming both
//! options.
//!
//! Two paths are the same file when they name the same inode (a symbolic
//! link, a hard link, `dir/./file`), or, where the file does not exist yet,
//! when their absolute paths agree once `.`, `..` and the symbolic links of
//! the existing parent are resolved. A run directory ([`Role::RunDir`]) is
//! replaced whole, so any file inside it is also the output. Character
//! devices (`/dev/null`, a terminal) may take several outputs.

use std::path::{Component, Path, PathBuf};

/// What an output path is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// A file, written (or written through) on its own.
    File,
    /// A run directory, replaced whole with everything in it.
    RunDir,
}

/// A path a command reads or writes, with the option (or argument) that
/// named it, e.g. `("--out", path)` or `("POLICY", path)`.
pub type Named<'a> = (&'a str, &'a Path);

/// Refuses an output that is another output or an input of the same
/// command. Inputs given as `None` (an option not used) are skipped.
///
/// # Errors
/// One line naming both options and both paths.
pub fn check_distinct(
    outputs: &[(&str, &Path, Role)],
    inputs: &[(&str, Option<&Path>)],
) -> anyhow::Result<()> {
    let inputs: Vec<Named> = inputs
        .iter()
        .filter_map(|&(option, path)| path.map(|p| (option, p)))
        .collect();
    for (i, &(option, out, role)) in outputs.iter().enumerate() {
        let others = outputs[i + 1..].iter().map(|&(o, p, _)| (o, p));
        for (other, path) in others.chain(inputs.iter().copied()) {
            if is_device(out) && is_device(path) {
                continue;
            }
            if same_file(out, path) {
                anyhow::bail!(
                    "{option} {} and {other} {} are the same file: give the output a path of its own",
                    out.display(),
                    path.display()
                );
            }
            if role == Role::RunDir && inside(path, out) {
                anyhow::bail!(
                    "{other} {} lies in {option} {}, which is replaced whole: give the output a path of its own",
                    path.display(),
                    out.display()
                );
            }
        }
    }
    Ok(())
}

/// A character device (`/dev/null`, a terminal), through symbolic links.
fn is_device(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        std::fs::metadata(path).is_ok_and(|m| m.file_type().is_char_device())
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        false
    }
}

/// `(device, inode)` of an existing file, through symbolic links.
#[cfg(unix)]
fn identity(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

#[cfg(not(unix))]
fn identity(_path: &Path) -> Option<(u64, u64)> {
    None
}

/// Whether `a` and `b` name the same file.
fn same_file(a: &Path, b: &Path) -> bool {
    match (identity(a), identity(b)) {
        (Some(x), Some(y)) => x == y,
        _ => absolute(a) == absolute(b),
    }
}

/// Whether `path` lies (at any depth) in the directory `dir`.
fn inside(path: &Path, dir: &Path) -> bool {
    absolute(path)
        .ancestors()
        .skip(1)
        .any(|ancestor| same_file(ancestor, dir))
}

/// The canonical path of an existing file; else the lexically normalised
/// absolute path, with its parent canonicalised if that exists.
fn absolute(path: &Path) -> PathBuf {
    if let Ok(canonical) = std::fs::canonicalize(path) {
        return canonical;
    }
    let joined = std::env::current_dir().map_or_else(|_| path.to_path_buf(), |cwd| cwd.join(path));
    let mut normal = PathBuf::new();
    for component in joined.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                normal.pop();
            }
            other => normal.push(other),
        }
    }
    match (normal.parent(), normal.file_name()) {
        (Some(parent), Some(name)) => std::fs::canonicalize(parent)
            .map(|p| p.join(name))
            .unwrap_or(normal),
        _ => normal,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_file_by_any_name_is_refused_and_distinct_files_pass() {
        let dir = std::env::temp_dir().join(format!("microrl-paths-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("run")).unwrap();
        let a = dir.join("a");
        std::fs::write(&a, b"a").unwrap();
        let dotted = dir.join("run/../a");
        let new = dir.join("new");
        let new_dotted = dir.join("./run/../new");
        fn file(p: &Path) -> [(&'static str, &Path, Role); 1] {
            [("--out", p, Role::File)]
        }
        assert!(check_distinct(&file(&a), &[("IN", Some(dotted.as_path()))]).is_err());
        assert!(check_distinct(&file(&new), &[("IN", Some(new_dotted.as_path()))]).is_err());
        assert!(check_distinct(&file(&new), &[("IN", Some(a.as_path())), ("X", None)]).is_ok());
        let run = dir.join("run");
        let summary = run.join("summary.json");
        let err = check_distinct(
            &[("--out", &run, Role::RunDir)],
            &[("--config", Some(summary.as_path()))],
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("--config") && err.contains("--out"), "{err}");
        assert!(
            check_distinct(
                &[("--out", &run, Role::RunDir)],
                &[("--config", Some(a.as_path()))]
            )
            .is_ok()
        );
        let null = Path::new("/dev/null");
        assert!(
            check_distinct(
                &[("--out", null, Role::File), ("--x", null, Role::File)],
                &[]
            )
            .is_ok()
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
