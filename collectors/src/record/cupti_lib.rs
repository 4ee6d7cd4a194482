//! Which libcupti a recording loads. Exactly one: `$GAPSCOPE_CUPTI_LIBS`
//! (one path), else the one of the program's PyTorch
//! (`site-packages/nvidia/*/lib`, matching `torch.version.cuda`), else the
//! CUDA toolkit's (`$CUDA_HOME`/`$CUDA_PATH`//usr/local/cuda
//! `/extras/CUPTI/lib64`). Two candidates from the place that decides are
//! refused: a process must map only one (two copies break tracing).

use super::{absolute, RecordError};
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::Command;

/// An error with a formatted one-line message.
macro_rules! fail {
    ($($t:tt)*) => {
        return Err(RecordError(format!($($t)*)))
    };
}

/// The libcupti a recording uses, and where it was found.
#[derive(Debug)]
pub struct Cupti {
    /// The library file.
    pub path: PathBuf,
    /// The SONAME major (`13` for `libcupti.so.13`), when the name says.
    pub major: Option<String>,
    /// Where it was found, for messages.
    pub source: String,
}

/// Finds exactly one libcupti for the program `command` runs (see the
/// module docs for the order).
pub fn find_cupti(command: &[OsString]) -> Result<Cupti, RecordError> {
    let mut looked = Vec::new();
    if let Some(v) = std::env::var_os("GAPSCOPE_CUPTI_LIBS").filter(|v| !v.is_empty()) {
        let v = v.to_string_lossy().into_owned();
        let paths: Vec<&str> = v.split(':').filter(|p| !p.trim().is_empty()).collect();
        for p in &paths {
            if !Path::new(p).is_file() {
                fail!("GAPSCOPE_CUPTI_LIBS names {p}, which does not exist; point it at one libcupti.so.13 or libcupti.so.12");
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
            more => fail!(
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
            _ => fail!(
                "{} holds {} different libcupti files ({}); set GAPSCOPE_CUPTI_LIBS to the one to use",
                dir.display(),
                files.len(),
                list(&files)
            ),
        }
    }
    fail!(
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
pub(crate) fn major_of(path: &Path) -> Option<String> {
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
fn torch_cupti(python: &OsStr) -> Result<TorchCupti, RecordError> {
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
        _ => fail!(
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
