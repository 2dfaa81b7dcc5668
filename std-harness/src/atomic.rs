//! Crash-safe outputs: every file the harness writes replaces the old one
//! whole, and a run directory is replaced as a unit.
//!
//! Writing in place (`std::fs::write`) truncates the old file first, so a
//! process killed mid-write, or a write cut short by a full disk or a file-size
//! limit, leaves a 0-byte or truncated policy where a good one was; and writing
//! a run's four files one after the other leaves a directory that mixes two
//! runs. Here:
//!
//! - [`write_file`] writes a sibling temporary file (`.NAME.tmp-PID-N`, same
//!   directory, so same filesystem), flushes it to disk (`fsync`), renames it
//!   over the target and flushes the directory. `rename(2)` replaces the
//!   directory entry atomically: a reader, or the file system after a crash,
//!   sees the old file or the new one, never a partial one. On any error the
//!   temporary file is removed and the target is untouched.
//! - [`write_run_dir`] writes all of a run's files into a fresh sibling
//!   directory `DIR.tmp-PID-N`, flushes each file and that directory, then
//!   swaps it with `DIR` in one `renameat2(RENAME_EXCHANGE)` (Linux;
//!   `renameatx_np(RENAME_SWAP)` on macOS), flushes the parent and deletes the
//!   old run, now under the temporary name. Crash windows:
//!   1. while the new files are written: `DIR` is the old run, untouched; a
//!      partial `DIR.tmp-PID-N` is left beside it;
//!   2. the exchange is one system call: `DIR` is the old run before it and
//!      the new run after it (each complete, since both were flushed before);
//!   3. after the exchange, while the old run is deleted: `DIR` is the new run;
//!      what is left of the old one sits under `DIR.tmp-PID-N`.
//!
//!   Leftover `DIR.tmp-*`/`DIR.old-*` siblings of a process that no longer
//!   runs are removed by the next write of `DIR` (on Linux, where `/proc`
//!   tells which processes run). Where the exchange is unavailable (another
//!   OS, or a filesystem that refuses it) the fallback is two renames — `DIR`
//!   aside to `DIR.old-PID-N`, the new one into place — and between those two
//!   system calls `DIR` does not exist (both complete runs are on disk under
//!   the two sibling names, and the old one is moved back if the second rename
//!   fails); a reader never sees a mixed or partial directory there either.
//!
//! A run directory is only ever replaced when it holds nothing but a run's
//! files, so `--out` pointed at a directory of other work is refused rather
//! than deleted.
//!
//! Nothing that is not a regular file is ever replaced: an output path that
//! is (or links to) a character device or a FIFO — a terminal, `/dev/null`,
//! `/dev/stdout`, a named pipe — is written through (its errors, such as
//! `/dev/full`'s "No space left on device", reported naming the path); a
//! socket or a block device is refused. The temporary files of a write
//! killed midway (`.NAME.tmp-PID-N`) are removed by the next successful
//! write of `NAME`, as a run directory's staging leftovers are.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{Context, bail};

/// A name no other writer in this process or any other live process uses.
fn unique_suffix() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!(
        "{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// `path`, or the file it names if it is a symbolic link (so the link keeps
/// pointing at the new contents instead of being replaced by a file).
fn resolve(path: &Path) -> PathBuf {
    match fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => {
            fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
        }
        _ => path.to_path_buf(),
    }
}

/// The directory `path` is in (`.` for a bare name) and its last component.
fn split(path: &Path) -> anyhow::Result<(PathBuf, String)> {
    let name = path
        .file_name()
        .with_context(|| format!("{}: not a file or directory name", path.display()))?
        .to_string_lossy()
        .into_owned();
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    Ok((parent, name))
}

/// Flushes a directory's entries (the result of a rename or create) to disk.
fn sync_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        match File::open(dir)?.sync_all() {
            // Some filesystems cannot fsync a directory; the rename is done.
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::InvalidInput | io::ErrorKind::Unsupported
                ) =>
            {
                Ok(())
            }
            other => other,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        Ok(())
    }
}

/// Creates `path` (which must not exist), writes `bytes` and flushes them to disk.
fn create_synced(path: &Path, bytes: &[u8]) -> io::Result<File> {
    let mut file = OpenOptions::new().write(true).create_new(true).open(path)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    Ok(file)
}

/// Replaces the file at `path` with `bytes` atomically: the old file, or none,
/// until the new one is complete on disk (see the module documentation).
///
/// A `path` that is (or links to) something other than a regular file is
/// never replaced: a character device or a FIFO (a terminal, `/dev/null`,
/// `/dev/stdout` on a pipe, a named pipe) is written through, as `cat >`
/// would; anything else (a socket, a block device) is refused. After a
/// successful replacement, temporary siblings `.NAME.tmp-PID-N` that a
/// killed write of the same file left behind are removed (see
/// [`remove_stale_siblings`]).
///
/// # Errors
/// Any I/O error (the message names `path`); the old file is then untouched
/// and no temporary file is left.
pub fn write_file(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    match fs::metadata(path) {
        Ok(m) if m.is_file() || m.is_dir() => {}
        Ok(m) => return write_special(path, &m.file_type(), bytes),
        // Missing (or unreadable: the write below says why).
        Err(_) => {}
    }
    let target = resolve(path);
    let (dir, name) = split(&target)?;
    let tmp = dir.join(format!(".{name}.tmp-{}", unique_suffix()));
    let result = (|| -> io::Result<()> {
        let file = create_synced(&tmp, bytes)?;
        if let Ok(old) = fs::metadata(&target)
            && old.is_file()
        {
            file.set_permissions(old.permissions())?;
        }
        drop(file);
        fs::rename(&tmp, &target)?;
        sync_dir(&dir)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result.with_context(|| format!("writing {}", path.display()))?;
    remove_stale_siblings(&dir, &format!(".{name}"));
    Ok(())
}

/// Writes `bytes` to the existing non-regular file `path` of type `kind`:
/// through it for a character device or FIFO (opened for writing without
/// truncation or replacement; a FIFO's open waits for a reader), refused for
/// anything else.
fn write_special(path: &Path, kind: &fs::FileType, bytes: &[u8]) -> anyhow::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_char_device() || kind.is_fifo() {
            let mut file = OpenOptions::new()
                .write(true)
                .open(path)
                .with_context(|| format!("writing {}", path.display()))?;
            return file
                .write_all(bytes)
                .and_then(|()| file.flush())
                .with_context(|| format!("writing {}", path.display()));
        }
        let what = if kind.is_socket() {
            "a socket"
        } else if kind.is_block_device() {
            "a block device"
        } else {
            "not a file or directory"
        };
        bail!(
            "{} is {what}, not a regular file: refusing to write or replace it",
            path.display()
        )
    }
    #[cfg(not(unix))]
    {
        let _ = (kind, bytes);
        bail!(
            "{} is not a regular file: refusing to write or replace it",
            path.display()
        )
    }
}

/// Checks that `dir` can take a run of the files `names`: it does not exist,
/// or it is a directory holding nothing but such files (a previous run).
/// `train` checks this before training, and [`write_run_dir`] again before
/// replacing.
///
/// # Errors
/// `dir` is `.`, `..` or `/`, exists but is not a directory, holds anything
/// else, or cannot be read.
pub fn check_run_dir(dir: &Path, names: &[&str]) -> anyhow::Result<()> {
    let dir = resolve(dir);
    split(&dir).map_err(|_| {
        anyhow::anyhow!(
            "{}: name the run directory itself (not `.`, `..` or `/`)",
            dir.display()
        )
    })?;
    match fs::symlink_metadata(&dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => bail!("{} exists and is not a directory", dir.display()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e).with_context(|| format!("reading {}", dir.display())),
    }
    let entries = fs::read_dir(&dir).with_context(|| format!("reading {}", dir.display()))?;
    for entry in entries {
        let entry = entry.with_context(|| format!("reading {}", dir.display()))?;
        let file_name = entry.file_name();
        if !names.iter().any(|n| file_name == *n) {
            bail!(
                "{} holds `{}`, which is not one of a run's files ({}): refusing to replace it; \
                 choose another --out",
                dir.display(),
                file_name.to_string_lossy(),
                names.join(", ")
            );
        }
    }
    Ok(())
}

/// Writes `files` (name, contents) as the directory `dir`, replacing a
/// previous run there as one unit: `dir` is the old run or the new one, never
/// a mix or a partial copy (see the module documentation for the crash
/// windows). The parent of `dir` is created if missing.
///
/// # Errors
/// What [`check_run_dir`] refuses (`dir` is not replaced then), or an I/O
/// error naming the file; on error `dir` is untouched and the temporary
/// directory removed.
pub fn write_run_dir(dir: &Path, files: &[(&str, &[u8])]) -> anyhow::Result<()> {
    let names: Vec<&str> = files.iter().map(|(n, _)| *n).collect();
    check_run_dir(dir, &names)?;
    let dir = resolve(dir);
    let (parent, name) = split(&dir)?;
    fs::create_dir_all(&parent).with_context(|| format!("creating {}", parent.display()))?;
    let exists = dir.is_dir();
    remove_stale_siblings(&parent, &name);
    for companion in COMPANIONS {
        remove_stale_siblings(&parent, &format!("{name}{companion}"));
    }

    let suffix = unique_suffix();
    let staging = parent.join(format!("{name}.tmp-{suffix}"));
    let written = (|| -> anyhow::Result<()> {
        fs::create_dir(&staging).with_context(|| format!("creating {}", staging.display()))?;
        for (file_name, bytes) in files {
            create_synced(&staging.join(file_name), bytes)
                .with_context(|| format!("writing {}", dir.join(file_name).display()))?;
        }
        sync_dir(&staging).with_context(|| format!("writing {}", dir.display()))
    })();
    if let Err(e) = written {
        let _ = fs::remove_dir_all(&staging);
        return Err(e);
    }

    let old = if exists {
        match exchange(&staging, &dir) {
            // The old run is now under the staging name.
            Ok(true) => Ok(Some(staging.clone())),
            Ok(false) => {
                replace_by_two_renames(&staging, &dir, &parent.join(format!("{name}.old-{suffix}")))
                    .map(Some)
            }
            Err(e) => Err(e),
        }
    } else {
        fs::rename(&staging, &dir).map(|()| None)
    };
    let old = match old {
        Ok(old) => old,
        Err(e) => {
            // `dir` is untouched; the new run is still in `staging`.
            let _ = fs::remove_dir_all(&staging);
            return Err(e).with_context(|| format!("replacing {}", dir.display()));
        }
    };
    sync_dir(&parent).with_context(|| format!("writing {}", dir.display()))?;
    if let Some(old) = old {
        // A failure here leaves the old run for the next run's clean-up;
        // the new run is in place.
        let _ = fs::remove_dir_all(old);
    }
    Ok(())
}

/// Removes the run directory `dir` as one unit (a run's checkpoint once the
/// run is complete): renamed aside in one system call, then deleted, so a
/// crash leaves the whole directory or none of it — never a checkpoint with
/// some of its files — plus at most a stale sibling the next write removes.
/// A missing `dir` is not an error.
///
/// # Errors
/// An I/O error naming `dir`.
pub fn remove_run_dir(dir: &Path) -> anyhow::Result<()> {
    let dir = resolve(dir);
    let (parent, name) = split(&dir)?;
    let aside = parent.join(format!("{name}.old-{}", unique_suffix()));
    match fs::rename(&dir, &aside) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e).with_context(|| format!("removing {}", dir.display())),
    }
    sync_dir(&parent).with_context(|| format!("removing {}", dir.display()))?;
    fs::remove_dir_all(&aside).with_context(|| format!("removing {}", dir.display()))
}

/// Swaps two directory entries in one system call. `Ok(false)`: this system
/// or filesystem cannot (the caller falls back to two renames).
fn exchange(a: &Path, b: &Path) -> io::Result<bool> {
    #[cfg(any(target_os = "linux", target_os = "android", target_vendor = "apple"))]
    {
        use rustix::fs::{CWD, RenameFlags, renameat_with};
        use rustix::io::Errno;
        match renameat_with(CWD, a, CWD, b, RenameFlags::EXCHANGE) {
            Ok(()) => Ok(true),
            // ENOTSUP and EOPNOTSUPP are one value on Linux, two on macOS.
            Err(e)
                if [Errno::INVAL, Errno::NOSYS, Errno::NOTSUP, Errno::OPNOTSUPP].contains(&e) =>
            {
                Ok(false)
            }
            Err(e) => Err(e.into()),
        }
    }
    #[cfg(not(any(target_os = "linux", target_os = "android", target_vendor = "apple")))]
    {
        let _ = (a, b);
        Ok(false)
    }
}

/// The fallback swap: `dir` aside to `aside`, `staging` into place; returns
/// where the old run is. Between the two renames `dir` does not exist; if the
/// second fails, the old run is moved back.
fn replace_by_two_renames(staging: &Path, dir: &Path, aside: &Path) -> io::Result<PathBuf> {
    fs::rename(dir, aside)?;
    if let Err(e) = fs::rename(staging, dir) {
        let _ = fs::rename(aside, dir);
        return Err(e);
    }
    Ok(aside.to_path_buf())
}

/// The directories written beside a run directory `DIR` as `DIR<suffix>`
/// with [`write_run_dir`]: `train --checkpoint-every`'s `DIR.checkpoint/`.
/// Their leftover staging directories are removed when `DIR` is written
/// (a run resumed and completed writes no further checkpoint, so nothing
/// else would remove them).
const COMPANIONS: [&str; 1] = [".checkpoint"];

/// Removes `PREFIX.tmp-PID-N` and `PREFIX.old-PID-N` siblings (files or
/// directories) left by processes that no longer run: a write or a run
/// killed while writing its outputs. `PREFIX` is a run directory's name, or
/// `.NAME` for the temporary files of [`write_file`]. Only entries of
/// exactly that pattern whose process is gone are touched, and only where
/// `/proc` shows which processes run; elsewhere they stay for the user.
fn remove_stale_siblings(parent: &Path, prefix: &str) {
    let proc = Path::new("/proc");
    if !proc.join("self").exists() {
        return;
    }
    let Ok(entries) = fs::read_dir(parent) else {
        return;
    };
    let me = std::process::id();
    for entry in entries.flatten() {
        let file_name = entry.file_name();
        let Some(rest) = file_name
            .to_str()
            .and_then(|n| n.strip_prefix(prefix))
            .and_then(|r| r.strip_prefix(".tmp-").or_else(|| r.strip_prefix(".old-")))
        else {
            continue;
        };
        let Some((pid, n)) = rest.split_once('-') else {
            continue;
        };
        let (Ok(pid), true) = (
            pid.parse::<u32>(),
            !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()),
        ) else {
            continue;
        };
        if pid != me && !proc.join(pid.to_string()).exists() {
            let path = entry.path();
            match fs::symlink_metadata(&path) {
                Ok(m) if m.is_dir() => {
                    let _ = fs::remove_dir_all(&path);
                }
                Ok(_) => {
                    let _ = fs::remove_file(&path);
                }
                Err(_) => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("microrl-atomic-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_run_dir_is_removed_whole_and_a_missing_one_is_fine() {
        let parent = temp("remove");
        let dir = parent.join("run.checkpoint");
        write_run_dir(&dir, &[("state.mrlc", b"s"), ("progress.json", b"{}")]).unwrap();
        remove_run_dir(&dir).unwrap();
        assert!(listing(&parent).is_empty(), "{:?}", listing(&parent));
        remove_run_dir(&dir).unwrap();
        fs::remove_dir_all(&parent).unwrap();
    }

    fn listing(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn write_file_replaces_whole_and_leaves_no_temporary() {
        let dir = temp("file");
        let path = dir.join("p.bin");
        write_file(&path, b"old").unwrap();
        write_file(&path, b"new contents").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"new contents");
        assert_eq!(listing(&dir), ["p.bin"]);
        // A failure (the target is a directory) keeps nothing half-written.
        let sub = dir.join("sub");
        fs::create_dir(&sub).unwrap();
        fs::write(sub.join("x"), b"x").unwrap();
        let err = write_file(&sub, b"data").unwrap_err();
        assert!(format!("{err:#}").contains("sub"), "{err:#}");
        assert_eq!(listing(&dir), ["p.bin", "sub"]);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn run_dir_is_replaced_as_a_unit() {
        let dir = temp("rundir");
        let run = dir.join("run");
        write_run_dir(&run, &[("a", b"1"), ("b", b"2")]).unwrap();
        assert_eq!(listing(&run), ["a", "b"]);
        write_run_dir(&run, &[("a", b"3"), ("b", b"4")]).unwrap();
        assert_eq!(fs::read(run.join("a")).unwrap(), b"3");
        assert_eq!(fs::read(run.join("b")).unwrap(), b"4");
        // Nothing left beside it.
        assert_eq!(listing(&dir), ["run"]);
        // A directory with other files in it is not a run: refused, untouched.
        fs::write(run.join("notes.txt"), b"mine").unwrap();
        let err = write_run_dir(&run, &[("a", b"5"), ("b", b"6")]).unwrap_err();
        assert!(format!("{err:#}").contains("notes.txt"), "{err:#}");
        assert_eq!(fs::read(run.join("a")).unwrap(), b"3");
        assert_eq!(listing(&dir), ["run"]);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn stale_staging_of_a_dead_process_is_removed() {
        let dir = temp("stale");
        let run = dir.join("run");
        // u32::MAX is above any pid_max: that process is not running.
        let dead = dir.join(format!("run.tmp-{}-0", u32::MAX));
        fs::create_dir(&dead).unwrap();
        fs::write(dead.join("a"), b"").unwrap();
        let unrelated = dir.join("run.tmp-notes");
        fs::create_dir(&unrelated).unwrap();
        write_run_dir(&run, &[("a", b"1")]).unwrap();
        if Path::new("/proc/self").exists() {
            assert_eq!(listing(&dir), ["run", "run.tmp-notes"]);
        }
        fs::remove_dir_all(&dir).unwrap();
    }
}
