//! `gapscope record [-o run.gst] -- CMD ARGS...`: runs any program so that
//! every one of its processes that starts CUDA records itself through
//! CUPTI, then merges the per-process captures into one `.gst`. The
//! machinery (which libcupti, the injection library's environment, signal
//! forwarding, scanning and merging the captures) is the collectors'
//! [`gapscope_collectors::record`]; this module runs it and says what
//! happened, on stderr.

use super::Exit;
use crate::cli::record::RecordArgs;
use anyhow::{bail, Result};
use gapscope_collectors::capture;
use gapscope_collectors::record::{
    exit_code, merge_captures, shell_words, Counts, Found, Merged, RecordOptions, Recording,
};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Exit status when the program succeeded but no process wrote a capture.
pub const NOTHING_RECORDED: u8 = 4;
/// Exit status when the command cannot be executed (as in sh).
pub const CANNOT_RUN: u8 = 126;
/// Exit status when the command is not found (as in sh).
pub const NOT_FOUND: u8 = 127;

/// Runs `gapscope record`; the exit status is the program's (see
/// [`EXAMPLES`] for the others). `Err` is a setup or write failure (2).
pub fn run(args: &RecordArgs) -> Result<Exit> {
    let shown = shell_words(&args.command);
    let output = args
        .output
        .clone()
        .unwrap_or_else(|| PathBuf::from(if args.per_process { "run" } else { "run.gst" }));
    // A bad -o is said before the program runs, not after it: the
    // directory for --per-process is made now.
    if args.per_process {
        if output.exists() && !output.is_dir() {
            bail!(
                "{}: not a directory; --per-process writes one capture per process into the -o directory",
                output.display()
            );
        }
        std::fs::create_dir_all(&output).map_err(|e| {
            anyhow::anyhow!(
                "{}: cannot create the directory for the captures ({e}); name one that can be made and written",
                output.display()
            )
        })?;
    }
    let opts = RecordOptions {
        nvtx: !args.no_nvtx,
        api_calls: !args.no_api_calls,
    };
    let mut recording = Recording::prepare(&args.command, &opts)?;
    note(&format!(
        "recording `{shown}` with libcupti {} (from {})",
        recording.cupti.path.display(),
        recording.cupti.source
    ));
    for line in &recording.notes {
        note(line);
    }
    let status = match recording.run() {
        Ok(s) => s,
        Err(e) => {
            let program = args.command[0].to_string_lossy();
            return Ok(Exit(match e.kind() {
                io::ErrorKind::NotFound => {
                    note(&format!("cannot run `{program}`: command not found"));
                    NOT_FOUND
                }
                _ => {
                    note(&format!("cannot run `{program}`: {e}"));
                    CANNOT_RUN
                }
            }));
        }
    };
    let child_code = exit_code(status);

    let found = recording.captures()?;
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
        return Ok(Exit(if child_code != 0 {
            child_code
        } else {
            NOTHING_RECORDED
        }));
    }
    let merged = match merge_captures(&found.captures, &shown) {
        Ok(m) => m,
        Err(e) if child_code != 0 => {
            note(&e.to_string());
            return Ok(Exit(child_code));
        }
        Err(e) => return Err(e.into()),
    };
    for line in &merged.unreadable {
        note(line);
    }
    if args.per_process {
        let written = match write_each(&found, &output) {
            Ok(w) => w,
            Err(e) if child_code != 0 => {
                note(&e.to_string());
                return Ok(Exit(child_code));
            }
            Err(e) => return Err(e),
        };
        let mut line = summary(&merged, &found);
        line.push_str(&format!(
            " Wrote {} capture{} into {} ({}); next: gapscope analyze {}",
            written.len(),
            plural(written.len()),
            output.display(),
            written.join(", "),
            output.display()
        ));
        note(&line);
        return Ok(Exit(child_code));
    }
    let output = &output;
    if let Err(e) = capture::write_file(&merged.trace, output) {
        if child_code != 0 {
            note(&e.to_string());
            return Ok(Exit(child_code));
        }
        bail!("{e}");
    }
    let size = std::fs::metadata(output).map(|m| m.len()).unwrap_or(0);
    let mut line = summary(&merged, &found);
    line.push_str(&format!(
        " Wrote {} ({}); next: gapscope analyze {}",
        output.display(),
        gapscope_analyzers::format::bytes(size),
        output.display()
    ));
    note(&line);
    Ok(Exit(child_code))
}

/// `--per-process`: each readable capture copied into `dir` (made before the
/// program ran) as
/// `rank-<R>.gst` (the RANK its process had at exit, when every capture has
/// a different one) or `pid-<P>.gst`. Returns the file names written.
fn write_each(found: &Found, dir: &Path) -> Result<Vec<String>> {
    let mut parts = Vec::new();
    for (pid, path) in &found.captures {
        // Only the metadata is read; unreadable captures were reported by
        // the merge and are left out.
        let info = std::fs::read(path)
            .ok()
            .and_then(|b| capture::info(&b, &path.display().to_string()).ok());
        if let Some(info) = info {
            parts.push((*pid, path, info.rank));
        }
    }
    let mut ranks: Vec<i64> = parts.iter().filter_map(|p| p.2).collect();
    ranks.sort_unstable();
    ranks.dedup();
    let by_rank = ranks.len() == parts.len();
    // Named and listed in rank order (else pid order), not in the order the
    // processes were found: that follows their pids, which wrap around (a
    // child at pid 302 after its parent at 32767).
    if by_rank {
        parts.sort_by_key(|p| p.2);
    } else {
        parts.sort_by_key(|p| p.0);
    }
    let mut names = Vec::new();
    for (pid, path, rank) in parts {
        let name = match rank {
            Some(r) if by_rank => format!("rank-{r}.gst"),
            _ => format!("pid-{pid}.gst"),
        };
        let to = dir.join(&name);
        std::fs::copy(path, &to).map_err(|e| anyhow::anyhow!("{}: cannot write ({e})", to.display()))?;
        names.push(name);
    }
    Ok(names)
}

/// One `gapscope:` line on stderr.
fn note(msg: &str) {
    let _ = writeln!(io::stderr().lock(), "gapscope: {msg}");
}

/// The one-paragraph summary `record` prints, up to where it says what it
/// wrote.
fn summary(merged: &Merged, found: &Found) -> String {
    let c = Counts::of(&merged.trace);
    let n = merged.pids.len();
    let pids: Vec<String> = merged.pids.iter().map(|p| p.to_string()).collect();
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
    let failed = found.error_pids().len() + found.started_without_capture().len() + merged.unreadable.len();
    if failed > 0 {
        s.push_str(&format!(
            " {failed} other process{} could not be recorded (see above).",
            if failed == 1 { "" } else { "es" }
        ));
    }
    s
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gapscope_collectors::record::scan_captures;
    use gapscope_collectors::trace::{
        CopyKind, GpuActivity, GpuKind, MemKind, RuntimeCall, Trace, TraceBuilder,
    };

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

    /// `--per-process` names and lists captures by rank: the parent (rank
    /// 0) at pid 32767 and its child (rank 1) at pid 302 after the pids
    /// wrapped around are `rank-0.gst, rank-1.gst`, in that order.
    #[test]
    fn per_process_captures_are_listed_by_rank_not_pid() {
        let d = std::env::temp_dir().join(format!("gapscope-each-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("out")).unwrap();
        let base = 1_700_000_000_000_000_000i64;
        let mut found = Found::default();
        for (pid, rank) in [(302u32, 1i64), (32767, 0)] {
            let mut t = process(pid as i64, base, 1);
            t.meta.rank = Some(rank);
            t.meta.world_size = Some(2);
            let path = d.join(format!("gapscope-{pid}.gst"));
            capture::write_file(&t, &path).unwrap();
            found.captures.push((pid, path));
        }
        let names = write_each(&found, &d.join("out")).unwrap();
        assert_eq!(names, ["rank-0.gst", "rank-1.gst"]);
        // Without ranks, by pid.
        let mut found = Found::default();
        for pid in [32767u32, 302] {
            let path = d.join(format!("gapscope-{pid}.gst"));
            capture::write_file(&process(pid as i64, base, 1), &path).unwrap();
            found.captures.push((pid, path));
        }
        let names = write_each(&found, &d.join("out")).unwrap();
        assert_eq!(names, ["pid-302.gst", "pid-32767.gst"]);
        let _ = std::fs::remove_dir_all(&d);
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
        let back = crate::inputs::load(&out, &import).unwrap();
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
        let summary = summary(&merged, &found);
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

        let analysis = gapscope_analyzers::analyze(&back, &Default::default());
        assert_eq!(analysis.devices.len(), 1);
        assert_eq!(analysis.diagnostics.rows.gpu, 10);
        assert_eq!(
            analysis.diagnostics.gpu_rows_without_launch, 2,
            "the copies had no launch call"
        );
        let _ = std::fs::remove_dir_all(d);
    }
}
