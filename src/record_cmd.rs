//! `gapscope record [-o run.gst] -- CMD ARGS...`: runs any program with
//! gapscope's CUDA injection library (`collectors/inject`), so that every
//! one of its processes that starts CUDA records itself through CUPTI, then
//! merges the per-process captures into one `.gst`.
//!
//! What it sets up (docs/cupti.md, "Recording any program"):
//! - the injection library: `$GAPSCOPE_INJECT_LIB`, else
//!   `libgapscope_inject.so` next to the gapscope executable;
//! - exactly one libcupti: `$GAPSCOPE_CUPTI_LIBS` (one path), else the one
//!   of the program's PyTorch (`site-packages/nvidia/*/lib`, matching
//!   `torch.version.cuda`), else the CUDA toolkit's
//!   (`$CUDA_HOME`/`$CUDA_PATH`//usr/local/cuda `/extras/CUPTI/lib64`). Two
//!   candidates from the place that decides are refused;
//! - a fresh temporary directory holding `lib/libcupti.so` (and
//!   `libcupti.so.<major>`), links to that file put first on
//!   `LD_LIBRARY_PATH` so every bare-name load in the program resolves to
//!   it, and `captures/`, the `GAPSCOPE_CAPTURE_DIR` of the program;
//! - `CUDA_INJECTION64_PATH` and `NVTX_INJECTION64_PATH` (unless
//!   `--no-nvtx`) naming the injection library, replacing any inherited
//!   value (said on stderr).
//!
//! The program inherits stdin, stdout and stderr. Ctrl-C from the terminal
//! reaches it directly (it is in our process group); a signal sent to
//! gapscope alone (`kill`) is passed on to it. gapscope's own lines go to
//! stderr.

use anyhow::{bail, Context, Result};
use clap::Args;
use gapscope_collectors::capture;
use gapscope_collectors::trace::{CopyKind, CpuOpKind, GpuKind, MemKind, Trace};
use std::ffi::{OsStr, OsString};
use std::io::{self, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};

/// Examples shown by `gapscope record --help`.
pub const EXAMPLES: &str = "\
EXAMPLES:
    Record a training script, then see why the GPU sat idle:
        gapscope record -- python train.py --epochs 1
        gapscope analyze run.gst

    Operator names from PyTorch's NVTX ranges (wrap the steps in
    torch.autograd.profiler.emit_nvtx()), into a file of your choice:
        gapscope record -o resnet.gst -- python train.py --nvtx

    Every rank of a torchrun job, one capture per process, merged:
        gapscope record -o ddp.gst -- torchrun --nproc-per-node 8 train.py

ENVIRONMENT:
    GAPSCOPE_CUPTI_LIBS   the libcupti to use (one path)
    GAPSCOPE_INJECT_LIB   the injection library (default: next to gapscope)
    GAPSCOPE_EXIT_TIMEOUT seconds a process may spend writing its capture at
                          exit (default 60)

EXIT STATUS:
    The program's own status (128+N when signal N ended it), also when
    nothing was recorded because it failed. 2 when gapscope could not set
    up or write the recording, 4 when the program succeeded but no process
    recorded anything (it never started CUDA, or recording could not start:
    the lines above say why), 126 when the command cannot be run, 127 when
    it is not found.";

/// Exit status when the program succeeded but no process wrote a capture.
pub const NOTHING_RECORDED: u8 = 4;
/// Exit status when the command cannot be executed (as in sh).
pub const CANNOT_RUN: u8 = 126;
/// Exit status when the command is not found (as in sh).
pub const NOT_FOUND: u8 = 127;

/// `gapscope record`.
#[derive(Debug, Args)]
pub struct RecordArgs {
    /// Where to write the merged capture.
    #[arg(short, long, value_name = "FILE", default_value = "run.gst")]
    pub output: PathBuf,

    /// Do not record NVTX ranges (NVTX_INJECTION64_PATH is then removed
    /// from the program's environment, so no other NVTX tool takes CUPTI).
    #[arg(long)]
    pub no_nvtx: bool,

    /// Record GPU work and synchronisations only, no runtime or driver API
    /// calls: less overhead, but kernels are then not linked to the calls
    /// that launched them.
    #[arg(long)]
    pub no_api_calls: bool,

    /// The program to record and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<OsString>,
}

/// Runs `gapscope record`; the exit status is the program's (see
/// [`EXAMPLES`] for the others). `Err` is a setup or write failure (2).
pub fn run(args: &RecordArgs) -> Result<u8> {
    let shown = shell_words(&args.command);
    let inject = injection_library()?;
    let cupti = find_cupti(&args.command)?;
    note(&format!(
        "recording `{shown}` with libcupti {} (from {})",
        cupti.path.display(),
        cupti.source
    ));
    let work = WorkDir::new()?;
    let lib_dir = work.path.join("lib");
    let capture_dir = work.path.join("captures");
    std::fs::create_dir(&lib_dir).with_context(|| format!("{}: cannot create", lib_dir.display()))?;
    std::fs::create_dir(&capture_dir).with_context(|| format!("{}: cannot create", capture_dir.display()))?;
    let mut names = vec!["libcupti.so".to_string()];
    if let Some(major) = &cupti.major {
        names.push(format!("libcupti.so.{major}"));
    }
    for name in names {
        std::os::unix::fs::symlink(&cupti.path, lib_dir.join(&name))
            .with_context(|| format!("{}: cannot create a link", lib_dir.join(&name).display()))?;
    }

    let mut cmd = Command::new(&args.command[0]);
    cmd.args(&args.command[1..]);
    set_env(&mut cmd, "CUDA_INJECTION64_PATH", Some(inject.as_os_str()));
    if args.no_nvtx {
        set_env(&mut cmd, "NVTX_INJECTION64_PATH", None);
    } else {
        set_env(&mut cmd, "NVTX_INJECTION64_PATH", Some(inject.as_os_str()));
    }
    cmd.env("GAPSCOPE_CAPTURE_DIR", &capture_dir);
    cmd.env("GAPSCOPE_CUPTI_LIBS", &cupti.path);
    if args.no_api_calls {
        cmd.env("GAPSCOPE_CUPTI_API", "0");
    }
    let mut ld = lib_dir.clone().into_os_string();
    if let Some(old) = std::env::var_os("LD_LIBRARY_PATH").filter(|v| !v.is_empty()) {
        ld.push(":");
        ld.push(old);
    }
    cmd.env("LD_LIBRARY_PATH", ld);

    let status = match run_child(&mut cmd) {
        Ok(s) => s,
        Err(e) => {
            let program = args.command[0].to_string_lossy();
            return Ok(match e.kind() {
                io::ErrorKind::NotFound => {
                    note(&format!("cannot run `{program}`: command not found"));
                    NOT_FOUND
                }
                _ => {
                    note(&format!("cannot run `{program}`: {e}"));
                    CANNOT_RUN
                }
            });
        }
    };
    let child_code = exit_code(status);

    let found = scan_captures(&capture_dir)?;
    for (pid, _) in found.started_without_capture() {
        note(&format!(
            "pid {pid} started recording but wrote no capture: it was killed, or left through \
             _exit/os._exit, which skips exit handlers"
        ));
    }
    if found.captures.is_empty() {
        match found.error_pids().len() {
            0 if found.started.is_empty() => note(&format!(
                "nothing was recorded: `{shown}` never started CUDA (no process called cuInit), so \
                 there was no GPU work to capture"
            )),
            0 => note("nothing was recorded: no process wrote its capture (see the lines above)"),
            n => note(&format!(
                "nothing was recorded: {n} process{} of `{shown}` tried to record and could not (the \
                 `gapscope: pid` lines above say why)",
                if n == 1 { "" } else { "es" },
            )),
        }
        return Ok(if child_code != 0 {
            child_code
        } else {
            NOTHING_RECORDED
        });
    }
    let merged = match merge_captures(&found.captures, &shown) {
        Ok(m) => m,
        Err(e) if child_code != 0 => {
            note(&format!("{e:#}"));
            return Ok(child_code);
        }
        Err(e) => return Err(e),
    };
    if let Err(e) = capture::write_file(&merged.trace, &args.output) {
        if child_code != 0 {
            note(&e.to_string());
            return Ok(child_code);
        }
        bail!("{e}");
    }
    let size = std::fs::metadata(&args.output).map(|m| m.len()).unwrap_or(0);
    note(&merged.summary(&found, &args.output, size));
    Ok(child_code)
}

/// One `gapscope:` line on stderr.
fn note(msg: &str) {
    let _ = writeln!(io::stderr().lock(), "gapscope: {msg}");
}

/// Sets or removes `name` for the child, saying so when it replaces or
/// removes a value the environment already had.
fn set_env(cmd: &mut Command, name: &str, value: Option<&OsStr>) {
    let old = std::env::var_os(name).filter(|v| !v.is_empty());
    match (value, old) {
        (Some(v), Some(old)) if old != v => {
            note(&format!(
                "replacing {name}={} for the recording",
                old.to_string_lossy()
            ));
            cmd.env(name, v);
        }
        (Some(v), _) => {
            cmd.env(name, v);
        }
        (None, Some(old)) => {
            note(&format!(
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
fn injection_library() -> Result<PathBuf> {
    if let Some(p) = std::env::var_os("GAPSCOPE_INJECT_LIB").filter(|v| !v.is_empty()) {
        let p = PathBuf::from(p);
        if !p.is_file() {
            bail!("GAPSCOPE_INJECT_LIB names {}, which does not exist", p.display());
        }
        return absolute(&p);
    }
    let exe = std::env::current_exe().context("cannot find the gapscope executable")?;
    let dir = exe.parent().unwrap_or(Path::new("."));
    let p = dir.join("libgapscope_inject.so");
    if !p.is_file() {
        bail!(
            "the injection library libgapscope_inject.so is not next to {} (build it with `cargo \
             build -p gapscope-inject`, with --release for a release gapscope), or set \
             GAPSCOPE_INJECT_LIB to its path",
            exe.display()
        );
    }
    Ok(p)
}

fn absolute(p: &Path) -> Result<PathBuf> {
    std::path::absolute(p).with_context(|| format!("{}: cannot make the path absolute", p.display()))
}

/// The libcupti a recording uses, and where it was found.
#[derive(Debug)]
struct Cupti {
    path: PathBuf,
    /// The SONAME major (`13` for `libcupti.so.13`), when the name says.
    major: Option<String>,
    source: String,
}

/// Finds exactly one libcupti (see the module docs for the order). Two
/// different files in the place that decides are refused: a process must map
/// only one (two copies break tracing).
fn find_cupti(command: &[OsString]) -> Result<Cupti> {
    let mut looked = Vec::new();
    if let Some(v) = std::env::var_os("GAPSCOPE_CUPTI_LIBS").filter(|v| !v.is_empty()) {
        let v = v.to_string_lossy().into_owned();
        let paths: Vec<&str> = v.split(':').filter(|p| !p.trim().is_empty()).collect();
        for p in &paths {
            if !Path::new(p).is_file() {
                bail!("GAPSCOPE_CUPTI_LIBS names {p}, which does not exist; point it at one libcupti.so.13 or libcupti.so.12");
            }
        }
        match paths.as_slice() {
            [] => {}
            [one] => {
                let path = absolute(Path::new(one))?;
                return Ok(Cupti {
                    major: major_of(&path),
                    path,
                    source: "GAPSCOPE_CUPTI_LIBS".into(),
                });
            }
            more => bail!(
                "GAPSCOPE_CUPTI_LIBS names {} libraries ({}); a recording uses exactly one libcupti, \
                 so set it to one of them (the one the program's CUDA runtime matches)",
                more.len(),
                more.join(", ")
            ),
        }
    }
    let python = python_of(command);
    match torch_cupti(&python)? {
        TorchCupti::Found(c) => return Ok(c),
        TorchCupti::NotThere(why) => looked.push(why),
    }
    let mut roots: Vec<PathBuf> = ["CUDA_HOME", "CUDA_PATH"]
        .iter()
        .filter_map(|v| std::env::var_os(v).filter(|v| !v.is_empty()).map(PathBuf::from))
        .collect();
    roots.push(PathBuf::from("/usr/local/cuda"));
    for root in roots {
        let dir = root.join("extras/CUPTI/lib64");
        let files = cupti_files(&dir, None);
        match files.len() {
            0 => looked.push(format!("{} (none)", dir.display())),
            1 => {
                let (path, major) = files.into_iter().next().expect("one");
                return Ok(Cupti {
                    path,
                    major,
                    source: format!("the CUDA toolkit in {}", root.display()),
                });
            }
            _ => bail!(
                "{} holds {} different libcupti files ({}); set GAPSCOPE_CUPTI_LIBS to the one to use",
                dir.display(),
                files.len(),
                list(&files)
            ),
        }
    }
    bail!(
        "no libcupti found; looked in GAPSCOPE_CUPTI_LIBS (unset), {}. Install the one matching the \
         program's CUDA (`pip install nvidia-cuda-cupti` for CUDA 13, `nvidia-cuda-cupti-cu12` for \
         CUDA 12) or set GAPSCOPE_CUPTI_LIBS=/path/to/libcupti.so.13",
        looked.join(", ")
    )
}

fn list(files: &[(PathBuf, Option<String>)]) -> String {
    files
        .iter()
        .map(|(p, _)| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// `13` from `libcupti.so.13` (or `libcupti.so.13.0.85`).
fn major_of(path: &Path) -> Option<String> {
    let name = path.file_name()?.to_str()?;
    let rest = name.strip_prefix("libcupti.so.")?;
    let major = rest.split('.').next()?;
    (!major.is_empty() && major.len() <= 3 && major.bytes().all(|b| b.is_ascii_digit()))
        .then(|| major.to_string())
}

/// The distinct libcupti files (`libcupti.so*`, links resolved) in `dir`,
/// each with its major when a name says it; `major` keeps only that one.
fn cupti_files(dir: &Path, major: Option<&str>) -> Vec<(PathBuf, Option<String>)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut names: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("libcupti.so"))
        })
        .collect();
    names.sort();
    let mut out: Vec<(PathBuf, PathBuf, Option<String>)> = Vec::new();
    for p in names {
        let Ok(real) = std::fs::canonicalize(&p) else {
            continue;
        };
        if !real.is_file() {
            continue;
        }
        let m = major_of(&p).or_else(|| major_of(&real));
        if let Some(want) = major {
            if m.as_deref() != Some(want) {
                continue;
            }
        }
        match out.iter_mut().find(|(_, r, _)| *r == real) {
            // Name it by its SONAME-style name when there is one.
            Some(e) => {
                if e.2.is_none() && m.is_some() {
                    e.0 = p;
                    e.2 = m;
                }
            }
            None => out.push((p, real, m)),
        }
    }
    out.into_iter().map(|(p, _, m)| (p, m)).collect()
}

enum TorchCupti {
    Found(Cupti),
    /// Where we looked, for the message when nothing is found.
    NotThere(String),
}

/// The libcupti of the PyTorch that `python` imports: the one in its
/// `site-packages/nvidia/*/lib` whose major matches `torch.version.cuda`
/// (read from `torch/version.py`; torch itself is not imported, which
/// takes seconds).
fn torch_cupti(python: &OsStr) -> Result<TorchCupti> {
    const FIND: &str = "import importlib.util\n\
        s = importlib.util.find_spec('torch')\n\
        print(s.submodule_search_locations[0] if s and s.submodule_search_locations else '')";
    let shown = python.to_string_lossy().into_owned();
    let out = Command::new(python)
        .args(["-c", FIND])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output();
    let torch_dir = match out {
        Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout).trim().to_string(),
        _ => {
            return Ok(TorchCupti::NotThere(format!(
                "the PyTorch of {shown} (no such Python)"
            )))
        }
    };
    if torch_dir.is_empty() {
        return Ok(TorchCupti::NotThere(format!(
            "the PyTorch of {shown} (torch not installed)"
        )));
    }
    let torch_dir = PathBuf::from(torch_dir);
    let version = std::fs::read_to_string(torch_dir.join("version.py")).unwrap_or_default();
    let Some(cuda) = cuda_of_version_py(&version) else {
        return Ok(TorchCupti::NotThere(format!(
            "the PyTorch in {} (a CPU build)",
            torch_dir.display()
        )));
    };
    let major = cuda.split('.').next().unwrap_or("").to_string();
    let site = torch_dir.parent().unwrap_or(Path::new("/"));
    let mut files = Vec::new();
    if let Ok(entries) = std::fs::read_dir(site.join("nvidia")) {
        let mut dirs: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path().join("lib")))
            .collect();
        dirs.sort();
        for d in dirs {
            for f in cupti_files(&d, Some(&major)) {
                if !files.iter().any(|(p, _): &(PathBuf, Option<String>)| {
                    std::fs::canonicalize(p).ok() == std::fs::canonicalize(&f.0).ok()
                }) {
                    files.push(f);
                }
            }
        }
    }
    let source = format!("the PyTorch in {} (CUDA {cuda})", torch_dir.display());
    match files.len() {
        0 => Ok(TorchCupti::NotThere(format!(
            "{}/nvidia/*/lib (no libcupti.so.{major} for {source})",
            site.display()
        ))),
        1 => {
            let (path, m) = files.into_iter().next().expect("one");
            Ok(TorchCupti::Found(Cupti {
                path,
                major: m.or(Some(major)),
                source,
            }))
        }
        _ => bail!(
            "{}/nvidia holds {} different libcupti.so.{major} files ({}); set GAPSCOPE_CUPTI_LIBS to the \
             one the program loads",
            site.display(),
            files.len(),
            list(&files)
        ),
    }
}

/// `13.0` from torch's `version.py` (`cuda: Optional[str] = '13.0'`);
/// `None` for a CPU build (`cuda = None`).
fn cuda_of_version_py(text: &str) -> Option<String> {
    let line = text.lines().find(|l| l.trim_start().starts_with("cuda"))?;
    let value = line.split_once('=')?.1.trim();
    let v = value.trim_matches(|c| c == '\'' || c == '"');
    (v != value && !v.is_empty()).then(|| v.to_string())
}

/// The Python interpreter the program runs on: the program itself when it
/// is one (`python3 train.py`), the interpreter of its `#!` line when it is
/// a Python script (`torchrun`, `accelerate`), else `python3`.
fn python_of(command: &[OsString]) -> OsString {
    let program = &command[0];
    let is_python = |p: &OsStr| {
        Path::new(p)
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("python"))
    };
    if is_python(program) {
        return program.clone();
    }
    if let Some(path) = which(program) {
        if let Some(interp) = shebang(&path) {
            if is_python(&interp) {
                return interp;
            }
        }
    }
    OsString::from("python3")
}

/// The interpreter named on a script's `#!` line (through `env`).
fn shebang(path: &Path) -> Option<OsString> {
    use std::io::Read;
    let mut head = [0u8; 256];
    let n = std::fs::File::open(path).ok()?.read(&mut head).ok()?;
    let line = head[..n].strip_prefix(b"#!")?;
    let line = line.split(|&b| b == b'\n').next()?;
    let line = std::str::from_utf8(line).ok()?;
    let mut words = line.split_whitespace();
    let first = words.next()?;
    if Path::new(first).file_name().is_some_and(|n| n == "env") {
        return words.find(|w| !w.starts_with('-')).map(OsString::from);
    }
    Some(OsString::from(first))
}

/// `program` as the shell would find it on `PATH`.
fn which(program: &OsStr) -> Option<PathBuf> {
    let p = Path::new(program);
    if p.components().count() > 1 {
        return p.is_file().then(|| p.to_path_buf());
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(p))
        .find(|c| c.is_file())
}

/// The running child's pid, for the signal handler (0: none).
static CHILD: AtomicI32 = AtomicI32::new(0);
/// A signal sent to us before the child's pid was known (the program may
/// run, and signal us, before `spawn` returns); passed on once it is.
static PENDING: AtomicI32 = AtomicI32::new(0);
const FORWARDED: [libc::c_int; 4] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];

/// Passes a signal on to the child when another process sent it to us
/// alone (`kill`: `si_code` ≤ 0). One from the terminal (Ctrl-C, hang-up;
/// `si_code` > 0) went to the whole foreground process group, the child
/// included, so it is not sent twice. Either way gapscope stays to merge.
extern "C" fn forward(sig: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo.
    if info.is_null() || unsafe { (*info).si_code } > 0 {
        return;
    }
    // Pending first, then the pid: whichever of this handler and
    // `run_child` comes second sees the other's store, so the signal is
    // passed on at least once.
    PENDING.store(sig, Ordering::SeqCst);
    let child = CHILD.load(Ordering::SeqCst);
    if child > 0 && PENDING.swap(0, Ordering::SeqCst) != 0 {
        // SAFETY: kill is async-signal-safe.
        unsafe { libc::kill(child, sig) };
    }
}

/// Runs the program with the signal handling above; restores the default
/// handlers once it has exited (Ctrl-C while merging stops gapscope).
fn run_child(cmd: &mut Command) -> io::Result<ExitStatus> {
    set_handlers(true);
    let status = cmd.spawn().and_then(|mut child| {
        CHILD.store(child.id() as i32, Ordering::SeqCst);
        let pending = PENDING.swap(0, Ordering::SeqCst);
        if pending != 0 {
            // SAFETY: plain kill of our own child.
            unsafe { libc::kill(child.id() as i32, pending) };
        }
        let s = child.wait();
        CHILD.store(0, Ordering::SeqCst);
        s
    });
    set_handlers(false);
    status
}

fn set_handlers(on: bool) {
    for sig in FORWARDED {
        // SAFETY: installs a handler that only reads an atomic and calls
        // kill (or restores the default).
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            if on {
                sa.sa_sigaction =
                    forward as extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) as usize;
                sa.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
            } else {
                sa.sa_sigaction = libc::SIG_DFL;
            }
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

/// The child's status as a shell reports it.
fn exit_code(s: ExitStatus) -> u8 {
    match (s.code(), s.signal()) {
        (Some(c), _) => c as u8,
        (None, Some(sig)) => (128 + sig).min(255) as u8,
        _ => 1,
    }
}

/// What the processes left in the capture directory.
#[derive(Debug, Default)]
pub struct Found {
    /// `gapscope-<pid>.gst`, sorted by pid.
    pub captures: Vec<(u32, PathBuf)>,
    /// The lines of every `gapscope-<pid>.err`.
    pub errors: Vec<String>,
    /// Pids that started recording (`gapscope-<pid>.started`).
    pub started: Vec<u32>,
}

impl Found {
    /// The pids that reported an error.
    fn error_pids(&self) -> Vec<u32> {
        let mut p: Vec<u32> = self
            .errors
            .iter()
            .filter_map(|e| e.strip_prefix("gapscope: pid ")?.split(':').next()?.parse().ok())
            .collect();
        p.sort_unstable();
        p.dedup();
        p
    }

    /// Started, but neither a capture nor an error: killed, or exited
    /// without running exit handlers.
    fn started_without_capture(&self) -> Vec<(u32, ())> {
        self.started
            .iter()
            .filter(|&&p| !self.captures.iter().any(|(c, _)| *c == p))
            .filter(|p| !self.error_pids().contains(p))
            .map(|&p| (p, ()))
            .collect()
    }
}

/// Reads the capture directory.
pub fn scan_captures(dir: &Path) -> Result<Found> {
    let mut found = Found::default();
    let entries = std::fs::read_dir(dir).with_context(|| format!("{}: cannot read", dir.display()))?;
    for e in entries.flatten() {
        let path = e.path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let Some(rest) = name.strip_prefix("gapscope-") else {
            continue;
        };
        let (stem, ext) = rest.split_once('.').unwrap_or((rest, ""));
        let pid: Option<u32> = stem.split('-').next().and_then(|p| p.parse().ok());
        let Some(pid) = pid else { continue };
        match ext {
            "gst" => found.captures.push((pid, path)),
            "err" => {
                let text = std::fs::read_to_string(&path).unwrap_or_default();
                found.errors.extend(text.lines().map(str::to_string));
            }
            "started" => found.started.push(pid),
            _ => {}
        }
    }
    found.captures.sort();
    found.started.sort_unstable();
    Ok(found)
}

/// The merged recording and what went into it.
pub struct Merged {
    /// All processes in one trace.
    pub trace: Trace,
    /// The pids whose captures were merged.
    pub pids: Vec<u32>,
    /// Captures that could not be read (each said on stderr).
    pub unreadable: usize,
}

/// Reads every capture (an unreadable one is reported and left out) and
/// merges them, named `source`.
pub fn merge_captures(captures: &[(u32, PathBuf)], source: &str) -> Result<Merged> {
    let mut parts = Vec::new();
    let mut pids = Vec::new();
    let mut unreadable = 0;
    for (pid, path) in captures {
        match capture::read_file(path) {
            Ok(t) => {
                parts.push(t);
                pids.push(*pid);
            }
            Err(e) => {
                unreadable += 1;
                note(&format!("pid {pid}: its capture is left out: {e}"));
            }
        }
    }
    if parts.is_empty() {
        bail!(
            "none of the {} captures could be read (see above)",
            captures.len()
        );
    }
    pids.dedup();
    Ok(Merged {
        trace: capture::merge(parts, source),
        pids,
        unreadable,
    })
}

/// What a recording holds, as the summary counts it.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Kernels.
    pub kernels: usize,
    /// Memory copies.
    pub copies: usize,
    /// Host-to-device copies.
    pub htod: usize,
    /// Host-to-device copies from pageable memory.
    pub htod_pageable: usize,
    /// Device-to-host copies.
    pub dtoh: usize,
    /// Memsets.
    pub memsets: usize,
    /// Synchronisation records.
    pub syncs: usize,
    /// Runtime and driver API calls.
    pub api_calls: usize,
    /// NVTX ranges (user annotations).
    pub ranges: usize,
    /// Records CUPTI dropped for lack of buffer space.
    pub dropped: u64,
}

impl Counts {
    /// Counts the rows of `t`.
    pub fn of(t: &Trace) -> Counts {
        let g = &t.gpu;
        let mut c = Counts::default();
        for i in 0..g.len() {
            match g.kind[i] {
                GpuKind::Kernel => c.kernels += 1,
                GpuKind::Memcpy => {
                    c.copies += 1;
                    match g.copy_kind[i] {
                        CopyKind::HtoD => {
                            c.htod += 1;
                            if g.src_mem[i] == MemKind::Pageable {
                                c.htod_pageable += 1;
                            }
                        }
                        CopyKind::DtoH => c.dtoh += 1,
                        _ => {}
                    }
                }
                GpuKind::Memset => c.memsets += 1,
                GpuKind::Sync => c.syncs += 1,
            }
        }
        c.api_calls = t.runtime.len();
        c.ranges = t
            .cpu_ops
            .kind
            .iter()
            .filter(|&&k| k == CpuOpKind::UserAnnotation)
            .count();
        c.dropped = t
            .diagnostics
            .counts
            .get("cupti_dropped_records")
            .copied()
            .unwrap_or(0);
        c
    }
}

impl Merged {
    /// The one-paragraph summary `record` prints.
    fn summary(&self, found: &Found, out: &Path, size: u64) -> String {
        let c = Counts::of(&self.trace);
        let n = self.pids.len();
        let pids: Vec<String> = self.pids.iter().map(|p| p.to_string()).collect();
        let mut s = format!(
            "recorded {n} process{} (pid{} {}): {} kernel{}, {} cop{} ({} host-to-device, {} of them from \
             pageable memory; {} device-to-host), {} memset{}, {} sync{}, {} runtime/driver call{}, {} NVTX \
             range{}; CUPTI dropped {} record{}.",
            if n == 1 { "" } else { "es" },
            if n == 1 { "" } else { "s" },
            pids.join(", "),
            c.kernels,
            plural(c.kernels),
            c.copies,
            if c.copies == 1 { "y" } else { "ies" },
            c.htod,
            c.htod_pageable,
            c.dtoh,
            c.memsets,
            plural(c.memsets),
            c.syncs,
            plural(c.syncs),
            c.api_calls,
            plural(c.api_calls),
            c.ranges,
            plural(c.ranges),
            c.dropped,
            plural(c.dropped as usize),
        );
        if c.dropped > 0 {
            s.push_str(" Some GPU work is missing from the recording.");
        }
        let failed = found.error_pids().len() + found.started_without_capture().len() + self.unreadable;
        if failed > 0 {
            s.push_str(&format!(
                " {failed} other process{} could not be recorded (see above).",
                if failed == 1 { "" } else { "es" }
            ));
        }
        s.push_str(&format!(
            " Wrote {} ({}); next: gapscope analyze {}",
            out.display(),
            gapscope_analyzers::format::bytes(size),
            out.display()
        ));
        s
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// The command as one would type it (for messages and the trace's source).
fn shell_words(words: &[OsString]) -> String {
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
    fn new() -> Result<WorkDir> {
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
                    return Err(e)
                        .with_context(|| format!("{}: cannot create a working directory", base.display()))
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
    use gapscope_collectors::trace::{GpuActivity, RuntimeCall, TraceBuilder};

    #[test]
    fn majors_come_from_the_soname() {
        assert_eq!(major_of(Path::new("/x/libcupti.so.13")).as_deref(), Some("13"));
        assert_eq!(
            major_of(Path::new("/x/libcupti.so.12.9.79")).as_deref(),
            Some("12")
        );
        assert_eq!(major_of(Path::new("/x/libcupti.so")), None);
        assert_eq!(major_of(Path::new("/x/libcupti.so.2025.3.1")), None);
    }

    #[test]
    fn torch_version_py_gives_the_cuda_version() {
        let cu =
            "__version__ = '2.11.0+cu130'\ndebug = False\ncuda: Optional[str] = '13.0'\ngit_version = 'x'\n";
        assert_eq!(cuda_of_version_py(cu).as_deref(), Some("13.0"));
        let cpu = "__version__ = '2.11.0+cpu'\ncuda: Optional[str] = None\n";
        assert_eq!(cuda_of_version_py(cpu), None);
        assert_eq!(cuda_of_version_py(""), None);
    }

    #[test]
    fn shebangs_name_their_interpreter() {
        let d = std::env::temp_dir().join(format!("gapscope-shebang-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let write = |name: &str, text: &str| {
            let p = d.join(name);
            std::fs::write(&p, text).unwrap();
            p
        };
        let env = write("torchrun", "#!/usr/bin/env -S python3.11\nimport sys\n");
        let direct = write("accelerate", "#!/opt/venv/bin/python\n");
        let sh = write("job.sh", "#!/bin/sh\n");
        assert_eq!(shebang(&env), Some(OsString::from("python3.11")));
        assert_eq!(
            python_of(&[direct.into_os_string()]),
            OsString::from("/opt/venv/bin/python")
        );
        assert_eq!(python_of(&[sh.into_os_string()]), OsString::from("python3"));
        assert_eq!(
            python_of(&[OsString::from("python3.12"), OsString::from("x.py")]),
            OsString::from("python3.12")
        );
        let _ = std::fs::remove_dir_all(d);
    }

    #[test]
    fn a_directory_with_two_libcuptis_has_two_files() {
        let d = std::env::temp_dir().join(format!("gapscope-cuptifiles-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("libcupti.so.13.0.85"), b"a").unwrap();
        std::os::unix::fs::symlink(d.join("libcupti.so.13.0.85"), d.join("libcupti.so.13")).unwrap();
        std::os::unix::fs::symlink(d.join("libcupti.so.13"), d.join("libcupti.so")).unwrap();
        let one = cupti_files(&d, None);
        assert_eq!(one.len(), 1, "{one:?}");
        assert_eq!(one[0].1.as_deref(), Some("13"));
        std::fs::write(d.join("libcupti.so.12"), b"b").unwrap();
        assert_eq!(cupti_files(&d, None).len(), 2);
        assert_eq!(cupti_files(&d, Some("12")).len(), 1);
        let _ = std::fs::remove_dir_all(d);
    }

    #[test]
    fn quoting_for_messages() {
        let w: Vec<OsString> = ["python", "train.py", "--name", "a b", "it's"]
            .iter()
            .map(OsString::from)
            .collect();
        assert_eq!(shell_words(&w), r"python train.py --name 'a b' 'it'\''s'");
    }

    /// One process's capture: `kernels` kernels each launched by a
    /// `cudaLaunchKernel` with the same correlation ids in every process, and
    /// one pageable host-to-device copy.
    fn process(pid: i64, origin: i64, kernels: u64) -> Trace {
        let mut b = TraceBuilder::new();
        let t = b.thread(pid, pid + 1);
        let launch = b.intern("cudaLaunchKernel");
        let name = b.intern(&format!("kernel_of_{pid}"));
        for i in 0..kernels as i64 {
            let at = origin + i * 10_000;
            b.push_runtime(RuntimeCall::new(t, at, at + 1_000, launch, i as u64 + 1));
            b.push_gpu(GpuActivity::kernel(
                0,
                7,
                at + 2_000,
                at + 6_000,
                name,
                i as u64 + 1,
            ));
        }
        let copy = b.intern("Memcpy HtoD (Pageable -> Device)");
        let mut c = GpuActivity::new(
            GpuKind::Memcpy,
            0,
            7,
            origin + 500_000,
            origin + 600_000,
            copy,
            99,
        );
        c.copy_kind = CopyKind::HtoD;
        c.src_mem = MemKind::Pageable;
        c.dst_mem = MemKind::Device;
        c.bytes = 1 << 20;
        b.push_gpu(c);
        b.diagnostics.counts.insert("cupti_dropped_records".into(), 2);
        b.finish()
    }

    /// The merge step on two hand-written per-process captures (written with
    /// the capture API, as the injection writes them): one trace with both
    /// processes, every kernel linked to its own process's launch although
    /// both used the same correlation ids, loaded and analysed by the code
    /// `gapscope analyze` runs. (tests/record_cli.rs runs the real binaries.)
    #[test]
    fn merges_two_processes_into_one_capture() {
        let d = std::env::temp_dir().join(format!("gapscope-merge-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        let base = 1_700_000_000_000_000_000i64;
        capture::write_file(&process(4242, base, 3), &d.join("gapscope-4242.gst")).unwrap();
        capture::write_file(&process(4343, base + 250_000, 5), &d.join("gapscope-4343.gst")).unwrap();
        std::fs::write(
            d.join("gapscope-4444.err"),
            "gapscope: pid 4444: not recording: test\n",
        )
        .unwrap();
        std::fs::write(d.join("gapscope-4343.started"), "").unwrap();
        std::fs::write(d.join("gapscope-4545.started"), "").unwrap();
        std::fs::write(d.join("gapscope-4646.gst.tmp"), "half").unwrap();

        let found = scan_captures(&d).unwrap();
        assert_eq!(
            found.captures.iter().map(|c| c.0).collect::<Vec<_>>(),
            vec![4242, 4343]
        );
        assert_eq!(found.errors, vec!["gapscope: pid 4444: not recording: test"]);
        assert_eq!(found.started_without_capture(), vec![(4545, ())]);

        let merged = merge_captures(&found.captures, "python train.py").unwrap();
        assert_eq!(merged.pids, vec![4242, 4343]);
        let out = d.join("run.gst");
        capture::write_file(&merged.trace, &out).unwrap();
        // Read back the way `gapscope analyze` reads its files.
        let import = gapscope_collectors::kineto::ImportOptions { progress: false };
        let back = crate::analyze::load(&out, &import).unwrap();
        assert_eq!(back.meta.format, capture::FORMAT_NAME);
        assert_eq!(
            Counts::of(&back),
            Counts {
                kernels: 8,
                copies: 2,
                htod: 2,
                htod_pageable: 2,
                dtoh: 0,
                memsets: 0,
                syncs: 0,
                api_calls: 8,
                ranges: 0,
                dropped: 4,
            }
        );
        let mut pids: Vec<i64> = back.threads.pid.clone();
        pids.sort_unstable();
        assert_eq!(pids, vec![4242, 4343]);
        for i in 0..back.gpu.len() {
            if back.gpu.kind[i] != GpuKind::Kernel {
                continue;
            }
            let call = back.links.gpu_launch[i].expect("linked").index();
            let pid = back.threads.pid[back.runtime.thread[call].0 as usize];
            assert_eq!(back.strings.get(back.gpu.name[i]), format!("kernel_of_{pid}"));
        }
        let summary = merged.summary(&found, &out, 1234);
        assert!(
            summary.starts_with("recorded 2 processes (pids 4242, 4343): 8 kernels, 2 copies"),
            "{summary}"
        );
        assert!(
            summary.contains("CUPTI dropped 4 records. Some GPU work is missing"),
            "{summary}"
        );
        assert!(
            summary.contains("2 other processes could not be recorded (see above)"),
            "{summary}"
        );

        let analysis = gapscope_analyzers::analysis::analyze(&back, &Default::default());
        assert_eq!(analysis.devices.len(), 1);
        assert_eq!(analysis.diagnostics.rows.gpu, 10);
        assert_eq!(
            analysis.diagnostics.gpu_rows_without_launch, 2,
            "the copies had no launch call"
        );
        let _ = std::fs::remove_dir_all(d);
    }
}
