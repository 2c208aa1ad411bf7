#include "cli/demo.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "cli/report.h"
#include "db/profile_writer.h"
#include "device/host/host_platform.h"
#include "replay/controller.h"
#include "replay/interceptor.h"
#include "replay/inventory.h"
#include "trace/records.h"

namespace gpuprof::cli {
namespace {

// The correlation id of the launch the calling thread is making (0: none), for the replay record
// sink, which the controller calls on the launching thread.
thread_local std::uint64_t launching_correlation = 0;

using device::DevicePtr;
using device::host::HostPlatform;
using device::host::Kernel;
using device::host::KernelContext;
using device::host::ModuleId;

// Buffer sizes, in 32-bit words. Large enough that restore traffic is visible, small enough that
// the whole demo runs in well under a second.
constexpr std::size_t kScaleCount = std::size_t{1} << 20;   // 4 MiB, every chunk rewritten
constexpr std::size_t kSparseCount = std::size_t{4} << 20;  // 16 MiB, of which 1 KiB + 4 B written
constexpr std::size_t kSparseSpanBegin = (std::size_t{5} << 20) / 4 + 24;  // 5 MiB + 96 B in
constexpr std::size_t kSparseSpanCount = 256;
constexpr std::uint8_t kSparseFillByte = 0x5A;
constexpr std::uint32_t kSparseFill = 0x5A5A5A5Au;
constexpr std::size_t kCoeffCount = 256;                       // the __constant__ table: 1 KiB
constexpr std::size_t kCoeffOutCount = std::size_t{64} << 10;  // 256 KiB
constexpr std::size_t kTicketCount = 1024;                     // 4 KiB
constexpr std::size_t kGraphCount = std::size_t{16} << 10;     // 64 KiB
constexpr int kGraphLaunches = 2;
constexpr std::size_t kAxpyCount = std::size_t{256} << 10;  // 1 MiB per vector

constexpr std::uint64_t WordBytes(std::size_t count) { return std::uint64_t{count} * sizeof(std::uint32_t); }

// On the host backend a DevicePtr is the host address of its bytes: kernel bodies dereference it.
std::uint32_t* Words(DevicePtr ptr) noexcept {
  return reinterpret_cast<std::uint32_t*>(static_cast<std::uintptr_t>(ptr));
}
DevicePtr AddressOf(const void* host) noexcept {
  return static_cast<DevicePtr>(reinterpret_cast<std::uintptr_t>(host));
}

// What one unreplayed run leaves in each buffer: the oracle the results are checked against,
// computed here rather than read from any run.
std::uint32_t ExpectedScale(std::size_t i) { return static_cast<std::uint32_t>(i) * 3u + 1u; }
std::uint32_t ExpectedSparse(std::size_t i) {
  bool written = i == 0 || (i >= kSparseSpanBegin && i < kSparseSpanBegin + kSparseSpanCount);
  return kSparseFill + (written ? 1u : 0u);
}
std::uint32_t Coefficient(std::size_t k) {
  auto v = static_cast<std::uint32_t>(k);
  return v * v + 7u;
}
std::uint32_t ExpectedCoeffOut(std::size_t i) {
  return Coefficient(i % kCoeffCount) + static_cast<std::uint32_t>(i);
}
std::uint32_t ExpectedGraph() {
  std::uint32_t v = 0;
  for (int launch = 0; launch < kGraphLaunches; ++launch) v = (v + 1u) * 2u;
  return v;
}
std::uint32_t AxpyInitialY(int device) { return 1000u + static_cast<std::uint32_t>(device); }
std::uint32_t ExpectedAxpy(std::size_t i, int device) {
  return 2u * static_cast<std::uint32_t>(i) + AxpyInitialY(device);
}

struct Buffer {
  std::string name;
  int device = 0;
  DevicePtr ptr = 0;
  std::uint64_t bytes = 0;
  std::size_t words() const noexcept { return static_cast<std::size_t>(bytes / sizeof(std::uint32_t)); }
};

struct Check {
  std::string kernel;
  int device = 0;
  std::string buffer;
  std::size_t words = 0;
  bool compared = true;
  std::size_t mismatches = 0;
  std::string note;  // first mismatch, or why it was not compared
};

Kernel MakeKernel(std::string name, std::function<void(const KernelContext&)> body, ModuleId module = 0) {
  Kernel kernel;
  kernel.name = std::move(name);
  kernel.body = std::move(body);
  kernel.module = module;
  return kernel;
}

class DemoRun {
 public:
  DemoRun(const DemoOptions& options, std::ostream& out, std::ostream& err)
      : options_(options), out_(out), err_(err), start_ns_(base::MonotonicNowNs()) {}
  ~DemoRun();
  DemoRun(const DemoRun&) = delete;
  DemoRun& operator=(const DemoRun&) = delete;

  StatusOr<DemoOutcome> Run();

 private:
  Status Wire();
  Status SetUp();
  Status LaunchWorkload();
  StatusOr<bool> CheckResults();
  Status FreeAll();

  StatusOr<Buffer> Allocate(std::string name, int device, std::size_t words);
  Status Upload(DevicePtr dst, const std::vector<std::uint32_t>& words);
  StatusOr<std::vector<std::uint32_t>> Download(DevicePtr src, std::size_t words);
  Status Launch(int device, const Kernel& kernel);
  // A graph of kernels on device 0's default stream: one launch call (one correlation id, as
  // cudaGraphLaunch has), each kernel node a device task carrying it.
  Status LaunchGraph(const std::vector<Kernel>& graph);
  // `launch()` as a runtime API row (and its `launch` row) with `correlation`, which the replay
  // record sink reads meanwhile (launching_correlation).
  Status RecordedCall(std::string_view name, std::uint64_t correlation,
                      const std::function<Status()>& launch);
  // `kernel` made to record its unreplayed run (or pass 1) as a device task with `correlation`.
  Kernel Profiled(const Kernel& kernel, int device, std::uint64_t correlation);
  StatusOr<Check> Compare(std::string kernel, const Buffer& buffer,
                          const std::function<std::uint32_t(std::size_t)>& expected);

  void PrintHeader() const;
  void PrintWorkload() const;
  // A progress line on stderr, but only once the run has taken more than a second: a quick run
  // keeps stderr for the engine's warnings.
  void Progress(std::string_view step);
  double ElapsedSeconds() const { return static_cast<double>(base::MonotonicNowNs() - start_ns_) / 1e9; }

  const DemoOptions options_;
  std::ostream& out_;
  std::ostream& err_;
  const std::int64_t start_ns_;

  // The nondeterministic kernel's source: host state that no snapshot covers, like clock64() or
  // an atomic on memory replay cannot restore. Declared before the platform so it outlives every
  // kernel the platform may still run.
  std::atomic<std::uint32_t> tickets_{0};

  replay::Inventory inventory_;
  std::unique_ptr<HostPlatform> platform_;
  std::vector<device::Device*> devices_;
  std::unique_ptr<replay::Interceptor> interceptor_;
  std::unique_ptr<replay::Controller> controller_;

  // What goes into the DB (only with an output directory). Kernel bodies run on stream worker
  // threads and replay records arrive on the launching thread, hence the lock.
  Status OpenProfile();
  StatusOr<std::string> FinishProfile();
  void AddRecord(trace::Record record);
  std::unique_ptr<db::ProfileWriter> writer_;
  std::mutex records_mu_;
  std::vector<trace::Record> profile_records_;
  std::atomic<std::uint64_t> next_correlation_{1};

  Buffer scale_, sparse_, coeff_out_, tickets_out_, graph_acc_;
  std::vector<Buffer> axpy_x_, axpy_y_;  // index d - 1 for device d
  ModuleId module_ = 0;
  Buffer launch_count_, coeffs_;  // the module's variables (not allocations: never freed)
};

DemoRun::~DemoRun() {
  // Queued work finishes before anything it touches goes; then the same order as a Session:
  // launches detached, the wrappers removed, the runtime (which frees what is left) last.
  if (platform_) {
    for (int d = 0; d < platform_->device_count(); ++d) platform_->DeviceSynchronize(d).IgnoreError();
  }
  if (interceptor_) interceptor_->SetController(nullptr);
  controller_.reset();
  interceptor_.reset();
  platform_.reset();
}

void DemoRun::Progress(std::string_view step) {
  double elapsed = ElapsedSeconds();
  if (elapsed <= 1.0) return;
  char seconds[32];
  std::snprintf(seconds, sizeof(seconds), "%.1f", elapsed);
  err_ << "gpuprof demo: " << step << " (" << seconds << " s)\n" << std::flush;
}

Status DemoRun::Wire() {
  device::host::HostPlatformOptions platform_options;
  platform_options.device_count = options_.devices;
  platform_ = std::make_unique<HostPlatform>(platform_options);
  for (int d = 0; d < platform_->device_count(); ++d) devices_.push_back(&platform_->device_interface(d));
  interceptor_ = std::make_unique<replay::Interceptor>(inventory_, devices_);
  GPUPROF_RETURN_IF_ERROR(
      interceptor_->Install(platform_->api_table()).WithContext("installing the replay wrappers"));
  // Recording starts before the application's first allocation, as under CUDA_INJECTION64_PATH:
  // an allocation made earlier would be missing from every snapshot.
  inventory_.EnableRecording(true);
  controller_ = std::make_unique<replay::Controller>(inventory_, devices_, options_.replay);
  if (writer_) {
    controller_->SetRecordSink([this](const replay::ReplayRecord& record) {
      trace::ReplayResult result;
      result.time_ns = base::EpochNowNs();
      result.pid = static_cast<std::uint32_t>(getpid());
      result.tid = static_cast<std::uint32_t>(gettid());
      result.correlation_id = launching_correlation;  // the launch being replayed, on this thread
      result.record = record;
      AddRecord(std::move(result));
    });
  }
  interceptor_->SetController(controller_.get());
  return OkStatus();
}

StatusOr<Buffer> DemoRun::Allocate(std::string name, int device, std::size_t words) {
  Buffer buffer;
  buffer.name = std::move(name);
  buffer.device = device;
  buffer.bytes = WordBytes(words);
  StatusOr<DevicePtr> ptr = platform_->Malloc(device, buffer.bytes);
  if (!ptr.ok()) {
    return ptr.status().WithContext("allocating " + buffer.name + " (" + FormatBytes(buffer.bytes) +
                                    ") on device " + std::to_string(device));
  }
  buffer.ptr = *ptr;
  return buffer;
}

Status DemoRun::Upload(DevicePtr dst, const std::vector<std::uint32_t>& words) {
  return platform_->Memcpy(dst, AddressOf(words.data()), WordBytes(words.size()));
}

StatusOr<std::vector<std::uint32_t>> DemoRun::Download(DevicePtr src, std::size_t words) {
  std::vector<std::uint32_t> host(words);
  GPUPROF_RETURN_IF_ERROR(platform_->Memcpy(AddressOf(host.data()), src, WordBytes(words)));
  return host;
}

Status DemoRun::Launch(int device, const Kernel& kernel) {
  if (!writer_) {
    return platform_->Launch(platform_->DefaultStream(device), kernel)
        .WithContext("launching " + kernel.name + " on device " + std::to_string(device));
  }
  // Profiled: the launch call becomes a runtime API row with a `launch` row, the kernel's
  // unreplayed run (or pass 1) a device task joined to it by the correlation id, and a replayed
  // launch's GPUPROF_REPLAY_KERNEL row carries it too (the record sink runs on this thread).
  const std::uint64_t correlation = next_correlation_.fetch_add(1, std::memory_order_relaxed);
  const Kernel profiled = Profiled(kernel, device, correlation);
  return RecordedCall("hostLaunchKernel", correlation, [&] {
    return platform_->Launch(platform_->DefaultStream(device), profiled)
        .WithContext("launching " + kernel.name + " on device " + std::to_string(device));
  });
}

Status DemoRun::RecordedCall(std::string_view name, std::uint64_t correlation,
                             const std::function<Status()>& launch) {
  trace::ApiCall call;
  call.start_ns = base::EpochNowNs();
  call.pid = static_cast<std::uint32_t>(getpid());
  call.tid = static_cast<std::uint32_t>(gettid());
  call.name = std::string(name);
  call.correlation_id = correlation;
  call.launches_device_work = true;
  launching_correlation = correlation;
  Status status = launch();
  launching_correlation = 0;
  call.end_ns = base::EpochNowNs();
  AddRecord(std::move(call));
  return status;
}

Kernel DemoRun::Profiled(const Kernel& kernel, int device, std::uint64_t correlation) {
  const std::uint32_t pid = static_cast<std::uint32_t>(getpid());
  const std::uint32_t stream = static_cast<std::uint32_t>(platform_->DefaultStream(device));
  Kernel profiled = kernel;
  profiled.body = [this, body = kernel.body, name = kernel.name, device, correlation, pid,
                   stream](const KernelContext& context) {
    const std::int64_t start = base::EpochNowNs();
    body(context);
    if (context.pass > 1) return;  // C1: passes 2..N appear only in the replay tables
    trace::DeviceTask task;
    task.kind = trace::TaskKind::kKernel;
    task.start_ns = start;
    task.end_ns = base::EpochNowNs();
    task.device = device;
    task.stream = stream;
    task.correlation_id = correlation;
    task.pid = pid;
    task.name = name;
    task.short_name = name;
    AddRecord(std::move(task));
  };
  return profiled;
}

Status DemoRun::LaunchGraph(const std::vector<Kernel>& graph) {
  if (!writer_) {
    return platform_->LaunchGraph(platform_->DefaultStream(0), graph)
        .WithContext("launching the graph on device 0");
  }
  const std::uint64_t correlation = next_correlation_.fetch_add(1, std::memory_order_relaxed);
  std::vector<Kernel> profiled;
  for (const Kernel& kernel : graph) profiled.push_back(Profiled(kernel, 0, correlation));
  return RecordedCall("hostGraphLaunch", correlation, [&] {
    return platform_->LaunchGraph(platform_->DefaultStream(0), profiled)
        .WithContext("launching the graph on device 0");
  });
}

void DemoRun::AddRecord(trace::Record record) {
  std::lock_guard<std::mutex> lock(records_mu_);
  profile_records_.push_back(std::move(record));
}

Status DemoRun::OpenProfile() {
  if (options_.output_dir.empty()) return OkStatus();
  char hostname[256] = {};
  if (gethostname(hostname, sizeof(hostname) - 1) != 0)
    std::snprintf(hostname, sizeof(hostname), "localhost");
  db::WriterOptions writer_options;
  writer_options.out_dir = options_.output_dir;
  writer_options.run.hostname = hostname;
  writer_options.run.pid = static_cast<std::uint32_t>(getpid());
  writer_options.run.start_ns = base::EpochNowNs();
  for (int d = 0; d < options_.devices; ++d) {
    writer_options.run.devices.emplace_back(d, "gpuprof host device " + std::to_string(d));
  }
  writer_options.run.config_json = std::string("{\"command\":\"demo\",\"passes\":") +
                                   std::to_string(options_.replay.passes) + ",\"restore\":\"" +
                                   std::string(replay::RestoreModeName(options_.replay.restore)) +
                                   "\",\"chunk_size\":" + std::to_string(options_.replay.chunk_size) +
                                   ",\"devices\":" + std::to_string(options_.devices) + "}";
  GPUPROF_ASSIGN_OR_RETURN(writer_, db::ProfileWriter::Create(writer_options));
  return OkStatus();
}

StatusOr<std::string> DemoRun::FinishProfile() {
  std::vector<trace::Record> records;
  {
    std::lock_guard<std::mutex> lock(records_mu_);
    records.swap(profile_records_);
  }
  writer_->Submit(std::move(records));
  return writer_->Finalize(base::EpochNowNs());
}

Status DemoRun::SetUp() {
  GPUPROF_ASSIGN_OR_RETURN(scale_, Allocate("scale", 0, kScaleCount));
  GPUPROF_ASSIGN_OR_RETURN(sparse_, Allocate("sparse", 0, kSparseCount));
  GPUPROF_ASSIGN_OR_RETURN(coeff_out_, Allocate("coeff_out", 0, kCoeffOutCount));
  GPUPROF_ASSIGN_OR_RETURN(tickets_out_, Allocate("tickets", 0, kTicketCount));
  GPUPROF_ASSIGN_OR_RETURN(graph_acc_, Allocate("graph_acc", 0, kGraphCount));
  for (int d = 1; d < options_.devices; ++d) {
    GPUPROF_ASSIGN_OR_RETURN(Buffer x, Allocate("axpy_x", d, kAxpyCount));
    GPUPROF_ASSIGN_OR_RETURN(Buffer y, Allocate("axpy_y", d, kAxpyCount));
    axpy_x_.push_back(std::move(x));
    axpy_y_.push_back(std::move(y));
  }

  std::vector<std::uint32_t> iota(std::max(kScaleCount, kAxpyCount));
  for (std::size_t i = 0; i < iota.size(); ++i) iota[i] = static_cast<std::uint32_t>(i);
  GPUPROF_RETURN_IF_ERROR(
      platform_->Memcpy(scale_.ptr, AddressOf(iota.data()), scale_.bytes).WithContext("initializing scale"));
  GPUPROF_RETURN_IF_ERROR(
      platform_->Memset(sparse_.ptr, kSparseFillByte, sparse_.bytes).WithContext("initializing sparse"));
  GPUPROF_RETURN_IF_ERROR(
      platform_->Memset(coeff_out_.ptr, 0, coeff_out_.bytes).WithContext("initializing coeff_out"));
  GPUPROF_RETURN_IF_ERROR(
      platform_->Memset(tickets_out_.ptr, 0, tickets_out_.bytes).WithContext("initializing tickets"));
  GPUPROF_RETURN_IF_ERROR(
      platform_->Memset(graph_acc_.ptr, 0, graph_acc_.bytes).WithContext("initializing graph_acc"));
  for (std::size_t k = 0; k < axpy_x_.size(); ++k) {
    int device = axpy_x_[k].device;
    GPUPROF_RETURN_IF_ERROR(platform_->Memcpy(axpy_x_[k].ptr, AddressOf(iota.data()), axpy_x_[k].bytes)
                                .WithContext("initializing axpy_x on device " + std::to_string(device)));
    GPUPROF_RETURN_IF_ERROR(
        Upload(axpy_y_[k].ptr, std::vector<std::uint32_t>(kAxpyCount, AxpyInitialY(device)))
            .WithContext("initializing axpy_y on device " + std::to_string(device)));
  }

  device::host::ModuleSpec spec;
  spec.name = "demo_kernels";
  spec.variables.push_back({"launch_count", sizeof(std::uint32_t), /*is_constant=*/false, {}});
  spec.variables.push_back({"coeffs", WordBytes(kCoeffCount), /*is_constant=*/true, {}});
  GPUPROF_ASSIGN_OR_RETURN(module_, platform_->LoadModule(0, spec));
  launch_count_ = Buffer{"launch_count", 0, 0, sizeof(std::uint32_t)};
  coeffs_ = Buffer{"coeffs", 0, 0, WordBytes(kCoeffCount)};
  GPUPROF_ASSIGN_OR_RETURN(launch_count_.ptr, platform_->VariableAddress(module_, "launch_count"));
  GPUPROF_ASSIGN_OR_RETURN(coeffs_.ptr, platform_->VariableAddress(module_, "coeffs"));
  // Like cudaMemcpyToSymbol after load: constant memory is filled after the module loaded, so
  // only a snapshot that reads it at capture time sees these values.
  std::vector<std::uint32_t> coefficients(kCoeffCount);
  for (std::size_t k = 0; k < kCoeffCount; ++k) coefficients[k] = Coefficient(k);
  GPUPROF_RETURN_IF_ERROR(Upload(coeffs_.ptr, coefficients).WithContext("filling __constant__ coeffs"));
  return OkStatus();
}

Status DemoRun::LaunchWorkload() {
  // x = x*3+1 in place: a pass on unrestored input would compound (x*9+4 after two passes).
  DevicePtr scale = scale_.ptr;
  GPUPROF_RETURN_IF_ERROR(Launch(0, MakeKernel("scale_in_place", [scale](const KernelContext&) {
                                   std::uint32_t* x = Words(scale);
                                   for (std::size_t i = 0; i < kScaleCount; ++i) x[i] = x[i] * 3u + 1u;
                                 })));
  Progress("scale_in_place done");

  // A module-scope __device__ counter: replay must restore module variables, not only allocations.
  DevicePtr counter = launch_count_.ptr;
  GPUPROF_RETURN_IF_ERROR(
      Launch(0, MakeKernel(
                    "count_launches", [counter](const KernelContext&) { *Words(counter) += 1u; }, module_)));

  // Touches a header word and 1 KiB in the middle of 16 MiB: a dirty restore writes back two
  // chunks, a full restore the whole device.
  DevicePtr sparse = sparse_.ptr;
  GPUPROF_RETURN_IF_ERROR(Launch(0, MakeKernel("mark_sparse", [sparse](const KernelContext&) {
                                   std::uint32_t* s = Words(sparse);
                                   s[0] += 1u;
                                   for (std::size_t i = kSparseSpanBegin;
                                        i < kSparseSpanBegin + kSparseSpanCount; ++i)
                                     s[i] += 1u;
                                 })));

  // Reads the __constant__ table.
  DevicePtr coeffs = coeffs_.ptr;
  DevicePtr coeff_out = coeff_out_.ptr;
  GPUPROF_RETURN_IF_ERROR(Launch(0, MakeKernel(
                                        "apply_coeffs",
                                        [coeffs, coeff_out](const KernelContext&) {
                                          const std::uint32_t* table = Words(coeffs);
                                          std::uint32_t* out = Words(coeff_out);
                                          for (std::size_t i = 0; i < kCoeffOutCount; ++i)
                                            out[i] = table[i % kCoeffCount] + static_cast<std::uint32_t>(i);
                                        },
                                        module_)));

  // Nondeterministic on purpose: every run draws a new ticket, whatever its inputs (B6 flags it).
  DevicePtr tickets_out = tickets_out_.ptr;
  std::atomic<std::uint32_t>* tickets = &tickets_;
  GPUPROF_RETURN_IF_ERROR(Launch(0, MakeKernel("ticket_draw", [tickets, tickets_out](const KernelContext&) {
                                   std::uint32_t ticket =
                                       tickets->fetch_add(1u, std::memory_order_relaxed) + 1u;
                                   std::uint32_t* out = Words(tickets_out);
                                   for (std::size_t i = 0; i < kTicketCount; ++i) out[i] = ticket;
                                 })));
  Progress("single-kernel launches on device 0 done");

  // A two-kernel graph, launched twice: declined (R11), each launch runs exactly once, and the
  // warning is printed once for the process.
  DevicePtr acc = graph_acc_.ptr;
  std::vector<Kernel> graph = {MakeKernel("graph_accumulate",
                                          [acc](const KernelContext&) {
                                            std::uint32_t* a = Words(acc);
                                            for (std::size_t i = 0; i < kGraphCount; ++i) a[i] += 1u;
                                          }),
                               MakeKernel("graph_double", [acc](const KernelContext&) {
                                 std::uint32_t* a = Words(acc);
                                 for (std::size_t i = 0; i < kGraphCount; ++i) a[i] *= 2u;
                               })};
  for (int launch = 0; launch < kGraphLaunches; ++launch) {
    GPUPROF_RETURN_IF_ERROR(LaunchGraph(graph));
  }

  // y = 2x + y on every other device: each device's snapshot holds only that device's memory.
  for (std::size_t k = 0; k < axpy_x_.size(); ++k) {
    DevicePtr x = axpy_x_[k].ptr;
    DevicePtr y = axpy_y_[k].ptr;
    GPUPROF_RETURN_IF_ERROR(Launch(axpy_x_[k].device, MakeKernel("axpy", [x, y](const KernelContext&) {
                                     const std::uint32_t* xs = Words(x);
                                     std::uint32_t* ys = Words(y);
                                     for (std::size_t i = 0; i < kAxpyCount; ++i) ys[i] = 2u * xs[i] + ys[i];
                                   })));
  }
  for (int d = 0; d < platform_->device_count(); ++d) {
    GPUPROF_RETURN_IF_ERROR(
        platform_->DeviceSynchronize(d).WithContext("waiting for device " + std::to_string(d)));
  }
  Progress("workload done");
  return OkStatus();
}

StatusOr<Check> DemoRun::Compare(std::string kernel, const Buffer& buffer,
                                 const std::function<std::uint32_t(std::size_t)>& expected) {
  Check check;
  check.kernel = std::move(kernel);
  check.device = buffer.device;
  check.buffer = buffer.name + " (" + FormatBytes(buffer.bytes) + ")";
  check.words = buffer.words();
  StatusOr<std::vector<std::uint32_t>> got = Download(buffer.ptr, buffer.words());
  if (!got.ok()) return got.status().WithContext("reading back " + buffer.name);
  for (std::size_t i = 0; i < got->size(); ++i) {
    std::uint32_t want = expected(i);
    if ((*got)[i] == want) continue;
    if (check.mismatches++ == 0) {
      check.note = "first at [" + std::to_string(i) + "]: " + std::to_string((*got)[i]) + ", expected " +
                   std::to_string(want);
    }
  }
  return check;
}

StatusOr<bool> DemoRun::CheckResults() {
  std::vector<Check> checks;
  auto add = [&](StatusOr<Check> check) -> Status {
    if (!check.ok()) return check.status();
    checks.push_back(std::move(check).value());
    return OkStatus();
  };
  GPUPROF_RETURN_IF_ERROR(add(Compare("scale_in_place", scale_, ExpectedScale)));
  GPUPROF_RETURN_IF_ERROR(add(Compare("count_launches", launch_count_, [](std::size_t) { return 1u; })));
  GPUPROF_RETURN_IF_ERROR(add(Compare("mark_sparse", sparse_, ExpectedSparse)));
  GPUPROF_RETURN_IF_ERROR(add(Compare("apply_coeffs", coeff_out_, ExpectedCoeffOut)));
  GPUPROF_RETURN_IF_ERROR(add(Compare("apply_coeffs (input)", coeffs_, Coefficient)));
  GPUPROF_RETURN_IF_ERROR(add(Compare("graph x" + std::to_string(kGraphLaunches), graph_acc_,
                                      [](std::size_t) { return ExpectedGraph(); })));
  for (std::size_t k = 0; k < axpy_y_.size(); ++k) {
    int device = axpy_y_[k].device;
    GPUPROF_RETURN_IF_ERROR(
        add(Compare("axpy", axpy_y_[k], [device](std::size_t i) { return ExpectedAxpy(i, device); })));
  }
  Check tickets;
  tickets.kernel = "ticket_draw";
  tickets.buffer = tickets_out_.name + " (" + FormatBytes(tickets_out_.bytes) + ")";
  tickets.words = tickets_out_.words();
  tickets.compared = false;
  tickets.note = "not compared: nondeterministic by design";
  checks.push_back(std::move(tickets));

  using Align = TextTable::Align;
  TextTable table({{"kernel", Align::kLeft},
                   {"dev", Align::kRight},
                   {"buffer", Align::kLeft},
                   {"words", Align::kRight},
                   {"mismatches", Align::kRight},
                   {"result", Align::kLeft}});
  bool all_match = true;
  for (const Check& check : checks) {
    all_match = all_match && check.mismatches == 0;
    std::string result = !check.compared         ? check.note
                         : check.mismatches == 0 ? "ok"
                                                 : "MISMATCH, " + check.note;
    table.AddRow({check.kernel, std::to_string(check.device), check.buffer, std::to_string(check.words),
                  check.compared ? std::to_string(check.mismatches) : "-", result});
  }
  out_ << "\nresults\n"
          "  read back after the workload and compared with what one unreplayed run computes (on the host)\n";
  table.Print(out_, "  ");
  return all_match;
}

Status DemoRun::FreeAll() {
  std::vector<const Buffer*> buffers = {&scale_, &sparse_, &coeff_out_, &tickets_out_, &graph_acc_};
  for (const Buffer& x : axpy_x_) buffers.push_back(&x);
  for (const Buffer& y : axpy_y_) buffers.push_back(&y);
  for (const Buffer* buffer : buffers) {
    GPUPROF_RETURN_IF_ERROR(platform_->Free(buffer->ptr).WithContext("freeing " + buffer->name));
  }
  return OkStatus();
}

void DemoRun::PrintHeader() const {
  const replay::ReplayOptions& replay = options_.replay;
  out_ << "gpuprof demo: kernel replay on a simulated " << options_.devices
       << "-device runtime (device memory in host memory)\n";
  out_ << "  " << replay.passes << (replay.passes == 1 ? " pass" : " passes")
       << " per replayed launch; restore " << replay::RestoreModeName(replay.restore)
       << (replay.restore == replay::RestoreMode::kAuto ? " (only chunks that changed, "
                                                        : " (every captured byte, ")
       << FormatBytes(replay.chunk_size) << " chunks); determinism check "
       << (replay.determinism_check ? "on" : "off") << '\n';
  if (replay.passes == 1)
    out_ << "  with 1 pass nothing is replayed: every launch runs once, as without gpuprof\n";
}

void DemoRun::PrintWorkload() const {
  out_ << "\nworkload\n";
  out_ << "  device 0: " << scale_.name << ' ' << FormatBytes(scale_.bytes) << ", " << sparse_.name << ' '
       << FormatBytes(sparse_.bytes) << ", " << coeff_out_.name << ' ' << FormatBytes(coeff_out_.bytes)
       << ", " << tickets_out_.name << ' ' << FormatBytes(tickets_out_.bytes) << ", " << graph_acc_.name
       << ' ' << FormatBytes(graph_acc_.bytes) << "\n"
       << "            module demo_kernels: __device__ " << launch_count_.name << " ("
       << FormatBytes(launch_count_.bytes) << "), __constant__ " << coeffs_.name << " ("
       << FormatBytes(coeffs_.bytes) << ", filled after load)\n";
  for (std::size_t k = 0; k < axpy_x_.size(); ++k) {
    out_ << "  device " << axpy_x_[k].device << ": " << axpy_x_[k].name << ' '
         << FormatBytes(axpy_x_[k].bytes) << ", " << axpy_y_[k].name << ' ' << FormatBytes(axpy_y_[k].bytes)
         << "\n";
  }
  std::uint64_t tracked = 0;
  for (int d = 0; d < options_.devices; ++d) {
    for (const replay::TrackedAllocation& allocation : inventory_.SnapshotInventory(d))
      tracked += allocation.size;
  }
  out_ << "  inventory: " << inventory_.tracked_count() << " device-local allocations tracked ("
       << FormatBytes(tracked) << "); module variables are read at each snapshot\n\n";

  using Align = TextTable::Align;
  TextTable table({{"launch", Align::kLeft}, {"dev", Align::kRight}, {"what it does", Align::kLeft}});
  table.AddRow({"scale_in_place", "0", "x = 3x + 1 in place over 4 MiB (would compound without restore)"});
  table.AddRow(
      {"count_launches", "0", "__device__ launch_count += 1 (a module variable, not an allocation)"});
  table.AddRow({"mark_sparse", "0", "+1 on a header word and on 1 KiB in the middle of 16 MiB"});
  table.AddRow({"apply_coeffs", "0", "coeff_out[i] = coeffs[i % 256] + i (reads the __constant__ table)"});
  table.AddRow(
      {"ticket_draw", "0", "fills tickets with a new ticket from a host-side counter (nondeterministic)"});
  table.AddRow({"graph x" + std::to_string(kGraphLaunches), "0",
                "graph_accumulate (+1) then graph_double (x2), as one graph launch"});
  for (const Buffer& x : axpy_x_) table.AddRow({"axpy", std::to_string(x.device), "y = 2x + y"});
  table.Print(out_, "  ");
}

StatusOr<DemoOutcome> DemoRun::Run() {
  GPUPROF_RETURN_IF_ERROR(replay::Controller::ValidateOptions(options_.replay));
  if (options_.devices < 2) {
    return InvalidArgumentError("--devices must be at least 2 (got " + std::to_string(options_.devices) +
                                "): the demo runs a kernel on a second device");
  }
  PrintHeader();
  GPUPROF_RETURN_IF_ERROR(OpenProfile());
  GPUPROF_RETURN_IF_ERROR(Wire());
  GPUPROF_RETURN_IF_ERROR(SetUp());
  PrintWorkload();
  out_ << std::flush;
  GPUPROF_RETURN_IF_ERROR(LaunchWorkload());

  std::vector<replay::ReplayRecord> records = controller_->records();
  out_ << "\nper-pass results\n"
          "  restored: bytes written back before the pass; dirty chunks: chunks that differed from the "
          "snapshot;\n"
          "  output hash: of every captured byte after the pass (identical inputs, so equal for a "
          "deterministic kernel)\n";
  PrintPassTable(out_, records);
  out_ << "\nsummary per replayed launch\n"
          "  durations as the host backend measures them; restored/pass: mean over passes 2..N\n";
  PrintSummary(out_, records);

  GPUPROF_ASSIGN_OR_RETURN(bool match, CheckResults());
  GPUPROF_RETURN_IF_ERROR(FreeAll());
  char seconds[32];
  std::snprintf(seconds, sizeof(seconds), "%.2f", ElapsedSeconds());
  DemoOutcome outcome{match, ""};
  if (writer_) {
    GPUPROF_ASSIGN_OR_RETURN(outcome.db_path, FinishProfile());
    out_ << "\nprofile database: " << outcome.db_path << '\n'
         << "  see it as a page that opens offline: gpuprof report " << outcome.db_path << "\n"
         << "  (or read it with 'gpuprof stats', 'gpuprof export --format perfetto', 'gpuprof check')\n";
  }
  out_ << "\nresults match an unreplayed run: " << (match ? "yes" : "no") << '\n';
  out_ << "(finished in " << seconds << " s)\n" << std::flush;
  return outcome;
}

}  // namespace

StatusOr<DemoOutcome> RunDemo(const DemoOptions& options, std::ostream& out, std::ostream& err) {
  DemoRun run(options, out, err);
  return run.Run();
}

}  // namespace gpuprof::cli
