//! The machinery of `gapscope record`: run any program with gapscope's
//! CUDA injection library (`collectors/inject`), so that every one of its
//! processes that starts CUDA records itself through CUPTI, then merge the
//! per-process captures into one trace.
//!
//! What [`Recording::prepare`] sets up (docs/cupti.md, "Recording any
//! program"):
//! - the injection library ([`injection_library`]):
//!   `$GAPSCOPE_INJECT_LIB`, else `libgapscope_inject.so` next to the
//!   running executable;
//! - exactly one libcupti ([`find_cupti`]);
//! - a fresh temporary directory holding `lib/libcupti.so` (and
//!   `libcupti.so.<major>`), links to that file put first on
//!   `LD_LIBRARY_PATH` so every bare-name load in the program resolves to
//!   it, and `captures/`, the `GAPSCOPE_CAPTURE_DIR` of the program;
//! - `CUDA_INJECTION64_PATH` and `NVTX_INJECTION64_PATH` (unless NVTX is
//!   off) naming the injection library, replacing any inherited value
//!   (said in [`Recording::notes`]).
//!
//! [`Recording::run`] runs the program ([`child`]: signals are passed on);
//! [`Recording::captures`] and [`merge_captures`] collect what it wrote.

mod child;
mod cupti_lib;
mod merge;

pub use child::{exit_code, run_child};
pub use cupti_lib::{find_cupti, Cupti};
pub use merge::{merge_captures, scan_captures, Counts, Found, Merged};

use std::ffi::{OsStr, OsString};
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::time::{Duration, Instant};

/// A recording that cannot be set up or collected: one line saying what is
/// wrong and what to do.
#[derive(thiserror::Error, Debug)]
#[error("{0}")]
pub struct RecordError(pub String);

/// What to record besides GPU work.
#[derive(Clone, Copy, Debug)]
pub struct RecordOptions {
    /// NVTX ranges (off: `NVTX_INJECTION64_PATH` is removed from the
    /// program's environment, so no other NVTX tool takes CUPTI).
    pub nvtx: bool,
    /// Runtime and driver API calls (off: less overhead, but kernels are
    /// not linked to the calls that launched them).
    pub api_calls: bool,
}

impl Default for RecordOptions {
    fn default() -> Self {
        RecordOptions {
            nvtx: true,
            api_calls: true,
        }
    }
}

/// A program set up to record itself.
pub struct Recording {
    /// The libcupti it loads.
    pub cupti: Cupti,
    /// What was changed in the program's environment that it had set
    /// (`replacing CUDA_INJECTION64_PATH=... for the recording`), one line
    /// each.
    pub notes: Vec<String>,
    command: Command,
    capture_dir: PathBuf,
    // Last: removed when the recording is dropped.
    _work: WorkDir,
}

impl Recording {
    /// Finds the injection library and libcupti and prepares the program
    /// `command` (program and arguments) to record itself.
    pub fn prepare(command: &[OsString], opts: &RecordOptions) -> Result<Recording, RecordError> {
        let program = command
            .first()
            .ok_or_else(|| RecordError("no program to record; give it after `--`".into()))?;
        let inject = injection_library()?;
        let cupti = find_cupti(command)?;
        let work = WorkDir::new()?;
        let lib_dir = work.path.join("lib");
        let capture_dir = work.path.join("captures");
        for dir in [&lib_dir, &capture_dir] {
            std::fs::create_dir(dir)
                .map_err(|e| RecordError(format!("{}: cannot create ({e})", dir.display())))?;
        }
        let mut names = vec!["libcupti.so".to_string()];
        if let Some(major) = &cupti.major {
            names.push(format!("libcupti.so.{major}"));
        }
        for name in names {
            let link = lib_dir.join(&name);
            std::os::unix::fs::symlink(&cupti.path, &link)
                .map_err(|e| RecordError(format!("{}: cannot create a link ({e})", link.display())))?;
        }

        let mut cmd = Command::new(program);
        cmd.args(&command[1..]);
        let mut notes = Vec::new();
        set_env(
            &mut cmd,
            &mut notes,
            "CUDA_INJECTION64_PATH",
            Some(inject.as_os_str()),
        );
        let nvtx = opts.nvtx.then_some(inject.as_os_str());
        set_env(&mut cmd, &mut notes, "NVTX_INJECTION64_PATH", nvtx);
        cmd.env("GAPSCOPE_CAPTURE_DIR", &capture_dir);
        cmd.env("GAPSCOPE_CUPTI_LIBS", &cupti.path);
        if !opts.api_calls {
            cmd.env("GAPSCOPE_CUPTI_API", "0");
        }
        let mut ld = lib_dir.into_os_string();
        if let Some(old) = std::env::var_os("LD_LIBRARY_PATH").filter(|v| !v.is_empty()) {
            ld.push(":");
            ld.push(old);
        }
        cmd.env("LD_LIBRARY_PATH", ld);
        Ok(Recording {
            cupti,
            notes,
            command: cmd,
            capture_dir,
            _work: work,
        })
    }

    /// Runs the program to its end ([`run_child`]); `Err` when it cannot
    /// be started.
    pub fn run(&mut self) -> io::Result<ExitStatus> {
        run_child(&mut self.command)
    }

    /// What the program's processes left in the capture directory.
    pub fn captures(&self) -> Result<Found, RecordError> {
        scan_captures(&self.capture_dir)
    }
}

/// Sets or removes `name` for the child, with a note when it replaces or
/// removes a value the environment already had.
fn set_env(cmd: &mut Command, notes: &mut Vec<String>, name: &str, value: Option<&OsStr>) {
    let old = std::env::var_os(name).filter(|v| !v.is_empty());
    match (value, old) {
        (Some(v), Some(old)) if old != v => {
            notes.push(format!(
                "replacing {name}={} for the recording",
                old.to_string_lossy()
            ));
            cmd.env(name, v);
        }
        (Some(v), _) => {
            cmd.env(name, v);
        }
        (None, Some(old)) => {
            notes.push(format!(
                "removing {name}={} for the recording",
                old.to_string_lossy()
            ));
            cmd.env_remove(name);
        }
        (None, None) => {
            cmd.env_remove(name);
        }
    }
}

/// The injection library: `$GAPSCOPE_INJECT_LIB`, else next to this
/// executable.
pub fn injection_library() -> Result<PathBuf, RecordError> {
    if let Some(p) = std::env::var_os("GAPSCOPE_INJECT_LIB").filter(|v| !v.is_empty()) {
        let p = PathBuf::from(p);
        if !p.is_file() {
            return Err(RecordError(format!(
                "GAPSCOPE_INJECT_LIB names {}, which does not exist",
                p.display()
            )));
        }
        return absolute(&p);
    }
    let exe = std::env::current_exe()
        .map_err(|e| RecordError(format!("cannot find the gapscope executable ({e})")))?;
    let dir = exe.parent().unwrap_or(Path::new("."));
    let p = dir.join("libgapscope_inject.so");
    if !p.is_file() {
        return Err(RecordError(format!(
            "the injection library libgapscope_inject.so is not next to {} (build it with `cargo \
             build -p gapscope-inject`, with --release for a release gapscope), or set \
             GAPSCOPE_INJECT_LIB to its path",
            exe.display()
        )));
    }
    Ok(p)
}

fn absolute(p: &Path) -> Result<PathBuf, RecordError> {
    std::path::absolute(p)
        .map_err(|e| RecordError(format!("{}: cannot make the path absolute ({e})", p.display())))
}

/// The command as one would type it (for messages and the trace's source).
pub fn shell_words(words: &[OsString]) -> String {
    words
        .iter()
        .map(|w| {
            let w = w.to_string_lossy();
            if !w.is_empty()
                && w.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c))
            {
                w.into_owned()
            } else {
                format!("'{}'", w.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A fresh directory under `$TMPDIR`, removed when dropped.
struct WorkDir {
    path: PathBuf,
}

impl WorkDir {
    fn new() -> Result<WorkDir, RecordError> {
        let base = std::env::temp_dir();
        let start = Instant::now();
        loop {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.subsec_nanos())
                .unwrap_or(0);
            let path = base.join(format!("gapscope-record-{}-{nanos:09}", std::process::id()));
            match std::fs::create_dir(&path) {
                Ok(()) => return Ok(WorkDir { path }),
                Err(e)
                    if e.kind() == io::ErrorKind::AlreadyExists
                        && start.elapsed() < Duration::from_secs(1) => {}
                Err(e) => {
                    return Err(RecordError(format!(
                        "{}: cannot create a working directory ({e})",
                        base.display()
                    )))
                }
            }
        }
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_for_messages() {
        let w: Vec<OsString> = ["python", "train.py", "--name", "a b", "it's"]
            .iter()
            .map(OsString::from)
            .collect();
        assert_eq!(shell_words(&w), r"python train.py --name 'a b' 'it'\''s'");
    }
}
