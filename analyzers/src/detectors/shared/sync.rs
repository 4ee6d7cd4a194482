//! The sync family's shared part (D5, D6, D7, D9): what a blocking call
//! waits on, claimed pieces grouped by call site, the drain after a sync,
//! and the draft that lets the blocking calls return without waiting.

use super::blame::Blame;
use super::claims::NOISE_NS;
use super::context::Cx;
use super::draft::Draft;
use super::pieces::{Piece, TINY_COPY_BYTES};
use crate::causes::Cause;
use crate::detectors::{MAX_EVIDENCE, MAX_GROUPS};
use gapscope_collectors::trace::{CallRow, CopyKind, GpuKind, GpuRow, Ns};
use std::collections::HashSet;

/// What a blocking call waits on, for the sync-family detectors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SyncKind {
    /// A device→host copy: `.item()`, `.cpu()`, `nonzero` (D5).
    DtoHRead,
    /// A host→device copy of at most [`TINY_COPY_BYTES`] (D7).
    TinyHtoD,
    /// Any other copy or memset made synchronous (D9).
    Copy,
    /// A synchronize with no copy involved (D6).
    Plain,
}

/// Claimed pieces of one call site, with what the sync detectors report.
pub(crate) struct SiteGroup {
    pub pieces: Vec<u32>,
    pub idle_ns: Ns,
    /// Distinct blocking calls and calls of interest behind the pieces.
    pub calls: Vec<CallRow>,
    /// Distinct copy rows behind them.
    pub copies: Vec<GpuRow>,
    /// Largest copy size among them.
    pub max_bytes: u64,
    pub blame: Blame,
}

impl Cx<'_> {
    /// What blocking call `call` waits on, and the copy row if any.
    pub fn sync_kind(&self, call: CallRow) -> (SyncKind, Option<GpuRow>) {
        let Some(row) = self.paired_copy(call) else {
            return (SyncKind::Plain, None);
        };
        let g = &self.trace.gpu;
        let r = row.index();
        let kind = match (g.kind[r], g.copy_kind[r]) {
            (GpuKind::Memcpy, CopyKind::DtoH) => SyncKind::DtoHRead,
            (GpuKind::Memcpy, CopyKind::HtoD) if g.bytes[r] <= TINY_COPY_BYTES => SyncKind::TinyHtoD,
            _ => SyncKind::Copy,
        };
        (kind, Some(row))
    }

    /// Claims the pieces `pred` accepts, groups them by call site, and
    /// keeps the groups of at least [`NOISE_NS`] (releasing the others).
    /// `pred` holds only of pieces with a call, a blocking call or a class
    /// ([`take_kept`](Self::take_kept)): sites are calls.
    ///
    /// With `drain`, a group's drain after its syncs
    /// ([`drain_after`](Self::drain_after)) counts toward that floor: a
    /// read whose own wait is short can still leave the GPU empty for long.
    pub fn site_groups(
        &self,
        claims: &mut [bool],
        drain: bool,
        pred: impl Fn(&Piece) -> bool,
    ) -> Vec<SiteGroup> {
        let taken = self.take_kept(claims, pred);
        let mut all = self.groups_all(taken, |p| self.site(p));
        let mut out = Vec::new();
        for (n, (_, pieces)) in all.drain(..).enumerate() {
            let idle_ns = self.total(&pieces);
            let weight = idle_ns + if drain { self.drain_after(&pieces) } else { 0 };
            if weight < NOISE_NS || n >= MAX_GROUPS {
                if weight < NOISE_NS {
                    for &i in &pieces {
                        claims[i as usize] = false;
                    }
                }
                // Past MAX_GROUPS the pieces stay claimed but unreported:
                // they are still this pattern, just smaller.
                continue;
            }
            let mut calls: Vec<CallRow> = Vec::new();
            let mut copies: Vec<GpuRow> = Vec::new();
            let mut max_bytes = 0;
            for &i in &pieces {
                let p = &self.piece(i);
                for c in [p.blocking, p.call].into_iter().flatten() {
                    calls.push(c);
                    if let Some(row) = self.paired_copy(c) {
                        copies.push(row);
                        max_bytes = max_bytes.max(self.trace.gpu.bytes[row.index()]);
                    }
                }
            }
            calls.sort_unstable();
            calls.dedup();
            copies.sort_unstable();
            copies.dedup();
            let blame = self.blame(&pieces);
            out.push(SiteGroup {
                pieces,
                idle_ns,
                calls,
                copies,
                max_bytes,
                blame,
            });
        }
        out
    }

    /// The drain after the blocking calls of `pieces`: for each claimed
    /// sync piece, the rest of its gap after the call returned (up to the
    /// next blocking call's wait), whoever claimed it; nothing for a gap no
    /// GPU work ends.
    ///
    /// A sync empties the GPU's queue; when it returns, the GPU stays empty
    /// until the host has launched again, so this idle exists because of
    /// the sync. It is already claimed (mostly by D2, as the host work that
    /// follows), so it is not claimed again; it only bounds what removing
    /// the sync can save, which the replay decides: whether the host, no
    /// longer waiting, would have queued work ahead of the GPU.
    pub fn drain_after(&self, pieces: &[u32]) -> Ns {
        let mut seen: HashSet<usize> = HashSet::new();
        for &i in pieces {
            if self.piece(i).cause != Cause::Sync || !self.followed_by_work(i) {
                continue;
            }
            let mut j = i as usize + 1;
            while j < self.n_pieces()
                && self.piece(j).start == self.piece(j - 1).end
                && self.piece(j).cause != Cause::Sync
            {
                seen.insert(j);
                j += 1;
            }
        }
        seen.iter().map(|&j| self.piece(j).dur()).sum()
    }

    /// A draft for a sync-family group: the edit lets its blocking calls
    /// return without waiting and removes the CPU time of its other pieces
    /// (those inside copy calls).
    pub fn sync_draft(
        &self,
        g: &SiteGroup,
        detector: &'static str,
        id: &'static str,
        title: String,
        hint: String,
    ) -> Draft {
        let mut d = Draft::new(detector, id, title, hint);
        d.occurrences = g.calls.len() as u64;
        d.pieces = g.pieces.clone();
        d.blame = Some(g.blame.clone());
        d.remove_piece_cpu = false;
        let rt = &self.trace.runtime;
        for &i in &g.pieces {
            let p = &self.piece(i);
            if let Some(blocking) = p.blocking {
                d.edit.no_wait.push(blocking);
                // The wait removed from the other launching threads too
                // (the autograd thread waits for the one that synced).
                let b = blocking.index();
                d.edit.remove_cpu.push((rt.thread[b], (rt.start[b], rt.end[b])));
            } else if let Some(t) = self.thread(p) {
                d.edit.remove_cpu.push((t, (p.start, p.end)));
            }
        }
        d.edit.remove_cpu.sort_unstable();
        d.edit.remove_cpu.dedup();
        d.edit.no_wait.sort_unstable();
        d.edit.no_wait.dedup();
        for &c in g.calls.iter().take(MAX_EVIDENCE / 2) {
            d.evidence.push(self.runtime_evidence(c));
        }
        d
    }
}
