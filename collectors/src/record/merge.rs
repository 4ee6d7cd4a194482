//! What the recorded processes left behind: each process that started CUDA
//! writes `gapscope-<pid>.started`, then `gapscope-<pid>.gst` at exit, or
//! `gapscope-<pid>.err` when it could not record; [`merge_captures`] makes
//! one trace of the captures.

use super::RecordError;
use crate::capture;
use crate::trace::{CopyKind, CpuOpKind, GpuKind, MemKind, Trace};
use std::path::{Path, PathBuf};

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
    pub fn error_pids(&self) -> Vec<u32> {
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
    pub fn started_without_capture(&self) -> Vec<(u32, ())> {
        self.started
            .iter()
            .filter(|&&p| !self.captures.iter().any(|(c, _)| *c == p))
            .filter(|p| !self.error_pids().contains(p))
            .map(|&p| (p, ()))
            .collect()
    }
}

/// Reads the capture directory.
pub fn scan_captures(dir: &Path) -> Result<Found, RecordError> {
    let mut found = Found::default();
    let entries = std::fs::read_dir(dir).map_err(|e| {
        RecordError(format!(
            "{}: cannot read the capture directory ({e})",
            dir.display()
        ))
    })?;
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
    /// One line for each capture that could not be read and was left out.
    pub unreadable: Vec<String>,
}

/// Reads every capture (an unreadable one is left out and said in
/// [`Merged::unreadable`]) and merges them, named `source`.
pub fn merge_captures(captures: &[(u32, PathBuf)], source: &str) -> Result<Merged, RecordError> {
    let mut parts = Vec::new();
    let mut pids = Vec::new();
    let mut unreadable = Vec::new();
    for (pid, path) in captures {
        match capture::read_file(path) {
            Ok(t) => {
                parts.push(t);
                pids.push(*pid);
            }
            Err(e) => unreadable.push(format!("pid {pid}: its capture is left out: {e}")),
        }
    }
    if parts.is_empty() {
        return Err(RecordError(format!(
            "none of the {} captures could be read ({})",
            captures.len(),
            unreadable.join("; ")
        )));
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
