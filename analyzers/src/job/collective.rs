//! Which collective a GPU row is, and the calls of one rank.
//!
//! A collective is recognised by its kernel name (`ncclKernel_AllReduce_*`,
//! `ncclDevKernel_AllGather_*`, `rcclGenericKernel`, see
//! [`is_communication_name`]) and named, where the trace says, by the
//! operator that issued it: the `nccl:all_to_all` annotation or the
//! `c10d::alltoall_base_` operator around its launch. The operator's name
//! wins because one kernel serves several collectives (NCCL runs an
//! all-to-all as `SendRecv` kernels).
//!
//! Which kernels are collectives is decided once, for single ranks and
//! jobs alike, by [`communication_rows`](crate::collectives::communication_rows);
//! this module only names the collective's kind.

use crate::names::is_communication_name;

/// The collective's kind, normalised across PyTorch and NCCL spellings:
/// `all_reduce`, `all_gather`, `reduce_scatter`, `all_to_all`, `broadcast`,
/// `reduce`, `send`, `recv`, `send_recv`, `barrier`, `gather`, `scatter`, or
/// `collective` when nothing says more.
pub fn kind_from_op(name: &str) -> Option<&'static str> {
    let rest = name
        .strip_prefix("nccl:")
        .or_else(|| name.strip_prefix("rccl:"))
        .or_else(|| name.strip_prefix("gloo:"))
        .or_else(|| name.strip_prefix("c10d::"))
        .or_else(|| name.strip_prefix("c10d_functional::"))
        .or_else(|| name.strip_prefix("_c10d_functional::"))?;
    normalise(rest)
}

/// The kind PyTorch's `Collective name` arg tells (`allreduce`,
/// `_allgather_base`, `all_to_all_single`).
pub fn kind_from_name(name: &str) -> Option<&'static str> {
    normalise(name.trim_start_matches('_'))
}

/// The kind a kernel name tells (`ncclKernel_AllReduce_RING_LL_Sum_float`
/// is `all_reduce`), for kernels [`is_communication_name`] accepts.
pub fn kind_from_kernel(name: &str) -> Option<&'static str> {
    if !is_communication_name(name) {
        return None;
    }
    // Longest names first: `ReduceScatter` before `Reduce`, `SendRecv`
    // before `Send`.
    const KERNEL_KINDS: [(&str, &str); 10] = [
        ("AllReduce", "all_reduce"),
        ("AllGather", "all_gather"),
        ("ReduceScatter", "reduce_scatter"),
        ("AllToAll", "all_to_all"),
        ("SendRecv", "send_recv"),
        ("Broadcast", "broadcast"),
        ("Reduce", "reduce"),
        ("Send", "send"),
        ("Recv", "recv"),
        ("Barrier", "barrier"),
    ];
    Some(
        KERNEL_KINDS
            .iter()
            .find(|(k, _)| name.contains(k))
            .map_or("collective", |&(_, kind)| kind),
    )
}

/// `all_reduce` from `allreduce_`, `all_reduce`, `_allgather_base_`,
/// `all_gather_into_tensor_coalesced`, `alltoall_base_`, ...
fn normalise(op: &str) -> Option<&'static str> {
    let mut s: String = op.to_ascii_lowercase().replace('_', "");
    for suffix in ["coalesced", "intotensor", "tensor", "base", "single"] {
        if let Some(t) = s.strip_suffix(suffix) {
            s = t.to_string();
        }
    }
    Some(match s.as_str() {
        "allreduce" => "all_reduce",
        "allgather" => "all_gather",
        "reducescatter" => "reduce_scatter",
        "alltoall" | "alltoallv" => "all_to_all",
        "broadcast" => "broadcast",
        "reduce" => "reduce",
        "send" => "send",
        "recv" | "recvanysource" => "recv",
        "barrier" => "barrier",
        "gather" => "gather",
        "scatter" => "scatter",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_from_operators() {
        for (name, kind) in [
            ("nccl:all_reduce", "all_reduce"),
            ("nccl:all_to_all", "all_to_all"),
            ("nccl:_all_gather_base", "all_gather"),
            ("nccl:_reduce_scatter_base", "reduce_scatter"),
            ("c10d::allreduce_", "all_reduce"),
            ("c10d::alltoall_base_", "all_to_all"),
            ("c10d::_allgather_base_", "all_gather"),
            ("c10d::allgather_into_tensor_coalesced_", "all_gather"),
            ("c10d::broadcast_", "broadcast"),
            ("c10d::recv_", "recv"),
            ("c10d::barrier", "barrier"),
            ("_c10d_functional::all_reduce", "all_reduce"),
        ] {
            assert_eq!(kind_from_op(name), Some(kind), "{name}");
        }
        for name in [
            "aten::mm",
            "record_param_comms",
            "nccl:wait",
            "c10d::monitored_barrier_x",
        ] {
            assert_eq!(kind_from_op(name), None, "{name}");
        }
    }

    #[test]
    fn kinds_from_kernels() {
        for (name, kind) in [
            (
                "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)",
                "all_reduce",
            ),
            (
                "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
                "all_gather",
            ),
            (
                "ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(x)",
                "reduce_scatter",
            ),
            (
                "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclWorkElem)",
                "send_recv",
            ),
            ("ncclDevKernel_Broadcast_RING_LL(x)", "broadcast"),
            ("rcclGenericKernel<1, false>(ncclDevComm*)", "collective"),
        ] {
            assert_eq!(kind_from_kernel(name), Some(kind), "{name}");
        }
        assert_eq!(kind_from_kernel("volta_sgemm_128x64_nn"), None);
    }

    #[test]
    fn kinds_from_collective_names() {
        for (name, kind) in [
            ("allreduce", "all_reduce"),
            ("_allgather_base", "all_gather"),
            ("_reduce_scatter_base", "reduce_scatter"),
            ("all_to_all_single", "all_to_all"),
            ("allgather_into_tensor_coalesced", "all_gather"),
            ("broadcast", "broadcast"),
        ] {
            assert_eq!(kind_from_name(name), Some(kind), "{name}");
        }
        assert_eq!(kind_from_name("wait"), None);
    }
}
