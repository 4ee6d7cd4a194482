//! The runtime API names the importers themselves must recognise (a copy
//! call's size goes to its copy). The analyzers' vocabulary of names
//! (`gapscope_analyzers::names`) re-exports these, so a name means the
//! same thing in the importer and in the analysis.

/// A runtime API name without the leading underscores some tracers add.
pub fn api_name(name: &str) -> &str {
    name.trim_start_matches('_')
}

/// Memcpy: a memory copy call (`cudaMemcpy`, `cudaMemcpyAsync`,
/// `cuMemcpyHtoD`, `hipMemcpyWithStream`, ...).
pub fn is_memcpy_api(name: &str) -> bool {
    let api = api_name(name);
    ["cudaMemcpy", "cuMemcpy", "hipMemcpy"]
        .iter()
        .any(|p| api.starts_with(p))
}
