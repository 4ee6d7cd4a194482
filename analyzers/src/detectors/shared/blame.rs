//! Blame: which operator, annotation and source line a finding names, from
//! the pieces it claimed or the rows it points at.

use super::context::Cx;
use super::pieces::Piece;
use crate::names::display_source;
use gapscope_collectors::trace::{FxHashMap, GpuRow, Ns, OpRow, StrId, Strings};

/// `(operator, annotation, source)` as a finding names them.
pub(crate) type Blame = (Option<String>, Option<String>, Option<String>);

/// A blame grouped by names: operator and annotation name ids (`u32::MAX`
/// for none, so they sort last) and the source.
pub(crate) type NameKey = (u32, u32, StrId);

/// The rows behind a [`NameKey`]: one operator and annotation that carry it.
pub(crate) type BlameRows = (Option<OpRow>, Option<OpRow>);

impl Cx<'_> {
    /// Operator, annotation and source of the call that launched `gpu` row
    /// `row`.
    pub fn launch_blame(&self, row: GpuRow) -> Blame {
        let op =
            self.trace.links.gpu_launch[row.index()].and_then(|c| self.trace.links.runtime_op[c.index()]);
        let Some(o) = op.map(OpRow::index) else {
            return (None, None, None);
        };
        (
            self.name(self.outer_operator(op)),
            self.name(self.ops.annotation[o]),
            self.source(self.ops.source[o]),
        )
    }

    /// Name of cpu op row `row`.
    pub fn name(&self, row: Option<OpRow>) -> Option<String> {
        self.trace.op_name(row).map(str::to_string)
    }

    /// A sort key for the name of cpu op row `row`: its string id, after
    /// every name when there is no row.
    pub fn name_key(&self, row: Option<OpRow>) -> u32 {
        row.map_or(u32::MAX, |r| self.trace.cpu_ops.name[r.index()].0)
    }

    /// `row` and the CPU ranges around it (operators, annotations,
    /// steps), innermost first.
    pub fn ranges_up(&self, row: Option<OpRow>) -> impl Iterator<Item = OpRow> + '_ {
        std::iter::successors(row, |r| self.trace.cpu_ops.parent[r.index()])
    }

    /// The operators at or above `row` (annotations, steps and Python
    /// frames between them skipped), innermost first.
    pub fn operators_up(&self, row: Option<OpRow>) -> impl Iterator<Item = OpRow> + '_ {
        let operator_at = |r: Option<OpRow>| r.and_then(|r| self.ops.operator[r.index()]);
        std::iter::successors(operator_at(row), move |at| {
            operator_at(self.trace.cpu_ops.parent[at.index()])
        })
    }

    /// The outermost operator around row `row` (`aten::item` rather than
    /// the `aten::_local_scalar_dense` inside it): what the user called.
    pub fn outer_operator(&self, row: Option<OpRow>) -> Option<OpRow> {
        self.operators_up(row).last()
    }

    /// Display form of a source string id.
    pub fn source(&self, id: StrId) -> Option<String> {
        (id != Strings::EMPTY).then(|| display_source(self.trace.strings.get(id)).to_string())
    }

    /// The call site of a piece: its source frame, else its outermost
    /// operator, else its annotation.
    pub fn site(&self, p: &Piece) -> String {
        let seg = self.seg(p);
        let anchor = match p.blocking {
            Some(b) => self.trace.links.runtime_op[b.index()],
            None => seg.op,
        };
        let src = match (p.blocking, anchor) {
            (Some(_), Some(a)) => self.ops.source[a.index()],
            _ => seg.source,
        };
        if let Some(s) = self.source(src) {
            return s;
        }
        self.name(self.outer_operator(anchor))
            .or_else(|| self.name(seg.annotation))
            .unwrap_or_default()
    }

    /// "`op` at `file.py(N): fn`" for hints.
    pub fn where_(&self, op: &Option<String>, source: &Option<String>) -> String {
        match (op, source) {
            (Some(o), Some(s)) => format!("`{o}` at {s}"),
            (Some(o), None) => format!("`{o}`"),
            (None, Some(s)) => format!("the code at {s}"),
            (None, None) => "this code".to_string(),
        }
    }

    /// The operator name with the most idle time in `pieces` (pieces
    /// without an operator left out), summed over every row and site of
    /// that name, and that time; ties go to the smaller string id.
    pub fn heaviest_operator(&self, pieces: &[u32]) -> Option<(StrId, Ns)> {
        self.operators_by_time(pieces).first().copied()
    }

    /// Every operator name in `pieces` with its idle time (summed over its
    /// rows and sites), the most first, ties by the smaller string id.
    pub fn operators_by_time(&self, pieces: &[u32]) -> Vec<(StrId, Ns)> {
        let mut by: FxHashMap<StrId, Ns> = FxHashMap::default();
        for (p, idle) in self.runs(pieces, |p| p.seg) {
            if let Some(op) = self.seg(&p).op {
                *by.entry(self.trace.cpu_ops.name[op.index()]).or_default() += idle;
            }
        }
        let mut by: Vec<(StrId, Ns)> = by.into_iter().collect();
        by.sort_unstable_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        by
    }

    /// Dominant `(operator, annotation, source)` of pieces by idle time;
    /// sync pieces are blamed on the outermost operator around the call.
    pub fn blame(&self, pieces: &[u32]) -> Blame {
        let mut by: FxHashMap<NameKey, Ns> = FxHashMap::default();
        let name_row = |r: Option<OpRow>| self.name_key(r);
        let mut rep: FxHashMap<NameKey, BlameRows> = FxHashMap::default();
        for (p, idle) in self.runs(pieces, |p| (p.seg, p.blocking)) {
            let seg = self.seg(&p);
            let op = match p.blocking {
                Some(b) => self.outer_operator(self.trace.links.runtime_op[b.index()]),
                None => seg.op,
            };
            let key = (name_row(op), name_row(seg.annotation), seg.source);
            *by.entry(key).or_default() += idle;
            rep.entry(key).or_insert((op, seg.annotation));
        }
        let Some((key, _)) = by
            .into_iter()
            .max_by(|a, b| a.1.cmp(&b.1).then_with(|| b.0.cmp(&a.0)))
        else {
            return (None, None, None);
        };
        let (op, ann) = rep[&key];
        (self.name(op), self.name(ann), self.source(key.2))
    }
}
