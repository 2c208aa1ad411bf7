// Tests tests/gpu/check_db.py without a GPU: for each GPU test program, the trace records the
// CUPTI layer makes of its work (API calls with correlation ids, device tasks, NVTX marks) go
// through the real DB writer, and check_db.py must pass that DB with the program's stdout; broken
// variants (a wrong grid, a missing launch row, gpuprof's own kernel, a child's kernels in the
// parent's DB, ...) must fail with the check that names the problem. So the checker cannot rot
// into passing everything, and its reading of the writer's mapping (DB_SPEC §7) is checked here.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "db/profile_writer.h"
#include "trace/records.h"

namespace {

namespace fs = std::filesystem;
using gpuprof::db::ProfileWriter;
using gpuprof::db::WriterOptions;
using gpuprof::trace::ApiCall;
using gpuprof::trace::DeviceTask;
using gpuprof::trace::Mark;
using gpuprof::trace::Record;
using gpuprof::trace::TaskKind;
using ::testing::HasSubstr;

constexpr std::int64_t kStartNs = 1'704'164'645'678'000'000;  // 2024-01-02
constexpr std::int64_t kEndNs = kStartNs + 2'000'000'000;
constexpr std::uint32_t kLegacyStream = 7;
constexpr std::uint32_t kCreatedStream = 13;

// One process's records, built in program order on a simulated clock.
class Process {
 public:
  Process(std::uint32_t pid, std::uint32_t tid) : pid_(pid), tid_(tid) {}

  std::uint32_t pid() const { return pid_; }
  std::uint32_t tid() const { return tid_; }
  std::int64_t now() const { return now_; }
  void Advance(std::int64_t ns) { now_ += ns; }
  std::vector<Record>& records() { return records_; }

  // An API call and the device task it produced (20 µs after the call, 10 µs long), joined by a
  // fresh correlation id, as the CUPTI translator emits them. Returns the task's index.
  std::size_t Call(const std::string& api, DeviceTask task, bool launch_row = true) {
    const std::uint64_t correlation = AddApiCall(api, 5'000, launch_row);
    task.start_ns = now_ + 20'000;
    task.end_ns = now_ + 30'000;
    task.correlation_id = correlation;
    task.pid = pid_;
    records_.emplace_back(task);
    now_ += 50'000;
    return records_.size() - 1;
  }

  // An API call that makes no device work (cudaGetDevice and the like): its runtime row alone.
  void Query(const std::string& api) {
    AddApiCall(api, 1'000, /*launch_row=*/false);
    now_ += 2'000;
  }

  DeviceTask& task(std::size_t index) { return std::get<DeviceTask>(records_[index]); }

 private:
  // The call's runtime row, starting now; returns its fresh correlation id.
  std::uint64_t AddApiCall(const std::string& api, std::int64_t duration_ns, bool launch_row) {
    ApiCall call;
    call.start_ns = now_;
    call.end_ns = now_ + duration_ns;
    call.pid = pid_;
    call.tid = tid_;
    call.name = api;
    call.correlation_id = next_correlation_++;
    call.launches_device_work = launch_row;
    records_.emplace_back(call);
    return call.correlation_id;
  }

  std::uint32_t pid_;
  std::uint32_t tid_;
  std::int64_t now_ = kStartNs + 10'000'000;
  std::uint64_t next_correlation_ = 1;
  std::vector<Record> records_;
};

DeviceTask Kernel(const std::string& name, const std::string& short_name, std::array<std::uint32_t, 3> grid,
                  std::array<std::uint32_t, 3> block, std::uint32_t stream) {
  DeviceTask task;
  task.kind = TaskKind::kKernel;
  task.name = name;
  task.short_name = short_name;
  for (int i = 0; i < 3; ++i) {
    task.grid[i] = grid[static_cast<std::size_t>(i)];
    task.block[i] = block[static_cast<std::size_t>(i)];
  }
  task.stream = stream;
  task.context = 1;
  return task;
}

DeviceTask Copy(std::uint64_t bytes, std::uint32_t operation, std::uint32_t stream) {
  DeviceTask task;
  task.kind = TaskKind::kMemcpy;
  task.bytes = bytes;
  task.memcpy_operation = operation;
  task.stream = stream;
  task.context = 1;
  return task;
}

DeviceTask Memset(std::uint64_t bytes, std::uint32_t stream) {
  DeviceTask task;
  task.kind = TaskKind::kMemset;
  task.bytes = bytes;
  task.stream = stream;
  task.context = 1;
  return task;
}

Mark Range(const Process& p, const std::string& message, std::int64_t start, std::int64_t end,
           const std::string& domain = "default") {
  Mark mark;
  mark.type = Mark::Type::kStartEnd;  // CUPTI reports push/pop ranges as start/end markers
  mark.start_ns = start;
  mark.end_ns = end;
  mark.pid = p.pid();
  mark.tid = p.tid();
  mark.end_tid = p.tid();
  mark.message = message;
  mark.domain = domain;
  return mark;
}

std::string ProcessLine(const Process& p, const std::string& role) {
  return "gpuprof-test: process role=" + role + " pid=" + std::to_string(p.pid()) +
         " tid=" + std::to_string(p.tid()) + " device=0\n";
}

// ---- The programs' work, as records -------------------------------------------------------------

Process KernelsProgram(std::string* output) {
  Process p(4321, 4321);
  *output = ProcessLine(p, "main");
  p.Call("cudaMemcpy", Copy(65536, 1, kLegacyStream));
  p.Call("cudaMemcpy", Copy(65536, 1, kLegacyStream));
  for (int i = 0; i < 3; ++i) {
    p.Call("cudaLaunchKernel", Kernel("vector_add(const float*, const float*, float*, int)", "vector_add",
                                      {64, 1, 1}, {256, 1, 1}, kCreatedStream));
  }
  for (int i = 0; i < 2; ++i) {
    p.Call("cudaLaunchKernel", Kernel("void scale_kernel<float>(float*, float, int)", "scale_kernel",
                                      {32, 4, 1}, {32, 2, 2}, kLegacyStream));
  }
  p.Call("cudaMemcpy", Copy(65536, 2, kLegacyStream));
  return p;
}

Process MemcpyProgram(std::string* output) {
  Process p(5000, 5000);
  *output = ProcessLine(p, "main");
  p.Call("cudaMemcpy", Copy(4194304, 1, kLegacyStream));
  p.Call("cudaMemcpy", Copy(1048576, 3, kLegacyStream));
  p.Call("cudaMemcpy", Copy(2097152, 2, kLegacyStream));
  p.Call("cudaMemcpyAsync", Copy(65536, 1, kCreatedStream));
  p.Call("cudaMemcpyAsync", Copy(12345, 2, kCreatedStream));
  p.Call("cudaMemset", Memset(524288, kLegacyStream));
  p.Call("cudaMemcpy", Copy(1048576, 2, kLegacyStream));
  return p;
}

constexpr std::uint32_t kNvtxEndTid = 6001;

Process NvtxProgram(std::string* output) {
  Process p(6000, 6000);
  *output = ProcessLine(p, "main") +
            "gpuprof-test: range type=start/end message=gpuprof_cross_thread start_tid=6000 "
            "end_tid=" +
            std::to_string(kNvtxEndTid) + "\n";
  const std::int64_t outer_start = p.now();
  p.Advance(1'000);
  p.Call("cudaLaunchKernel", Kernel("nvtx_outer_kernel(float*, int)", "nvtx_outer_kernel", {256, 1, 1},
                                    {256, 1, 1}, kLegacyStream));
  const std::int64_t inner_start = p.now();
  p.Advance(1'000);
  p.Call("cudaLaunchKernel", Kernel("nvtx_inner_kernel(float*, int)", "nvtx_inner_kernel", {256, 1, 1},
                                    {256, 1, 1}, kLegacyStream));
  const std::int64_t inner_end = p.now();
  p.Advance(1'000);
  const std::int64_t outer_end = p.now();
  p.Advance(1'000);
  p.records().emplace_back(Range(p, "gpuprof_outer", outer_start, outer_end));
  p.records().emplace_back(Range(p, "gpuprof_inner", inner_start, inner_end));
  Mark mark = Range(p, "gpuprof_mark", p.now(), p.now());
  mark.type = Mark::Type::kMarkerEx;
  p.records().emplace_back(mark);
  p.Advance(1'000);
  Mark cross = Range(p, "gpuprof_cross_thread", p.now(), p.now() + 5'000);
  cross.end_tid = kNvtxEndTid;
  p.records().emplace_back(cross);
  p.Advance(10'000);
  p.records().emplace_back(Range(p, "gpuprof_domain_range", p.now(), p.now() + 1'000, "gpuprof_domain"));
  p.Advance(2'000);
  p.Call("cudaMemcpy", Copy(4, 2, kLegacyStream));
  return p;
}

Process ForkProcess(std::uint32_t pid, const std::string& kernel, int launches) {
  Process p(pid, pid);
  p.Call("cudaMemset", Memset(16384, kLegacyStream));
  for (int i = 0; i < launches; ++i) {
    p.Call("cudaLaunchKernel",
           Kernel(kernel + "(int*, int)", kernel, {32, 1, 1}, {128, 1, 1}, kLegacyStream));
  }
  p.Call("cudaMemcpy", Copy(4, 2, kLegacyStream));
  return p;
}

// ---- Writing and checking -----------------------------------------------------------------------

class CheckDbTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "gpuprof_check_db_XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
    out_ = dir_ + "/out";
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  // Writes `p`'s records as the Session of process p would; returns the DB path.
  std::string Write(Process& p) {
    WriterOptions options;
    options.out_dir = out_;
    options.run.hostname = "gpuhost";
    options.run.pid = p.pid();
    options.run.device = 0;
    options.run.start_ns = kStartNs + p.pid();  // distinct run directories per process
    options.run.devices = {{0, "NVIDIA H200"}};
    auto writer = ProfileWriter::Create(options);
    EXPECT_TRUE(writer.ok()) << writer.status().ToString();
    if (!writer.ok()) return "";
    (*writer)->Submit(std::move(p.records()));
    auto path = (*writer)->Finalize(kEndNs);
    EXPECT_TRUE(path.ok()) << path.status().ToString();
    return path.ok() ? *path : "";
  }

  struct Checked {
    int exit_code = -1;
    std::string output;
  };

  Checked Check(const std::string& expectation, const std::string& program_output) const {
    const std::string output_file = dir_ + "/program_stdout.txt";
    std::ofstream(output_file) << program_output;
    const std::string command = std::string("'") + GPUPROF_PYTHON + "' '" + GPUPROF_CHECK_DB_PY + "' " +
                                expectation + " '" + out_ + "' --program-output '" + output_file + "' 2>&1";
    Checked result;
    FILE* pipe = popen(command.c_str(), "r");
    if (pipe == nullptr) {
      ADD_FAILURE() << "popen failed: " << command;
      return result;
    }
    std::array<char, 4096> buffer{};
    std::size_t n = 0;
    while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0)
      result.output.append(buffer.data(), n);
    const int status = pclose(pipe);
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return result;
  }

  void ExpectPass(const std::string& expectation, const std::string& program_output) const {
    Checked r = Check(expectation, program_output);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_THAT(r.output, HasSubstr(expectation + ": ok")) << r.output;
  }

  void ExpectFail(const std::string& expectation, const std::string& program_output,
                  const std::string& why) const {
    Checked r = Check(expectation, program_output);
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_THAT(r.output, HasSubstr(why)) << r.output;
  }

  std::string dir_;
  std::string out_;
};

TEST_F(CheckDbTest, KernelsProgramPasses) {
  std::string output;
  Process p = KernelsProgram(&output);
  Write(p);
  ExpectPass("kernels", output);
}

TEST_F(CheckDbTest, KernelsWithWrongGridFail) {
  std::string output;
  Process p = KernelsProgram(&output);
  for (Record& record : p.records()) {
    if (auto* task = std::get_if<DeviceTask>(&record);
        task != nullptr && task->short_name == "scale_kernel") {
      task->grid[0] = 16;
    }
  }
  Write(p);
  ExpectFail("kernels", output, "gridDim '16,4,1', expected '32,4,1'");
}

TEST_F(CheckDbTest, KernelsOnOneStreamFail) {
  std::string output;
  Process p = KernelsProgram(&output);
  for (Record& record : p.records()) {
    if (auto* task = std::get_if<DeviceTask>(&record); task != nullptr && task->short_name == "vector_add") {
      task->stream = kLegacyStream;
    }
  }
  Write(p);
  ExpectFail("kernels", output, "share streamId");
}

TEST_F(CheckDbTest, GpuprofsOwnKernelFails) {
  std::string output;
  Process p = KernelsProgram(&output);
  p.Call("cuLaunchKernel", Kernel("gpuprof_hash_chunks(const unsigned char*, unsigned long*)",
                                  "gpuprof_hash_chunks", {8, 1, 1}, {256, 1, 1}, kLegacyStream));
  Write(p);
  ExpectFail("kernels", output, "C1");
}

TEST_F(CheckDbTest, KernelWithoutLaunchRowFails) {
  std::string output;
  Process p = KernelsProgram(&output);
  for (Record& record : p.records()) {
    if (auto* call = std::get_if<ApiCall>(&record); call != nullptr && call->name == "cudaLaunchKernel") {
      call->launches_device_work = false;
      break;
    }
  }
  Write(p);
  ExpectFail("kernels", output, "no CANN_API row (type 10000, name 'launch')");
}

TEST_F(CheckDbTest, LaunchOnAnotherThreadFails) {
  std::string output;
  Process p = KernelsProgram(&output);
  output = "gpuprof-test: process role=main pid=4321 tid=4322 device=0\n";
  Write(p);
  ExpectFail("kernels", output, "launch globalTid");
}

TEST_F(CheckDbTest, TaskTimesInAnotherTimeBaseFail) {
  std::string output;
  Process p = KernelsProgram(&output);
  std::size_t last =
      p.Call("cudaLaunchKernel", Kernel("vector_add(const float*, const float*, float*, int)", "vector_add",
                                        {64, 1, 1}, {256, 1, 1}, kCreatedStream));
  p.task(last).start_ns = 123'456'789;  // GPU ticks, not epoch ns
  p.task(last).end_ns = 123'466'789;
  Write(p);
  ExpectFail("kernels", output, "are not epoch ns");
}

TEST_F(CheckDbTest, MemcpyProgramPasses) {
  std::string output;
  Process p = MemcpyProgram(&output);
  Write(p);
  ExpectPass("memcpy", output);
}

TEST_F(CheckDbTest, MemcpyWithWrongDirectionFails) {
  std::string output;
  Process p = MemcpyProgram(&output);
  for (Record& record : p.records()) {
    if (auto* task = std::get_if<DeviceTask>(&record);
        task != nullptr && task->bytes == 1048576 && task->memcpy_operation == 3) {
      task->memcpy_operation = 1;
    }
  }
  Write(p);
  ExpectFail("memcpy", output, "no MEMCPY_INFO row with size 1048576 and memcpyOperation 3");
}

TEST_F(CheckDbTest, MemcpyMadeByTheWrongApiFails) {
  std::string output;
  Process p = MemcpyProgram(&output);
  for (Record& record : p.records()) {
    if (auto* call = std::get_if<ApiCall>(&record); call != nullptr && call->name == "cudaMemset") {
      call->name = "cudaMemcpy";
    }
  }
  Write(p);
  ExpectFail("memcpy", output, "the memset was made by 'cudaMemcpy'");
}

TEST_F(CheckDbTest, NvtxProgramPasses) {
  std::string output;
  Process p = NvtxProgram(&output);
  Write(p);
  ExpectPass("nvtx", output);
}

TEST_F(CheckDbTest, NvtxRangeEndedOnTheWrongThreadFails) {
  std::string output;
  Process p = NvtxProgram(&output);
  for (Record& record : p.records()) {
    if (auto* mark = std::get_if<Mark>(&record); mark != nullptr && mark->message == "gpuprof_cross_thread") {
      mark->end_tid = mark->tid;
    }
  }
  Write(p);
  ExpectFail("nvtx", output, "endGlobalTid");
}

TEST_F(CheckDbTest, NvtxMissingRangeFails) {
  std::string output;
  Process p = NvtxProgram(&output);
  std::erase_if(p.records(), [](const Record& record) {
    const auto* mark = std::get_if<Mark>(&record);
    return mark != nullptr && mark->message == "gpuprof_domain_range";
  });
  Write(p);
  ExpectFail("nvtx", output, "0 rows with message 'gpuprof_domain_range'");
}

TEST_F(CheckDbTest, ForkWithFollowChildrenPasses) {
  Process parent = ForkProcess(7000, "fork_parent_kernel", 2);
  Process child = ForkProcess(7001, "fork_child_kernel", 3);
  const std::string output = ProcessLine(parent, "parent") + ProcessLine(child, "child");
  Write(parent);
  Write(child);
  ExpectPass("fork_follow", output);
  ExpectFail("fork_parent_only", output, "without --follow-children the child (pid 7001) wrote a DB");
}

TEST_F(CheckDbTest, ForkParentOnlyPasses) {
  Process parent = ForkProcess(7000, "fork_parent_kernel", 2);
  Process child = ForkProcess(7001, "fork_child_kernel", 3);
  const std::string output = ProcessLine(parent, "parent") + ProcessLine(child, "child");
  Write(parent);
  ExpectPass("fork_parent_only", output);
  ExpectFail("fork_follow", output, "expected one DB of the child (pid 7001), found 0");
}

TEST_F(CheckDbTest, ChildKernelsInTheParentsDbFail) {
  Process parent = ForkProcess(7000, "fork_parent_kernel", 2);
  Process child = ForkProcess(7001, "fork_child_kernel", 3);
  const std::string output = ProcessLine(parent, "parent") + ProcessLine(child, "child");
  parent.Call("cudaLaunchKernel", Kernel("fork_child_kernel(int*, int)", "fork_child_kernel", {32, 1, 1},
                                         {128, 1, 1}, kLegacyStream));
  Write(parent);
  ExpectFail("fork_parent_only", output, "holds fork_child_kernel");
}

TEST_F(CheckDbTest, UnfinishedDbFails) {
  Process parent = ForkProcess(7000, "fork_parent_kernel", 2);
  const std::string output =
      ProcessLine(parent, "parent") + "gpuprof-test: process role=child pid=7001 tid=7001\n";
  Write(parent);
  fs::create_directories(out_ + "/gpuhost_7001_x_ascend_pt/ASCEND_PROFILER_OUTPUT");
  std::ofstream(out_ + "/gpuhost_7001_x_ascend_pt/ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler.db.partial")
      << "x";
  ExpectFail("fork_parent_only", output, "unfinished DBs left behind");
}

TEST_F(CheckDbTest, TrainingRunPassesWhenEveryKernelJoinsItsLaunch) {
  Process p(8000, 8000);
  p.Call("cudaMemcpyAsync", Copy(1 << 20, 1, kLegacyStream));
  p.Call("cudaLaunchKernel", Kernel("void at::native::elementwise_kernel<128, 2>(int)", "elementwise_kernel",
                                    {4, 1, 1}, {128, 1, 1}, kLegacyStream));
  p.Call("cuLaunchKernelEx", Kernel("sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x32",
                                    "sm90_xmma_gemm", {2, 2, 1}, {256, 1, 1}, kLegacyStream));
  const std::string output =
      "device: cuda:0 (NVIDIA H200), torch 2.11.0\nstep 1/3 loss 2.3\nstep 2/3 loss 2.2\n"
      "step 3/3 loss 2.1\n";
  Write(p);
  ExpectPass("train_plain", output);
}

TEST_F(CheckDbTest, TrainingKernelWithoutItsLaunchFails) {
  Process p(8000, 8000);
  p.Call("cudaMemcpyAsync", Copy(1 << 20, 1, kLegacyStream));
  p.Call("cudaLaunchKernel",
         Kernel("void at::native::elementwise_kernel<128, 2>(int)", "elementwise_kernel", {4, 1, 1},
                {128, 1, 1}, kLegacyStream),
         /*launch_row=*/false);
  const std::string output = "device: cuda:0 (NVIDIA H200)\nstep 3/3 loss 2.1\n";
  Write(p);
  ExpectFail("train_plain", output, "1 of 1 kernels do not join their launch rows");
}

TEST_F(CheckDbTest, DefaultTraceWithOnlyLaunchingCallsPasses) {
  Process p(8000, 8000);
  p.Call("cudaMemcpyAsync", Copy(1 << 20, 1, kLegacyStream));
  p.Call("cudaLaunchKernel", Kernel("void at::native::elementwise_kernel<128, 2>(int)", "elementwise_kernel",
                                    {4, 1, 1}, {128, 1, 1}, kLegacyStream));
  const std::string output = "device: cuda:0 (NVIDIA H200)\nstep 3/3 loss 2.1\n";
  Write(p);
  ExpectPass("train_plain", output);
  ExpectFail("train_plain_every_call", output, "--cuda-trace runtime,driver,nvtx recorded no query call");
}

TEST_F(CheckDbTest, DefaultTraceWithAQueryCallFailsAndEveryCallTracePasses) {
  Process p(8000, 8000);
  p.Call("cudaLaunchKernel", Kernel("void at::native::elementwise_kernel<128, 2>(int)", "elementwise_kernel",
                                    {4, 1, 1}, {128, 1, 1}, kLegacyStream));
  p.Call("cudaMemcpyAsync", Copy(1 << 20, 1, kLegacyStream));
  p.Query("cudaGetDevice");  // a row the default trace must not write, and runtime,driver,nvtx must
  const std::string output = "device: cuda:0 (NVIDIA H200)\nstep 3/3 loss 2.1\n";
  Write(p);
  ExpectFail("train_plain", output,
             "the launches trace (the default) recorded query calls [('cudaGetDevice', 1)]");
  ExpectPass("train_plain_every_call", output);
}

}  // namespace
