//! D16, CUDA/HIP graph capture and instantiation: one-off setup, not a
//! loop to speed up.
//!
//! ```text
//! stream 7    [k]                                                    [k]
//! thread 1    [cudaStreamBeginCapture][L][L][L]...[EndCapture][Instantiate]
//!                                      (launches recorded, nothing runs)
//! pieces         [graph_capture...................................]
//!                -> cuda_graph_capture
//! ```
//!
//! Evidence: the pieces of cause `graph_capture` (the issuing thread was
//! between a `*StreamBeginCapture` and its `*StreamEndCapture`, or in the
//! user range around that (vLLM's `capture_32_FULL`), or inside a
//! `*GraphInstantiate*`, `*GraphUpload`, `*GraphDestroy` or
//! `*GraphExecDestroy` call: [`GraphSetup`](crate::evidence::GraphSetup)).
//! While a stream captures, launches are recorded into the graph and run
//! nothing, so the device idles by design; the graph then replays with one
//! launch per step. Claimed before any detector that would read the host
//! work inside a capture as a hot loop (D2's CPU-bound ranges, D14's slow
//! and allocator calls). No saving: the setup runs once per shape, not per
//! step. Attribution: the code around the capture's `BeginCapture` call.

use super::{Cx, Draft, MAX_EVIDENCE};
use crate::causes::Cause;
use crate::format::duration;
use crate::names::is_capture_begin_api;

pub(super) fn detect(cx: &Cx, claims: &mut [bool]) -> Option<Draft> {
    let pieces = cx.take_of(claims, &[Cause::GraphCapture], |_| true);
    if pieces.is_empty() {
        return None;
    }
    let idle = cx.total(&pieces);
    let (ws, we) = cx.window;
    let setups: Vec<_> = cx
        .ev
        .graph_setup
        .iter()
        .filter(|g| g.start < we && g.end > ws)
        .collect();
    let rt = &cx.trace.runtime;
    let is_capture = |g: &&&crate::evidence::GraphSetup| {
        g.call
            .is_none_or(|c| is_capture_begin_api(cx.trace.strings.get(rt.name[c.index()])))
    };
    let captures = setups.iter().filter(is_capture).count();
    let graph = cx.platform.name();
    let title = format!(
        "{} of idle time is {graph} graph capture and instantiation ({captures} {}): one-off setup",
        duration(idle),
        if captures == 1 { "capture" } else { "captures" }
    );
    let hint = format!(
        "While a stream captures a {graph} graph (`torch.cuda.graph`, \
         `torch.compile(mode=\"reduce-overhead\")`, vLLM and SGLang at startup), its launches \
         are recorded into the graph and nothing runs, and instantiating the graph takes host \
         time too; that happens once per captured shape, not once per step, so this idle time \
         is setup and no fix to the step removes it. To see the steady state, profile after \
         the graphs are captured (start the profiler after warm-up), where each step is one \
         graph replay."
    );
    let mut d = Draft::new("D16", "cuda_graph_capture", title, hint);
    d.occurrences = setups.len() as u64;
    d.estimable = false;
    for c in setups.iter().filter_map(|g| g.call).take(MAX_EVIDENCE / 2) {
        d.evidence.push(cx.runtime_evidence(c));
    }
    if let Some(c) = setups.iter().filter(is_capture).find_map(|g| g.call) {
        let op = cx.trace.links.runtime_op[c.index()];
        d.blame = Some((
            cx.name(cx.outer_operator(op)),
            op.and_then(|o| cx.name(cx.ops.annotation[o.index()])),
            op.and_then(|o| cx.source(cx.ops.source[o.index()])),
        ));
    }
    d.pieces = pieces;
    Some(d)
}
