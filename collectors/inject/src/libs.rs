//! Which libraries are in the process: the libcupti we were told to use,
//! the check that only one libcupti is mapped, and keeping ourselves loaded.

use std::ffi::{c_void, CStr, CString};
use std::path::Path;

/// Loads the libcupti `GAPSCOPE_CUPTI_LIBS` names, by its path, and keeps it
/// loaded. cudarc then loads libcupti by bare names (`libcupti.so`, ...,
/// `libcupti.so.13`): `gapscope record` puts a `libcupti.so` link to this
/// same file first on `LD_LIBRARY_PATH`, and the SONAME matches otherwise,
/// so both resolve to this copy; [`single_cupti`] checks that they did.
pub fn preload(path: &Path) -> Result<(), String> {
    // SAFETY: loading libcupti runs only its own initialisers.
    match unsafe { libloading::Library::new(path) } {
        Ok(lib) => {
            // Never unloaded: unloading libcupti crashed or hung processes
            // in our tests (docs/cupti.md).
            std::mem::forget(lib);
            Ok(())
        }
        Err(e) => {
            // libloading's message is "dlopen failed"; dlerror's text is its source.
            let why = std::error::Error::source(&e).map_or_else(|| e.to_string(), |s| s.to_string());
            Err(format!(
                "GAPSCOPE_CUPTI_LIBS names {}, which cannot be loaded ({why}); point it at an existing \
                 libcupti.so.13 or libcupti.so.12",
                path.display()
            ))
        }
    }
}

/// Fails when two different libcupti files are mapped (for instance
/// an unversioned `libcupti.so` from another install on
/// `LD_LIBRARY_PATH` next to the one the program loaded). Tracing with two
/// copies breaks, so we stop before subscribing.
pub fn single_cupti() -> Result<(), String> {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    let found = mapped_cupti(&maps);
    if found.len() > 1 {
        return Err(format!(
            "{} different libcupti files are loaded ({}); tracing needs exactly one: run through \
             `gapscope record`, or set GAPSCOPE_CUPTI_LIBS to the one the program uses and remove \
             the other's directory from LD_LIBRARY_PATH",
            found.len(),
            found.join(", ")
        ));
    }
    Ok(())
}

/// The distinct libcupti files in a `/proc/<pid>/maps` text, one path per
/// (device, inode), in order of first mapping.
pub fn mapped_cupti(maps: &str) -> Vec<String> {
    let mut seen: Vec<(String, String)> = Vec::new();
    let mut paths = Vec::new();
    for line in maps.lines() {
        // address perms offset dev inode path (the path may hold spaces)
        let mut f = line.split_whitespace();
        let (Some(_), Some(_), Some(_), Some(dev), Some(inode)) =
            (f.next(), f.next(), f.next(), f.next(), f.next())
        else {
            continue;
        };
        let path = f.collect::<Vec<_>>().join(" ");
        let name = path.rsplit('/').next().unwrap_or("");
        if inode == "0" || !name.starts_with("libcupti") {
            continue;
        }
        let key = (dev.to_string(), inode.to_string());
        if !seen.contains(&key) {
            seen.push(key);
            paths.push(path);
        }
    }
    paths
}

/// `GAPSCOPE_NVTX=0` turns the NVTX entry points into no-ops (for a
/// program whose NVTX use misbehaves under CUPTI).
pub fn nvtx_enabled() -> bool {
    std::env::var("GAPSCOPE_NVTX").map_or(true, |v| v.trim() != "0")
}

/// Makes this library impossible to unload. NVTX `dlclose`s an injection
/// library whose entry point returned 0, and the exit handler, fork handler
/// and collector threads point into our code: unloading would leave them
/// dangling.
pub fn pin_self() {
    // SAFETY: dladdr fills `info` for an address inside this library;
    // dlopen with RTLD_NOLOAD only adds RTLD_NODELETE to the loaded copy.
    unsafe {
        let mut info: libc::Dl_info = std::mem::zeroed();
        let here = crate::InitializeInjection as *const c_void;
        if libc::dladdr(here, &mut info) == 0 || info.dli_fname.is_null() {
            return;
        }
        let name = CString::from(CStr::from_ptr(info.dli_fname));
        let _ = libc::dlopen(
            name.as_ptr(),
            libc::RTLD_NOW | libc::RTLD_NOLOAD | libc::RTLD_NODELETE,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_file_mapped_many_times_counts_once() {
        let maps = "\
7f00-7f01 r--p 00000000 08:01 1234 /site/nvidia/cu13/lib/libcupti.so.13
7f01-7f02 r-xp 00001000 08:01 1234 /site/nvidia/cu13/lib/libcupti.so.13
7f02-7f03 rw-p 00000000 00:00 0 
7f03-7f04 r--p 00000000 08:01 99 /usr/lib/libc.so.6
7f05-7f06 r--p 00000000 08:01 555 /site/nvidia/cu13/lib/libnvperf_host.so
";
        assert_eq!(mapped_cupti(maps), vec!["/site/nvidia/cu13/lib/libcupti.so.13"]);
    }

    #[test]
    fn two_files_are_two_copies_even_with_one_name() {
        let maps = "\
7f00-7f01 r--p 00000000 08:01 1234 /site/nvidia/cu13/lib/libcupti.so.13
7f01-7f02 r--p 00000000 08:01 777 /usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13.0.85
7f02-7f03 r--p 00000000 08:02 1234 /my dir/libcupti.so
";
        assert_eq!(
            mapped_cupti(maps),
            vec![
                "/site/nvidia/cu13/lib/libcupti.so.13",
                "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13.0.85",
                "/my dir/libcupti.so"
            ]
        );
    }

    #[test]
    fn nothing_mapped_is_fine() {
        assert!(mapped_cupti("").is_empty());
        assert!(mapped_cupti("garbage\n1 2\n").is_empty());
    }
}
