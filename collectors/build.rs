//! Build script. Only the `torch` feature needs one: it compiles the operator
//! observer shim (csrc/observer.cpp) against libtorch's headers and records
//! where libtorch lives so test binaries find it at run time.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    #[cfg(feature = "torch")]
    torch::build();
}

#[cfg(feature = "torch")]
mod torch {
    use std::path::PathBuf;

    pub fn build() {
        println!("cargo:rerun-if-changed=csrc/observer.cpp");
        // torch-sys (a direct dependency, `links = "tch"`) reports libtorch's
        // lib dir; the headers sit beside it.
        let lib = PathBuf::from(
            std::env::var("DEP_TCH_LIBTORCH_LIB")
                .expect("torch-sys sets DEP_TCH_LIBTORCH_LIB (LIBTORCH=<site-packages>/torch)"),
        );
        let root = lib.parent().expect("libtorch lib dir has a parent").to_path_buf();
        cc::Build::new()
            .cpp(true)
            .pic(true)
            .std("c++17")
            .include(root.join("include"))
            .include(root.join("include/torch/csrc/api/include"))
            // The pip wheels are built with the new libstdc++ ABI.
            .define("_GLIBCXX_USE_CXX11_ABI", "1")
            .define("GLOG_USE_GLOG_EXPORT", None)
            .flag_if_supported("-Wno-unused-parameter")
            .warnings(false)
            .file("csrc/observer.cpp")
            .compile("gapscope_torch_observer");
        // Tests and examples of this crate find libtorch without
        // LD_LIBRARY_PATH. DT_RUNPATH: LD_LIBRARY_PATH still wins, so another
        // machine's libtorch can be swapped in.
        println!("cargo:rustc-link-arg=-Wl,-rpath,{}", lib.display());
        println!("cargo:rustc-env=GAPSCOPE_LIBTORCH_LIB={}", lib.display());
    }
}
