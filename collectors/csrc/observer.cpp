// gapscope operator observer: a global RecordFunction callback that records
// every aten op, autograd node and TorchScript/user range (name, start, end,
// logical + OS thread, sequence number, input shapes, nesting) into
// per-thread buffers, and a C API that Rust reads them through
// (collectors/src/torch/observer.rs).
//
// Cost when off: the callback is added at the first start and removed at
// stop, so a process that never records pays nothing, and one that stopped
// pays what libtorch pays with no callbacks at all.

#include <ATen/Context.h>
#include <ATen/record_function.h>
#include <ATen/core/ivalue.h>
#include <c10/core/CachingDeviceAllocator.h>
#include <torch/csrc/autograd/profiler_kineto.h>
#include <torch/csrc/profiler/stubs/base.h>

#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace {

struct Event {
  std::string name;
  std::string shapes;  // Kineto's "Input Dims": [[8, 3, 64, 64], [], ...]
  int64_t start_ns = 0;
  int64_t end_ns = -1;
  int64_t seq = -1;
  uint64_t thread = 0;      // RecordFunction's logical thread id
  uint64_t fwd_thread = 0;  // forward thread of a backward node
  int64_t os_tid = 0;
  int32_t depth = 0;
  int64_t parent = -1;  // index in the same thread's buffer
  uint8_t scope = 0;
};

struct Buffer {
  std::deque<Event> events;  // deque: references stay valid on push_back
  std::vector<int64_t> open;  // stack of open events (indices)
  int64_t os_tid = 0;
};

std::mutex g_mu;
std::vector<Buffer*> g_buffers;  // every thread's buffer, never freed
std::atomic<uint64_t> g_generation{0};
std::atomic<bool> g_on{false};
bool g_registered = false;
at::CallbackHandle g_handle = 0;
bool g_record_shapes = true;

// The merged view handed to Rust after stop: each event with the merged
// index of its buffer's first event.
std::vector<std::pair<const Event*, int64_t>> g_merged;

thread_local Buffer* t_buffer = nullptr;
thread_local std::string g_error;  // gs_last_error
thread_local uint64_t t_generation = 0;

int64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

Buffer* buffer() {
  uint64_t gen = g_generation.load(std::memory_order_acquire);
  if (t_buffer == nullptr) {
    t_buffer = new Buffer();
    t_buffer->os_tid = int64_t(syscall(SYS_gettid));
    std::lock_guard<std::mutex> lock(g_mu);
    g_buffers.push_back(t_buffer);
  }
  if (t_generation != gen) {
    // start() cleared the buffers of earlier recordings.
    t_generation = gen;
    t_buffer->open.clear();
  }
  return t_buffer;
}

struct Ctx : at::ObserverContext {
  Buffer* buf;
  int64_t index;
  Ctx(Buffer* b, int64_t i) : buf(b), index(i) {}
};

void append_shapes(std::string& out, const at::RecordFunction& fn) {
  out.push_back('[');
  bool first = true;
  for (const c10::IValue& v : fn.inputs()) {
    if (!first) out += ", ";
    first = false;
    out.push_back('[');
    if (v.isTensor()) {
      const at::Tensor& t = v.toTensor();
      if (t.defined()) {
        auto sizes = t.sizes();
        for (size_t i = 0; i < sizes.size(); i++) {
          if (i) out += ", ";
          out += std::to_string(sizes[i]);
        }
      }
    }
    out.push_back(']');
  }
  out.push_back(']');
}

std::unique_ptr<at::ObserverContext> on_enter(const at::RecordFunction& fn) {
  if (!g_on.load(std::memory_order_relaxed)) return nullptr;
  Buffer* b = buffer();
  Event e;
  e.name = fn.name();
  e.seq = fn.seqNr();
  e.thread = fn.threadId();
  e.fwd_thread = fn.forwardThreadId();
  e.os_tid = b->os_tid;
  e.scope = uint8_t(fn.scope());
  e.depth = int32_t(b->open.size());
  e.parent = b->open.empty() ? -1 : b->open.back();
  if (g_record_shapes && fn.needsInputs()) {
    // Some ops are recorded without their inputs (libtorch asserts when
    // asked for them then): keep the event, without shapes, rather than
    // lose it to the exception.
    try {
      append_shapes(e.shapes, fn);
    } catch (...) {
      e.shapes.clear();
    }
  }
  e.start_ns = now_ns();
  int64_t index = int64_t(b->events.size());
  b->events.push_back(std::move(e));
  b->open.push_back(index);
  return std::make_unique<Ctx>(b, index);
}

void on_exit(const at::RecordFunction&, at::ObserverContext* c) {
  int64_t t = now_ns();
  auto* ctx = static_cast<Ctx*>(c);
  if (ctx == nullptr) return;
  Buffer* b = ctx->buf;
  if (size_t(ctx->index) >= b->events.size()) return;  // cleared meanwhile
  b->events[ctx->index].end_ns = t;
  // Ops end in LIFO order on their thread; an async end elsewhere only
  // leaves its entry to be dropped here.
  auto& open = b->open;
  for (size_t i = open.size(); i-- > 0;) {
    if (open[i] == ctx->index) {
      open.erase(open.begin() + i);
      break;
    }
  }
}

// Runs `f`, turning a C++ exception into -1 with its message in g_error
// (gs_last_error): none may cross into Rust.
template <typename F>
int guarded(F&& f) {
  try {
    f();
    return 0;
  } catch (const std::exception& e) {
    g_error = e.what();
    return -1;
  } catch (...) {
    g_error = "unknown C++ exception";
    return -1;
  }
}

}  // namespace

extern "C" {

// Mirrors `RawEvent` in observer.rs.
struct GsOpEvent {
  const char* name;
  const char* shapes;
  int64_t start_ns;
  int64_t end_ns;
  int64_t seq;
  uint64_t thread;
  uint64_t fwd_thread;
  int64_t os_tid;
  int64_t parent;  // index into the merged list, -1 for none
  int32_t depth;
  uint8_t scope;
};

// Starts recording (clears the previous recording). Returns 0, or -1 when
// libtorch refused the callback.
int gs_observer_start(int record_shapes) {
  try {
    std::lock_guard<std::mutex> lock(g_mu);
    for (Buffer* b : g_buffers) b->events.clear();
    g_merged.clear();
    g_record_shapes = record_shapes != 0;
    g_generation.fetch_add(1, std::memory_order_release);
    if (!g_registered) {
      g_handle = at::addGlobalCallback(
          at::RecordFunctionCallback(on_enter, on_exit)
              .needsInputs(g_record_shapes)
              .needsIds(true)
              .scopes({at::RecordScope::FUNCTION,
                       at::RecordScope::BACKWARD_FUNCTION,
                       at::RecordScope::TORCHSCRIPT_FUNCTION,
                       at::RecordScope::USER_SCOPE}));
      g_registered = true;
    }
    g_on.store(true, std::memory_order_release);
    return 0;
  } catch (...) {
    return -1;
  }
}

// Stops recording and merges the thread buffers; returns the event count.
// Events stay readable with gs_observer_get until the next start.
int64_t gs_observer_stop() {
  g_on.store(false, std::memory_order_release);
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_registered) {
    at::removeCallback(g_handle);
    g_registered = false;
  }
  g_merged.clear();
  for (Buffer* b : g_buffers) {
    int64_t base = int64_t(g_merged.size());
    for (const Event& e : b->events) g_merged.emplace_back(&e, base);
  }
  return int64_t(g_merged.size());
}

// Copies event `i` (0 <= i < the count stop returned). Parents are
// translated to merged indices. Returns 0, or -1 when out of range.
int gs_observer_get(int64_t i, GsOpEvent* out) {
  if (i < 0 || size_t(i) >= g_merged.size()) return -1;
  const Event& e = *g_merged[size_t(i)].first;
  out->name = e.name.c_str();
  out->shapes = e.shapes.c_str();
  out->start_ns = e.start_ns;
  out->end_ns = e.end_ns;
  out->seq = e.seq;
  out->thread = e.thread;
  out->fwd_thread = e.fwd_thread;
  out->os_tid = e.os_tid;
  out->depth = e.depth;
  out->scope = e.scope;
  out->parent = e.parent < 0 ? -1 : g_merged[size_t(i)].second + e.parent;
  return 0;
}

// CLOCK_MONOTONIC now, in ns: the clock the events use.
int64_t gs_observer_now_ns() { return now_ns(); }

// Peak bytes allocated by the caching allocator of `device_type` (1 = CUDA)
// device `index` since the last reset; -1 when that backend is not loaded.
int64_t gs_device_peak_allocated(int device_type, int index) {
  try {
    auto* a = c10::getDeviceAllocator(c10::DeviceType(device_type));
    if (a == nullptr || !a->initialized()) return -1;
    auto stats = a->getDeviceStats(c10::DeviceIndex(index));
    return stats.allocated_bytes[size_t(c10::CachingAllocator::StatType::AGGREGATE)].peak;
  } catch (...) {
    return -1;
  }
}

// Resets the peak of gs_device_peak_allocated. Returns 0, or -1.
int gs_device_reset_peak(int device_type, int index) {
  try {
    auto* a = c10::getDeviceAllocator(c10::DeviceType(device_type));
    if (a == nullptr || !a->initialized()) return -1;
    a->resetPeakStats(c10::DeviceIndex(index));
    return 0;
  } catch (...) {
    return -1;
  }
}

// Returns the cached free blocks of `device_type`'s caching allocator to the
// driver (PyTorch's torch.cuda.empty_cache()). Returns 0, or -1 when that
// backend is not loaded.
int gs_device_empty_cache(int device_type) {
  try {
    auto* a = c10::getDeviceAllocator(c10::DeviceType(device_type));
    if (a == nullptr || !a->initialized()) return -1;
    a->emptyCache();
    return 0;
  } catch (...) {
    return -1;
  }
}

// Allows (1) or forbids (0) TF32 in cuBLAS matmuls and cuDNN convolutions
// (PyTorch's torch.backends.{cuda.matmul,cudnn}.allow_tf32). Returns 0, or
// -1 when libtorch refused.
int gs_set_allow_tf32(int allow) {
  try {
    at::globalContext().setAllowTF32CuBLAS(allow != 0);
    at::globalContext().setAllowTF32CuDNN(allow != 0);
    return 0;
  } catch (...) {
    return -1;
  }
}

// NVTX ranges, for a run under `gapscope record` (or any CUDA profiler):
// gs_nvtx_start turns on libtorch's NVTX profiler state on the calling
// thread, as Python's torch.autograd.profiler.emit_nvtx() does, so every
// operator (and, through autograd's thread-local state, every backward
// node) pushes a range named `aten::mm, seq = N, op_id = M`. The ranges go
// through the CUDA profiler stubs, which libtorch_cuda registers: without
// it loaded, every operator would fail, so it is refused here (-2).
// Returns 0, -1 when libtorch refused (the reason in gs_last_error), or -2.
int gs_nvtx_start(int record_shapes) {
  if (!torch::profiler::impl::cudaStubs()->enabled()) {
    g_error = "libtorch_cuda is not loaded, so libtorch cannot emit NVTX ranges";
    return -2;
  }
  return guarded([&] {
    torch::profiler::impl::ProfilerConfig config(torch::profiler::impl::ProfilerState::NVTX,
                                                 record_shapes != 0);
    torch::autograd::profiler::enableProfiler(config, {});
  });
}

// Turns the NVTX profiler state off again. Returns 0, or -1.
int gs_nvtx_stop() {
  return guarded([] { torch::autograd::profiler::disableProfiler(); });
}

// Pushes (name non-null) or pops (null) one NVTX range on the calling
// thread: the `ProfilerStep#N` around each timed iteration. Returns 0, or -1.
int gs_nvtx_range(const char* name) {
  return guarded([&] {
    const auto* stubs = torch::profiler::impl::cudaStubs();
    if (name != nullptr) {
      stubs->rangePush(name);
    } else {
      stubs->rangePop();
    }
  });
}

// The reason for the calling thread's last -1 (empty when none).
const char* gs_last_error() { return g_error.c_str(); }

}  // extern "C"
