//! The injection's settings, from the environment `gapscope record` sets
//! (documented in docs/cupti.md, "Recording any program").

use std::path::PathBuf;
use std::time::Duration;

/// What the library reads at start.
pub struct Config {
    /// `GAPSCOPE_CAPTURE_DIR`: where `gapscope-<pid>.gst` goes (created if
    /// missing).
    pub dir: PathBuf,
    /// `GAPSCOPE_CUPTI_LIBS`: the one libcupti to load, when given.
    pub cupti_lib: Option<PathBuf>,
    /// `GAPSCOPE_CUPTI_API=0` leaves out runtime and driver API records
    /// (less overhead; GPU work is then not linked to its launch).
    pub api_calls: bool,
    /// `GAPSCOPE_EXIT_TIMEOUT`: seconds the exit path may take (default 60).
    pub exit_timeout: Duration,
    /// `GAPSCOPE_INJECT_SELFTEST=1`: no CUPTI (see `selftest`).
    pub selftest: bool,
}

impl Config {
    /// Reads and checks the variables; the error is the reason not to record.
    pub fn from_env() -> Result<Config, String> {
        let dir = match std::env::var_os("GAPSCOPE_CAPTURE_DIR") {
            Some(d) if !d.is_empty() => PathBuf::from(d),
            _ => {
                return Err(
                    "GAPSCOPE_CAPTURE_DIR is not set; run the program through `gapscope record`, \
                            or set it to the directory for the capture files"
                        .into(),
                )
            }
        };
        std::fs::create_dir_all(&dir).map_err(|e| {
            format!(
                "GAPSCOPE_CAPTURE_DIR={}: cannot create it ({e}); point it at a writable directory",
                dir.display()
            )
        })?;
        let cupti_lib = match std::env::var("GAPSCOPE_CUPTI_LIBS") {
            Ok(v) => one_library(&v)?,
            Err(std::env::VarError::NotPresent) => None,
            Err(std::env::VarError::NotUnicode(_)) => {
                return Err("GAPSCOPE_CUPTI_LIBS is not valid UTF-8".into());
            }
        };
        let exit_timeout = match std::env::var("GAPSCOPE_EXIT_TIMEOUT") {
            Ok(v) => Duration::from_secs(
                v.trim()
                    .parse::<u64>()
                    .map_err(|_| format!("GAPSCOPE_EXIT_TIMEOUT={v:?} is not a whole number of seconds"))?,
            ),
            Err(_) => Duration::from_secs(60),
        };
        Ok(Config {
            dir,
            cupti_lib,
            api_calls: std::env::var("GAPSCOPE_CUPTI_API").map_or(true, |v| v.trim() != "0"),
            exit_timeout,
            selftest: std::env::var("GAPSCOPE_INJECT_SELFTEST").is_ok_and(|v| v.trim() == "1"),
        })
    }
}

/// `GAPSCOPE_CUPTI_LIBS` may list several paths (`:`-separated, as the
/// tests' cache does); a process must load exactly one libcupti.
fn one_library(v: &str) -> Result<Option<PathBuf>, String> {
    let paths: Vec<&str> = v.split(':').filter(|p| !p.trim().is_empty()).collect();
    match paths.as_slice() {
        [] => Ok(None),
        [one] => Ok(Some(PathBuf::from(one))),
        more => Err(format!(
            "GAPSCOPE_CUPTI_LIBS names {} libraries ({}); a process must load exactly one libcupti, \
             so set it to one path",
            more.len(),
            more.join(", ")
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_library_takes_exactly_one_path() {
        assert_eq!(one_library("").unwrap(), None);
        assert_eq!(one_library(":").unwrap(), None);
        assert_eq!(
            one_library("/a/libcupti.so.13").unwrap(),
            Some(PathBuf::from("/a/libcupti.so.13"))
        );
        assert_eq!(
            one_library("/a/libcupti.so.13:").unwrap(),
            Some(PathBuf::from("/a/libcupti.so.13"))
        );
        let e = one_library("/a/libcupti.so.13:/b/libcupti.so.12").unwrap_err();
        assert!(
            e.contains("names 2 libraries (/a/libcupti.so.13, /b/libcupti.so.12)"),
            "{e}"
        );
    }
}
