// Profile DB writer throughput, end to end: trace records -> db::ProfileWriter -> renamed final file.
//
// The program pre-generates a realistic record stream (not timed):
//   - TorchOp records (PYTORCH_API rows) on 4 threads: a main thread running ProfilerStep#N steps
//     of nested forward ops with autograd sequence numbers, an autograd thread running the matching
//     backward nodes (evaluate_function / XBackward0, fwd thread id = main), and two data-loader
//     threads. Names come from ~300 op names, input shapes/dtypes from a pool of signatures in
//     torch_npu's string format (DB_SPEC §3.3).
//   - DeviceTask kernel records (TASK + COMPUTE_TASK_INFO rows): names from ~500 demangled kernel
//     names, grid/block dims, 4 streams, correlation ids that the launching leaf ops carry.
//   - optionally (--with-api-calls) one cudaLaunchKernel ApiCall per kernel (CANN_API rows).
// It cuts the records into Submit batches (not timed: a collector's flush hands its buffers over
// by move), then times Create + Submit (moving the batches in) + Finalize (drain, derived tables,
// indexes, rename), and reads the final file back (not timed) to count rows
// per table and check that nothing was lost.
//
// The peer, in the same run: bench/db_writer_peer.py copies the writer's own PYTORCH_API, TASK and
// STRING_IDS rows out of the final file (before its timer), then writes them with Python sqlite3
// executemany in 10,000-row chunks with a commit per chunk, the way torch_npu's
// DbManager.insert_data_into_table does. The values are therefore identical by construction. The
// peer does strictly less work than the writer (no interning, no COMPUTE_TASK_INFO, no derived
// tables), so the headline ratio is a lower bound. A second peer run (--all-tables) copies every
// table of the writer's file the same way, for a ratio over identical file contents.

#include <sqlite3.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bench_args.h"
#include "db/profile_writer.h"
#include "db/profile_writer_internal.h"
#include "trace/records.h"

#ifndef GPUPROF_DB_WRITER_PEER_SCRIPT
#define GPUPROF_DB_WRITER_PEER_SCRIPT "bench/db_writer_peer.py"
#endif

namespace gpuprof::bench {
namespace {

using trace::ApiCall;
using trace::DeviceTask;
using trace::Record;
using trace::TorchOp;

constexpr double kTargetRowsPerSecond = 1.0e6;
constexpr double kTargetRatio = 2.0;
constexpr std::uint32_t kPid = 4242;
constexpr std::uint32_t kMainTid = 4242;
constexpr std::uint32_t kAutogradTid = 4301;
constexpr std::uint32_t kLoaderTids[] = {4310, 4311};
constexpr std::int64_t kStartNs = 1'717'200'000'000'000'000;  // 2024-06-01, epoch ns
constexpr std::uint32_t kStreams[] = {7, 13, 17, 21};

struct Flags {
  std::uint64_t rows = 2'000'000;  // each of PYTORCH_API and TASK
  std::uint64_t batch = 8192;      // records per Submit
  std::uint64_t seed = 20240601;
  std::uint64_t repeats = 1;  // whole runs (generate, write, peers); the summary gives medians
  std::string out_dir;        // empty: a fresh temporary directory, removed afterwards
  std::string peer_script = GPUPROF_DB_WRITER_PEER_SCRIPT;
  bool keep = false;
  bool no_peer = false;
  bool with_api_calls = false;
};

void PrintUsage(std::FILE* out) {
  std::fprintf(
      out,
      "usage: db_writer_benchmark [--rows N] [--batch B] [--seed S] [--repeats R] [--with-api-calls]\n"
      "                           [--out-dir DIR] [--keep] [--no-peer] [--peer-script PATH]\n"
      "\n"
      "Writes N PYTORCH_API + N TASK rows (kernels, with their COMPUTE_TASK_INFO rows) through\n"
      "db::ProfileWriter end to end (records -> renamed final file) and, in the same run, the same\n"
      "PYTORCH_API/TASK/STRING_IDS rows with Python sqlite3 executemany in 10,000-row chunks.\n"
      "\n"
      "  --rows N            TorchOp records and kernel records to write, each (default 2000000)\n"
      "  --batch B           records per ProfileWriter::Submit call (default 8192)\n"
      "  --seed S            generator seed (default 20240601)\n"
      "  --repeats R         R whole runs, each with its peers, then the medians (default 1);\n"
      "                      the writer and the peer react differently to a busy or throttled\n"
      "                      machine, so one run's ratio can be off either way\n"
      "  --with-api-calls    also submit one cudaLaunchKernel ApiCall per kernel (CANN_API rows;\n"
      "                      not counted in the headline rows)\n"
      "  --out-dir DIR       write under DIR instead of a fresh temporary directory\n"
      "  --keep              keep the written files\n"
      "  --no-peer           skip the Python peer\n"
      "  --peer-script PATH  the peer script (default: %s)\n"
      "  --help              this text\n"
      "\n"
      "Generation and batching are not timed. Timed: Create, Submit (moving batches in), Finalize.\n"
      "Headline rows = PYTORCH_API + TASK; 'all rows' = every row in the final file.\n",
      GPUPROF_DB_WRITER_PEER_SCRIPT);
}

// "--name value" and "--name=value" (bench_args.h). Returns false (after printing why) on bad input.
bool ParseFlags(int argc, char** argv, Flags* flags, bool* help) {
  const bool parsed = ParseArgs(
      "db_writer_benchmark", argc, argv,
      [](std::string_view name) {
        return name == "--keep" || name == "--no-peer" || name == "--with-api-calls";
      },
      [&](std::string_view name) {
        if (name == "--keep") flags->keep = true;
        if (name == "--no-peer") flags->no_peer = true;
        if (name == "--with-api-calls") flags->with_api_calls = true;
      },
      [&](std::string_view name, std::string_view value) -> OptionResult {
        std::uint64_t* number = nullptr;
        if (name == "--rows") number = &flags->rows;
        if (name == "--batch") number = &flags->batch;
        if (name == "--seed") number = &flags->seed;
        if (name == "--repeats") number = &flags->repeats;
        if (number != nullptr) return ParseUint(value, number) ? "" : "a non-negative integer";
        std::string* text = nullptr;
        if (name == "--out-dir") text = &flags->out_dir;
        if (name == "--peer-script") text = &flags->peer_script;
        if (text == nullptr) return std::nullopt;
        *text = std::string(value);
        return "";
      },
      help);
  if (!parsed || *help) return parsed;
  if (flags->rows == 0 || flags->batch == 0) {
    std::fprintf(stderr, "db_writer_benchmark: --rows and --batch must be > 0\n");
    return false;
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// Name pools.

// (forward aten op, its autograd node). The forward op is "aten::<op>", the backward thread runs
// "autograd::engine::evaluate_function: <Node>" around "<Node>".
constexpr std::pair<const char*, const char*> kAutogradOps[] = {
    {"add", "AddBackward0"},
    {"sub", "SubBackward0"},
    {"mul", "MulBackward0"},
    {"div", "DivBackward0"},
    {"addmm", "AddmmBackward0"},
    {"mm", "MmBackward0"},
    {"bmm", "BmmBackward0"},
    {"baddbmm", "BaddbmmBackward0"},
    {"relu", "ReluBackward0"},
    {"gelu", "GeluBackward0"},
    {"silu", "SiluBackward0"},
    {"tanh", "TanhBackward0"},
    {"sigmoid", "SigmoidBackward0"},
    {"_softmax", "SoftmaxBackward0"},
    {"_log_softmax", "LogSoftmaxBackward0"},
    {"native_layer_norm", "NativeLayerNormBackward0"},
    {"native_batch_norm", "NativeBatchNormBackward0"},
    {"cudnn_batch_norm", "CudnnBatchNormBackward0"},
    {"convolution", "ConvolutionBackward0"},
    {"max_pool2d_with_indices", "MaxPool2DWithIndicesBackward0"},
    {"avg_pool2d", "AvgPool2DBackward0"},
    {"adaptive_avg_pool2d", "AdaptiveAvgPool2DBackward0"},
    {"embedding", "EmbeddingBackward0"},
    {"native_dropout", "NativeDropoutBackward0"},
    {"t", "TBackward0"},
    {"transpose", "TransposeBackward0"},
    {"permute", "PermuteBackward0"},
    {"view", "ViewBackward0"},
    {"_reshape_alias", "ReshapeAliasBackward0"},
    {"expand", "ExpandBackward0"},
    {"squeeze", "SqueezeBackward0"},
    {"unsqueeze", "UnsqueezeBackward0"},
    {"cat", "CatBackward0"},
    {"stack", "StackBackward0"},
    {"split", "SplitBackward0"},
    {"slice", "SliceBackward0"},
    {"select", "SelectBackward0"},
    {"index_select", "IndexSelectBackward0"},
    {"gather", "GatherBackward0"},
    {"scatter", "ScatterBackward0"},
    {"index", "IndexBackward0"},
    {"sum", "SumBackward0"},
    {"mean", "MeanBackward0"},
    {"pow", "PowBackward0"},
    {"sqrt", "SqrtBackward0"},
    {"rsqrt", "RsqrtBackward0"},
    {"exp", "ExpBackward0"},
    {"log", "LogBackward0"},
    {"neg", "NegBackward0"},
    {"clone", "CloneBackward0"},
    {"masked_fill", "MaskedFillBackward0"},
    {"where", "WhereBackward0"},
    {"nll_loss_forward", "NllLossBackward0"},
    {"mse_loss", "MseLossBackward0"},
    {"binary_cross_entropy_with_logits", "BinaryCrossEntropyWithLogitsBackward0"},
    {"_scaled_dot_product_flash_attention", "ScaledDotProductFlashAttentionBackward0"},
    {"_scaled_dot_product_efficient_attention", "ScaledDotProductEfficientAttentionBackward0"},
    {"_to_copy", "ToCopyBackward0"},
    {"hardtanh", "HardtanhBackward0"},
    {"leaky_relu", "LeakyReluBackward0"},
    {"elu", "EluBackward0"},
    {"abs", "AbsBackward0"},
    {"clamp", "ClampBackward1"},
    {"max", "MaxBackward1"},
    {"min", "MinBackward1"},
    {"norm", "NormBackward1"},
    {"var_mean", "VarMeanBackward0"},
    {"std", "StdBackward0"},
    {"cumsum", "CumsumBackward0"},
    {"sort", "SortBackward0"},
    {"topk", "TopkBackward0"},
    {"upsample_nearest2d", "UpsampleNearest2DBackward0"},
    {"upsample_bilinear2d", "UpsampleBilinear2DBackward0"},
    {"repeat", "RepeatBackward0"},
    {"roll", "RollBackward0"},
    {"flip", "FlipBackward0"},
    {"unbind", "UnbindBackward0"},
    {"split_with_sizes", "SplitWithSizesBackward0"},
    {"addcmul", "AddcmulBackward0"},
    {"addcdiv", "AddcdivBackward0"},
    {"lerp", "LerpBackward0"},
    {"erf", "ErfBackward0"},
    {"mish", "MishBackward0"},
    {"hardswish", "HardswishBackward0"},
    {"softplus", "SoftplusBackward0"},
    {"glu", "GluBackward0"},
    {"native_group_norm", "NativeGroupNormBackward0"},
    {"_embedding_bag", "EmbeddingBagBackward0"},
    {"grid_sampler_2d", "GridSampler2DBackward0"},
    {"linalg_vector_norm", "LinalgVectorNormBackward0"},
    {"amax", "AmaxBackward0"},
    {"logsumexp", "LogsumexpBackward0"},
    {"diag", "DiagBackward0"},
    {"triu", "TriuBackward0"},
    {"tril", "TrilBackward0"},
    {"im2col", "Im2ColBackward0"},
    {"col2im", "Col2ImBackward0"},
    {"pixel_shuffle", "PixelShuffleBackward0"},
};

// Composite forward ops that wrap the ones above (tree roots on the main thread).
constexpr const char* kCompositeOps[] = {
    "aten::linear",
    "aten::matmul",
    "aten::conv2d",
    "aten::layer_norm",
    "aten::dropout",
    "aten::cross_entropy_loss",
    "aten::batch_norm",
    "aten::_batch_norm_impl_index",
    "aten::softmax",
    "aten::log_softmax",
    "aten::scaled_dot_product_attention",
    "aten::group_norm",
    "aten::flatten",
    "aten::chunk",
    "aten::contiguous",
    "aten::reshape",
    "aten::embedding_bag",
};

// Allocation / copy / bookkeeping ops: leaves under composites, and the data-loader threads.
constexpr const char* kUtilityOps[] = {
    "aten::empty",
    "aten::empty_strided",
    "aten::zeros",
    "aten::ones",
    "aten::fill_",
    "aten::zero_",
    "aten::copy_",
    "aten::to",
    "aten::as_strided",
    "aten::detach",
    "aten::detach_",
    "aten::resize_",
    "aten::lift_fresh",
    "aten::item",
    "aten::_local_scalar_dense",
    "aten::is_nonzero",
    "aten::ones_like",
    "aten::zeros_like",
    "aten::empty_like",
    "aten::pin_memory",
    "aten::_pin_memory",
    "aten::set_",
    "aten::stride",
    "aten::result_type",
};

// Optimizer step (main thread, end of each ProfilerStep).
constexpr const char* kOptimizerOps[] = {
    "aten::add_",
    "aten::mul_",
    "aten::addcmul_",
    "aten::addcdiv_",
    "aten::sqrt_",
    "aten::_foreach_add_",
    "aten::_foreach_mul_",
    "aten::_foreach_addcmul_",
    "aten::_foreach_addcdiv_",
    "aten::_foreach_sqrt",
    "aten::_fused_adamw_",
    "aten::_foreach_lerp_",
};

constexpr const char* kStepName = "ProfilerStep#";
constexpr const char* kOptimizerStep = "Optimizer.step#AdamW.step";
constexpr const char* kZeroGrad = "Optimizer.zero_grad#AdamW.zero_grad";
constexpr const char* kLoaderNext = "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__";
constexpr const char* kAccumulateGrad = "torch::autograd::AccumulateGrad";
constexpr const char* kEvaluatePrefix = "autograd::engine::evaluate_function: ";

// One input signature: torch_npu's inputShapes / inputDtypes strings for the same inputs.
struct Signature {
  std::string shapes;
  std::string dtypes;
};

std::vector<Signature> MakeSignatures(std::mt19937_64& rng, std::size_t count) {
  constexpr std::uint32_t kDims[] = {1,   2,   3,   4,    8,    16,   32,   64,   128,
                                     256, 512, 768, 1024, 2048, 3072, 4096, 50257};
  constexpr const char* kDtypes[] = {"float", "c10::Half", "c10::BFloat16", "long int", "bool", "int"};
  std::vector<Signature> pool;
  std::set<std::string> seen;
  while (pool.size() < count) {
    std::size_t inputs = 1 + rng() % 4;
    Signature sig;
    const char* tensor_dtype = kDtypes[rng() % 3];  // one float type per op, as in a real model
    for (std::size_t i = 0; i < inputs; ++i) {
      if (i > 0) {
        sig.shapes += ";\r\n";
        sig.dtypes += ";\r\n";
      }
      std::uint64_t kind = rng() % 10;
      if (kind == 0) {  // Python scalar: empty dims entry
        sig.dtypes += "Scalar";
        continue;
      }
      if (kind == 1) {
        sig.dtypes += "None";
        continue;
      }
      std::size_t rank = 1 + rng() % 4;
      for (std::size_t d = 0; d < rank; ++d) {
        if (d > 0) sig.shapes += ',';
        sig.shapes += std::to_string(kDims[rng() % std::size(kDims)]);
      }
      sig.dtypes += (kind == 2) ? kDtypes[3 + rng() % 3] : tensor_dtype;
    }
    if (seen.insert(sig.shapes + '|' + sig.dtypes).second) pool.push_back(std::move(sig));
  }
  return pool;
}

// Joins the parts into one string with a single allocation.
std::string Cat(std::initializer_list<std::string_view> parts) {
  std::size_t size = 0;
  for (std::string_view part : parts) size += part.size();
  std::string out;
  out.reserve(size);
  for (std::string_view part : parts) out.append(part);
  return out;
}

struct KernelName {
  std::string name;
  std::string short_name;
};

// The undecorated name: no "void ", no template arguments or parameters, no namespaces.
std::string ShortKernelName(const std::string& name) {
  constexpr std::string_view kAnonymous = "(anonymous namespace)::";
  std::string_view view = name;
  if (view.starts_with("void ")) view.remove_prefix(5);
  // The name ends at its template arguments or parameters; "(anonymous namespace)" is neither.
  std::size_t end = 0;
  while ((end = view.find_first_of("<(", end)) != std::string_view::npos &&
         view.substr(end).starts_with(kAnonymous)) {
    end += kAnonymous.size();
  }
  view = view.substr(0, end);
  if (std::size_t colon = view.rfind("::"); colon != std::string_view::npos) view.remove_prefix(colon + 2);
  return std::string(view);
}

// ~500 demangled kernel names drawn round-robin from the families a training step launches
// (elementwise, reductions, softmax/layer norm/indexing, cuBLAS/CUTLASS GEMMs, flash attention,
// NCCL), so each family is represented whatever `count` is.
std::vector<KernelName> MakeKernelNames(std::size_t count) {
  constexpr const char* kFunctors[] = {"CUDAFunctor_add",
                                       "MulFunctor",
                                       "DivFunctor",
                                       "AbsFunctor",
                                       "sigmoid_kernel_cuda",
                                       "GeluCUDAKernelImpl",
                                       "silu_kernel",
                                       "tanh_kernel_cuda",
                                       "exp_kernel_cuda",
                                       "sqrt_kernel_cuda",
                                       "rsqrt_kernel_cuda",
                                       "neg_kernel_cuda",
                                       "FillFunctor",
                                       "where_kernel_impl",
                                       "pow_tensor_scalar_kernel",
                                       "clamp_kernel_cuda",
                                       "threshold_kernel_impl",
                                       "masked_fill_kernel",
                                       "bitwise_not_kernel_cuda",
                                       "log_kernel_cuda"};
  constexpr const char* kTypes[] = {"float", "c10::Half", "c10::BFloat16", "long", "int", "bool", "double"};
  constexpr int kArrays[] = {2, 3, 4};
  constexpr const char* kGemmTiles[] = {"64x64x32",   "128x64x32",  "128x128x32", "64x128x32",
                                        "256x128x32", "128x256x32", "128x128x64", "64x64x64"};
  constexpr const char* kGemmLayouts[] = {"nn", "nt", "tn", "tt"};
  constexpr const char* kGemmTypes[] = {"s", "h", "bf16", "f16", "tf32"};
  constexpr const char* kCollectives[] = {"AllReduce_Sum", "AllGather", "ReduceScatter_Sum", "Broadcast",
                                          "SendRecv"};
  constexpr const char* kNcclTypes[] = {"f32", "f16", "bf16", "i64", "u8"};
  constexpr const char* kNcclAlgos[] = {"RING_LL", "RING_LL128", "RING_SIMPLE", "TREE_LL", "TREE_SIMPLE"};

  std::vector<std::vector<std::string>> families(6);
  for (const char* functor : kFunctors) {
    for (const char* type : kTypes) {
      for (int arrays : kArrays) {
        std::string f = Cat({"at::native::", functor, "<", type, ">"});
        std::string array = Cat({"at::detail::Array<char*, ", std::to_string(arrays), ">"});
        families[0].push_back(Cat({"void at::native::vectorized_elementwise_kernel<4, ", f, ", ", array,
                                   " >(int, ", f, ", ", array, ")"}));
        families[0].push_back(Cat({"void at::native::unrolled_elementwise_kernel<", f, ", ", array,
                                   ", TrivialOffsetCalculator<1, unsigned int>, TrivialOffsetCalculator<1, "
                                   "unsigned int>, at::native::memory::LoadWithCast<1>, "
                                   "at::native::memory::StoreWithCast<1> >(int, ",
                                   f, ", ", array, ")"}));
      }
    }
  }
  for (const char* t : kTypes) {
    for (int block : {128, 256, 512}) {
      std::string threads = std::to_string(block);
      std::string op =
          Cat({"at::native::ReduceOp<", t, ", at::native::func_wrapper<", t, ">, unsigned int, ", t, ", 4>"});
      families[1].push_back(Cat({"void at::native::reduce_kernel<", threads, ", 1, ", op, " >(", op, ")"}));
      families[2].push_back(
          Cat({"void at::native::(anonymous namespace)::cunn_SoftMaxForward<", std::to_string(block / 64),
               ", ", t, ", float, ", t, ", at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(", t,
               "*, ", t, " const*, int)"}));
      families[2].push_back(Cat({"void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<", t,
                                 ", float>(int, float, ", t, " const*, ", t, " const*, ", t,
                                 " const*, float*, float*, ", t, "*)"}));
      families[2].push_back(
          Cat({"void at::native::index_elementwise_kernel<", threads, ", 4, ", t, ">(long, ", t, "*)"}));
    }
  }
  for (const char* tile : kGemmTiles) {
    for (const char* layout : kGemmLayouts) {
      for (const char* type : kGemmTypes) {
        families[3].push_back(Cat({"sm90_xmma_gemm_", type, type, "_", type, "32_tilesize", tile,
                                   "_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas_", layout}));
        families[3].push_back(Cat({"ampere_", type, "gemm_", tile, "_ldg8_relu_f2f_stages_64x3_", layout}));
        families[3].push_back(
            Cat({"void cutlass::Kernel2<cutlass_80_tensorop_", type, "gemm_", tile, "_3x4_", layout,
                 "_align8>(cutlass_80_tensorop_", type, "gemm_", tile, "_3x4_", layout, "_align8::Params)"}));
      }
    }
  }
  for (int head_dim : {32, 64, 96, 128, 160, 192, 256}) {
    for (int block_m : {64, 128}) {
      for (int block_n : {32, 64, 128}) {
        std::string dims =
            Cat({std::to_string(head_dim), ", ", std::to_string(block_m), ", ", std::to_string(block_n)});
        std::string traits =
            Cat({"Flash_fwd_kernel_traits<", dims, ", 4, false, false, cutlass::half_t, Flash_kernel_traits<",
                 dims, ", 4, cutlass::half_t> >"});
        families[4].push_back(Cat({"void flash_fwd_kernel<", traits,
                                   ", false, true, false, false, true, true, false>(Flash_fwd_params)"}));
        families[4].push_back(Cat({"void flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<", traits,
                                   ", true, false, false>(Flash_bwd_params)"}));
      }
    }
  }
  for (const char* collective : kCollectives) {
    for (const char* type : kNcclTypes) {
      for (const char* algo : kNcclAlgos) {
        families[5].push_back(Cat({"ncclDevKernel_", collective, "_", type, "_", algo,
                                   "(ncclDevComm*, unsigned long, ncclWork*)"}));
      }
    }
  }

  std::vector<KernelName> names;
  std::set<std::string> seen;
  for (std::size_t i = 0; names.size() < count; ++i) {
    bool any = false;
    for (const std::vector<std::string>& family : families) {
      if (i >= family.size() || names.size() >= count) continue;
      any = true;
      if (seen.insert(family[i]).second) names.push_back({family[i], ShortKernelName(family[i])});
    }
    if (!any) break;  // every family used up
  }
  return names;
}

// ---------------------------------------------------------------------------------------------
// Record generation (not timed).

struct Workload {
  std::vector<TorchOp> ops;
  std::vector<DeviceTask> tasks;
  std::vector<ApiCall> api_calls;
  std::size_t distinct_op_names = 0;
  std::size_t distinct_kernel_names = 0;
  std::size_t signatures = 0;
  std::int64_t end_ns = 0;
};

class Generator {
 public:
  Generator(std::uint64_t seed, std::uint64_t rows) : rng_(seed), budget_(rows) {
    signatures_ = MakeSignatures(rng_, 256);
    for (const auto& [op, node] : kAutogradOps) forward_names_.push_back(std::string("aten::") + op);
    thread_time_.fill(kStartNs);
  }

  Workload Run(bool with_api_calls) {
    Workload out;
    out.ops.reserve(budget_);
    ops_ = &out.ops;
    for (std::int64_t step = 1; ops_->size() < budget_; ++step) Step(step);
    out.signatures = signatures_.size();
    std::set<std::string_view> names;
    for (const TorchOp& op : out.ops) names.insert(op.name);
    out.distinct_op_names = names.size();
    AddKernels(out, with_api_calls);
    out.end_ns = thread_time_[0];
    for (const DeviceTask& task : out.tasks) out.end_ns = std::max(out.end_ns, task.end_ns);
    return out;
  }

 private:
  enum Thread : std::size_t { kMain = 0, kAutograd = 1, kLoader0 = 2, kLoader1 = 3 };
  static constexpr std::uint32_t kTids[] = {kMainTid, kAutogradTid, kLoaderTids[0], kLoaderTids[1]};
  static constexpr std::size_t kStepForwardOps = 8000;
  static constexpr std::size_t kStepLoaderOps = 2000;

  std::uint64_t Uniform(std::uint64_t lo, std::uint64_t hi) {  // [lo, hi]
    return lo + rng_() % (hi - lo + 1);
  }
  std::int64_t Gap(std::uint64_t lo, std::uint64_t hi) { return static_cast<std::int64_t>(Uniform(lo, hi)); }
  bool Full() const { return ops_->size() >= budget_; }

  // Opens an op at the thread's clock; Close() sets its end. Returns its index.
  std::size_t Open(Thread thread, std::string name, std::int64_t seq, std::uint64_t fwd_tid, bool signature) {
    thread_time_[thread] += Gap(200, 3'000);
    TorchOp op;
    op.start_ns = thread_time_[thread];
    op.end_ns = op.start_ns;
    op.pid = kPid;
    op.tid = kTids[thread];
    op.name = std::move(name);
    op.sequence_number = seq;
    op.fwd_thread_id = fwd_tid;
    if (signature && rng_() % 8 != 0) {
      const Signature& sig = signatures_[rng_() % signatures_.size()];
      op.input_shapes = sig.shapes;
      op.input_dtypes = sig.dtypes;
    }
    ops_->push_back(std::move(op));
    return ops_->size() - 1;
  }
  void Close(Thread thread, std::size_t index, bool leaf) {
    if (leaf) {
      thread_time_[thread] += Gap(2'000, 40'000);
      if (thread == kMain || thread == kAutograd) launchers_.push_back(index);
    }
    thread_time_[thread] += Gap(300, 2'000);
    (*ops_)[index].end_ns = thread_time_[thread];
  }

  // A forward tree on the main thread: composite root or a plain aten op, 0-3 children, each with
  // an autograd node recorded for the backward pass.
  void Forward() {
    if (rng_() % 3 == 0) {
      std::size_t root = Open(kMain, kCompositeOps[rng_() % std::size(kCompositeOps)], -1, 0, true);
      std::size_t children = Uniform(1, 3);
      bool leaf = true;
      for (std::size_t c = 0; c < children && !Full(); ++c) {
        if (rng_() % 4 == 0) {
          std::size_t util = Open(kMain, kUtilityOps[rng_() % std::size(kUtilityOps)], -1, 0, true);
          Close(kMain, util, true);
        } else {
          ForwardAtenOp();
        }
        leaf = false;
      }
      Close(kMain, root, leaf);
    } else {
      ForwardAtenOp();
    }
  }
  void ForwardAtenOp() {
    std::size_t which = rng_() % std::size(kAutogradOps);
    std::int64_t seq = next_seq_++;
    std::size_t index = Open(kMain, forward_names_[which], seq, 0, true);
    bool leaf = true;
    if (rng_() % 4 == 0 && !Full()) {  // an allocation inside
      std::size_t util = Open(kMain, kUtilityOps[rng_() % 3], -1, 0, true);
      Close(kMain, util, true);
      leaf = false;
    }
    Close(kMain, index, leaf);
    pending_backward_.emplace_back(seq, which);
  }

  // evaluate_function: XBackward0 > XBackward0 (same seq, fwd thread = main) > 0-2 aten ops.
  void Backward(std::int64_t seq, std::size_t which) {
    std::string node = kAutogradOps[which].second;
    std::size_t outer = Open(kAutograd, kEvaluatePrefix + node, seq, kMainTid, false);
    if (Full()) return Close(kAutograd, outer, true);
    std::size_t inner = Open(kAutograd, node, seq, kMainTid, false);
    std::size_t children = Uniform(0, 2);
    for (std::size_t c = 0; c < children && !Full(); ++c) {
      std::size_t op = Open(kAutograd, forward_names_[rng_() % forward_names_.size()], -1, 0, true);
      Close(kAutograd, op, true);
    }
    Close(kAutograd, inner, children == 0);
    Close(kAutograd, outer, false);
  }

  void Loader(Thread thread) {
    std::size_t root = Open(thread, kLoaderNext, -1, 0, false);
    std::size_t children = Uniform(1, 4);
    for (std::size_t c = 0; c < children && !Full(); ++c) {
      std::size_t op = Open(thread, kUtilityOps[rng_() % std::size(kUtilityOps)], -1, 0, true);
      thread_time_[thread] += Gap(1'000, 20'000);  // host-side work, no kernels
      Close(thread, op, false);
    }
    Close(thread, root, false);
  }

  // One training step: kStepForwardOps forward ops on the main thread, their backward nodes on the
  // autograd thread (about twice as many), kStepLoaderOps on each loader thread, then the
  // optimizer. 2M ops make about 70 steps.
  void Step(std::int64_t step) {
    for (Thread loader : {kLoader0, kLoader1}) {
      thread_time_[loader] = std::max(thread_time_[loader], thread_time_[kMain] - 5'000'000);
      for (std::size_t before = ops_->size(); ops_->size() - before < kStepLoaderOps && !Full();)
        Loader(loader);
    }
    if (Full()) return;
    std::size_t step_op = Open(kMain, kStepName + std::to_string(step), -1, 0, false);
    if (!Full()) {
      std::size_t zero = Open(kMain, kZeroGrad, -1, 0, false);
      Close(kMain, zero, false);
    }
    pending_backward_.clear();
    for (std::size_t before = ops_->size(); ops_->size() - before < kStepForwardOps && !Full();) Forward();
    // Autograd runs the graph in reverse once the forward pass is done; the main thread waits.
    thread_time_[kAutograd] = std::max(thread_time_[kAutograd], thread_time_[kMain]);
    for (auto it = pending_backward_.rbegin(); it != pending_backward_.rend() && !Full(); ++it) {
      Backward(it->first, it->second);
      if (rng_() % 16 == 0 && !Full()) {
        std::size_t acc = Open(kAutograd, kEvaluatePrefix + std::string(kAccumulateGrad), -1, 0, false);
        Close(kAutograd, acc, true);
      }
    }
    thread_time_[kMain] = std::max(thread_time_[kMain], thread_time_[kAutograd]);
    if (!Full()) {
      std::size_t opt = Open(kMain, kOptimizerStep, -1, 0, false);
      for (int i = 0; i < 6 && !Full(); ++i) {
        std::size_t op = Open(kMain, kOptimizerOps[rng_() % std::size(kOptimizerOps)], -1, 0, true);
        Close(kMain, op, true);
      }
      Close(kMain, opt, false);
    }
    Close(kMain, step_op, false);
  }

  // Spreads `rows` kernels over the leaf ops of the main and autograd threads, in order; each
  // kernel's correlation id goes onto its op (CUPTI external correlation).
  void AddKernels(Workload& out, bool with_api_calls) {
    std::vector<KernelName> kernel_names = MakeKernelNames(500);
    out.distinct_kernel_names = kernel_names.size();
    std::uint64_t rows = budget_;
    out.tasks.reserve(rows);
    if (with_api_calls) out.api_calls.reserve(rows);
    std::map<std::uint32_t, std::int64_t> stream_time;
    for (std::uint32_t stream : kStreams) stream_time[stream] = kStartNs;
    // Kernel choice depends on the op's name, so an op tends to launch the same kernels.
    std::hash<std::string> hash;
    for (std::uint64_t k = 0; k < rows; ++k) {
      TorchOp& op = (*ops_)[launchers_.empty() ? 0 : launchers_[k * launchers_.size() / rows]];
      std::uint64_t correlation = k + 1;
      op.correlation_ids.push_back(correlation);
      std::int64_t span = std::max<std::int64_t>(op.end_ns - op.start_ns, 1);
      std::int64_t launch =
          op.start_ns + static_cast<std::int64_t>(rng_() % static_cast<std::uint64_t>(span));
      std::uint32_t stream = rng_() % 10 == 0 ? kStreams[1 + rng_() % 3] : kStreams[0];
      std::size_t name_index =
          (hash(op.name) + op.correlation_ids.size() * 7 + (rng_() % 4 == 0 ? rng_() : 0)) %
          kernel_names.size();
      const KernelName& kernel_name = kernel_names[name_index];
      DeviceTask task;
      task.kind = trace::TaskKind::kKernel;
      task.start_ns = std::max(stream_time[stream], launch + 4'000) + Gap(0, 2'000);
      task.end_ns = task.start_ns + Gap(1'500, 60'000);
      stream_time[stream] = task.end_ns;
      task.device = 0;
      task.stream = stream;
      task.context = 1;
      task.correlation_id = correlation;
      task.pid = kPid;
      task.name = kernel_name.name;
      task.short_name = kernel_name.short_name;
      // A kernel runs with the launch shapes of the few tensor sizes it sees: 4 per name.
      std::uint64_t variant = rng_() % 4;
      std::uint64_t shape = name_index * 2654435761u + variant * 40503u;
      task.block[0] = 64u << (name_index % 5);  // 64..1024
      task.grid[0] = static_cast<std::uint32_t>(1 + shape % 8192);
      task.grid[1] = name_index % 3 == 0 ? static_cast<std::uint32_t>(1 + (shape >> 13) % 32) : 1;
      task.grid[2] = name_index % 7 == 0 ? 4 : 1;
      out.tasks.push_back(std::move(task));
      if (with_api_calls) {
        ApiCall call;
        call.start_ns = launch;
        call.end_ns = launch + Gap(2'000, 6'000);
        call.pid = kPid;
        call.tid = op.tid;
        call.name = "cudaLaunchKernel";
        call.correlation_id = correlation;
        call.launches_device_work = true;
        out.api_calls.push_back(std::move(call));
      }
    }
  }

  std::mt19937_64 rng_;
  std::uint64_t budget_;
  std::vector<Signature> signatures_;
  std::vector<std::string> forward_names_;
  std::array<std::int64_t, 4> thread_time_{};
  std::int64_t next_seq_ = 0;
  std::vector<std::pair<std::int64_t, std::size_t>> pending_backward_;  // (seq, kAutogradOps index)
  std::vector<std::size_t> launchers_;                                  // leaf ops that launch kernels
  std::vector<TorchOp>* ops_ = nullptr;
};

// ---------------------------------------------------------------------------------------------
// Reading the result back (not timed).

struct TableCount {
  std::string name;
  std::uint64_t rows = 0;
};

// Row counts of every table in the file, in sqlite_master order. Empty on error (printed).
std::vector<TableCount> CountRows(const std::string& path) {
  std::vector<TableCount> counts;
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    std::fprintf(stderr, "db_writer_benchmark: cannot open %s: %s\n", path.c_str(),
                 db != nullptr ? sqlite3_errmsg(db) : "out of memory");
    sqlite3_close(db);
    return counts;
  }
  std::vector<std::string> tables;
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db, "SELECT name FROM sqlite_master WHERE type='table' ORDER BY rowid", -1, &stmt,
                         nullptr) == SQLITE_OK) {
    while (sqlite3_step(stmt) == SQLITE_ROW) {
      tables.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0)));
    }
  }
  sqlite3_finalize(stmt);
  for (const std::string& table : tables) {
    std::string sql = "SELECT count(*) FROM \"" + table + "\"";
    TableCount count{table, 0};
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) == SQLITE_OK &&
        sqlite3_step(stmt) == SQLITE_ROW) {
      count.rows = static_cast<std::uint64_t>(sqlite3_column_int64(stmt, 0));
    } else {
      std::fprintf(stderr, "db_writer_benchmark: %s: %s\n", sql.c_str(), sqlite3_errmsg(db));
    }
    sqlite3_finalize(stmt);
    counts.push_back(std::move(count));
  }
  sqlite3_close(db);
  return counts;
}

std::uint64_t CountOf(const std::vector<TableCount>& counts, std::string_view table) {
  for (const TableCount& count : counts) {
    if (count.name == table) return count.rows;
  }
  return 0;
}

std::uint64_t FileSize(const std::string& path) {
  std::error_code error;
  std::uintmax_t size = std::filesystem::file_size(path, error);
  return error ? 0 : static_cast<std::uint64_t>(size);
}

// 1234567 -> "1,234,567".
std::string Grouped(std::uint64_t value) {
  std::string digits = std::to_string(value);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// The Python peer.

std::string ShellQuote(const std::string& text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

// /usr/bin/python3 first, then python3 on PATH; the one chosen must import sqlite3.
std::optional<std::string> FindPython() {
  std::vector<std::string> candidates;
  if (access("/usr/bin/python3", X_OK) == 0) candidates.emplace_back("/usr/bin/python3");
  candidates.emplace_back("python3");
  for (const std::string& python : candidates) {
    std::string probe = ShellQuote(python) + " -c 'import sqlite3' >/dev/null 2>&1";
    if (std::system(probe.c_str()) == 0) return python;
  }
  return std::nullopt;
}

struct PeerResult {
  std::uint64_t rows = 0;  // PYTORCH_API + TASK
  std::uint64_t string_ids = 0;
  double seconds = 0;
  std::uint64_t bytes = 0;
};

// Runs the peer; its stdout's last "peer-result ..." line carries the figures. nullopt on failure
// (the reason is printed).
std::optional<PeerResult> RunPeer(const std::string& python, const std::string& script,
                                  const std::string& source_db, const std::string& out_db, bool all_tables) {
  std::string command = ShellQuote(python) + " " + ShellQuote(script) + " --source " + ShellQuote(source_db) +
                        " --out " + ShellQuote(out_db) + (all_tables ? " --all-tables" : "");
  std::FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) {
    std::fprintf(stderr, "db_writer_benchmark: popen(%s) failed\n", command.c_str());
    return std::nullopt;
  }
  std::optional<PeerResult> result;
  char line[1024];
  while (std::fgets(line, sizeof line, pipe) != nullptr) {
    PeerResult parsed;
    if (std::sscanf(line, "peer-result rows=%" SCNu64 " string_ids=%" SCNu64 " seconds=%lf bytes=%" SCNu64,
                    &parsed.rows, &parsed.string_ids, &parsed.seconds, &parsed.bytes) == 4) {
      result = parsed;
    } else {
      std::fputs(line, stdout);  // the peer's own notes
    }
  }
  int rc = pclose(pipe);
  if (rc != 0 || !result) {
    std::fprintf(stderr, "db_writer_benchmark: peer failed (exit status %d): %s\n", rc, command.c_str());
    return std::nullopt;
  }
  return result;
}

// ---------------------------------------------------------------------------------------------

double ProcessCpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval& tv) {
    return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) / 1e6;
  };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

double Seconds(std::chrono::steady_clock::duration d) { return std::chrono::duration<double>(d).count(); }

void PrintRow(const char* writer, std::uint64_t rows, double seconds, double bytes_per_row,
              std::optional<double> ratio) {
  double rate = seconds > 0 ? static_cast<double>(rows) / seconds : 0.0;
  char ratio_text[32] = "-";
  if (ratio) std::snprintf(ratio_text, sizeof ratio_text, "%.2fx", *ratio);
  std::printf("%-38s %12s %9.3f %12s %10.1f %10s\n", writer, Grouped(rows).c_str(), seconds,
              Grouped(static_cast<std::uint64_t>(rate)).c_str(), bytes_per_row, ratio_text);
}

// One whole run's figures, for the --repeats summary.
struct RunFigures {
  double writer_seconds = 0;
  double peer_seconds = 0;      // 0: no peer
  double peer_all_seconds = 0;  // 0: no peer
  std::uint64_t headline_rows = 0;
  std::uint64_t all_rows = 0;
  double cpu_seconds = 0;
};

int Run(const Flags& flags, RunFigures* figures) {
  namespace fs = std::filesystem;
  std::printf(
      "db_writer_benchmark: %s TorchOp + %s kernel records%s, Submit batches of %s records, seed %" PRIu64
      "\n",
      Grouped(flags.rows).c_str(), Grouped(flags.rows).c_str(),
      flags.with_api_calls ? " + 1 cudaLaunchKernel ApiCall per kernel" : "", Grouped(flags.batch).c_str(),
      flags.seed);

  // Generation (not timed).
  auto gen_start = std::chrono::steady_clock::now();
  Workload work = Generator(flags.seed, flags.rows).Run(flags.with_api_calls);
  double gen_seconds = Seconds(std::chrono::steady_clock::now() - gen_start);
  std::uint64_t op_links = 0;
  for (const TorchOp& op : work.ops) op_links += op.correlation_ids.empty() ? 0u : 1u;
  std::printf(
      "generated in %.2f s (not timed): %zu distinct op names, %zu input signatures, %zu kernel names, "
      "%s ops carry kernel correlation ids\n",
      gen_seconds, work.distinct_op_names, work.signatures, work.distinct_kernel_names,
      Grouped(op_links).c_str());

  std::string out_dir = flags.out_dir;
  bool made_temp = false;
  if (out_dir.empty()) {
    std::string pattern = (fs::temp_directory_path() / "gpuprof_db_bench_XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) {
      std::fprintf(stderr, "db_writer_benchmark: mkdtemp(%s) failed\n", pattern.c_str());
      return 1;
    }
    out_dir = pattern;
    made_temp = true;
  }
  auto cleanup = [&] {
    if (made_temp && !flags.keep) {
      std::error_code error;
      fs::remove_all(out_dir, error);
    }
  };

  db::WriterOptions options;
  options.out_dir = out_dir;
  options.run.hostname = "bench-host";
  options.run.pid = kPid;
  options.run.rank = 0;
  options.run.device = 0;
  options.run.start_ns = kStartNs;
  options.run.end_ns = work.end_ns;
  options.run.devices = {{0, "NVIDIA H100 80GB HBM3"}};
  options.run.config_json =
      R"({"record_shapes": true, "with_stack": false, "source": "db_writer_benchmark"})";

  // The Submit batches, built before the timer as a collector's per-thread buffers hold them when
  // it flushes (RecordCollector::Drain hands them over by move): alternate torch-op, kernel (and
  // API) batches. Building records is the producer's cost, like the peer's row tuples.
  const std::size_t op_count = work.ops.size();
  const std::size_t task_count = work.tasks.size();
  const std::size_t api_count = work.api_calls.size();
  std::vector<std::vector<Record>> batches;
  {
    std::size_t op_at = 0;
    std::size_t task_at = 0;
    std::size_t api_at = 0;
    auto cut = [&](auto& source, std::size_t& at) {
      if (at >= source.size()) return;
      std::size_t end = std::min<std::size_t>(source.size(), at + flags.batch);
      std::vector<Record>& batch = batches.emplace_back();
      batch.reserve(end - at);
      for (; at < end; ++at) batch.emplace_back(std::move(source[at]));
    };
    while (op_at < op_count || task_at < task_count || api_at < api_count) {
      cut(work.ops, op_at);
      cut(work.api_calls, api_at);
      cut(work.tasks, task_at);
    }
    work.ops.clear();
    work.tasks.clear();
    work.api_calls.clear();
  }

  // Timed: Create + Submit (moving the batches in) + Finalize.
  double cpu0 = ProcessCpuSeconds();
  auto t0 = std::chrono::steady_clock::now();
  // Every batch arrives at once, so the queue may hold them all (the default limit would drop the
  // --with-api-calls stream; a live collector flushes while the program runs).
  StatusOr<std::unique_ptr<db::ProfileWriter>> created = db::internal::CreateProfileWriter(
      options, std::max(db::internal::kDefaultMaxQueuedRecords, op_count + task_count + api_count));
  if (!created.ok()) {
    std::fprintf(stderr, "db_writer_benchmark: ProfileWriter::Create: %s\n",
                 created.status().ToString().c_str());
    cleanup();
    return 1;
  }
  std::unique_ptr<db::ProfileWriter> writer = std::move(created).value();
  auto t1 = std::chrono::steady_clock::now();
  for (std::vector<Record>& batch : batches) writer->Submit(std::move(batch));
  auto t2 = std::chrono::steady_clock::now();
  // How far the writer thread got while records were still arriving: the rest is Finalize's drain.
  std::uint64_t written_at_submit_end = writer->stats().records;
  StatusOr<std::string> final_path = writer->Finalize(work.end_ns);
  auto t3 = std::chrono::steady_clock::now();
  double cpu_seconds = ProcessCpuSeconds() - cpu0;
  if (!final_path.ok()) {
    std::fprintf(stderr, "db_writer_benchmark: ProfileWriter::Finalize: %s\n",
                 final_path.status().ToString().c_str());
    cleanup();
    return 1;
  }
  db::WriterStats stats = writer->stats();
  writer.reset();

  double total_seconds = Seconds(t3 - t0);
  std::printf(
      "writer phases: Create %.3f s, Submit (moving the batches in) %.3f s, "
      "Finalize (drain + derive + index + rename) %.3f s\n"
      "  records the writer thread had written when the last Submit returned: %s of %s\n",
      Seconds(t1 - t0), Seconds(t2 - t1), Seconds(t3 - t2), Grouped(written_at_submit_end).c_str(),
      Grouped(op_count + task_count + api_count).c_str());
  // CPU time of the whole process (producer + writer thread) over the timed section, and the load
  // average: on a shared 2-core machine other work shows up as wall time well above CPU time.
  double load[1] = {0.0};
  getloadavg(load, 1);
  std::printf(
      "  process CPU time over the timed section: %.3f s (user+sys); 1-min load average at the end: %.2f\n",
      cpu_seconds, load[0]);
  std::printf("writer stats: %s records, %s rows, %s dropped, %s bytes\n", Grouped(stats.records).c_str(),
              Grouped(stats.rows).c_str(), Grouped(stats.dropped_records).c_str(),
              Grouped(stats.bytes).c_str());

  // Verification and per-table counts (not timed).
  std::uint64_t file_bytes = FileSize(*final_path);
  std::vector<TableCount> counts = CountRows(*final_path);
  std::uint64_t api_rows = CountOf(counts, "PYTORCH_API");
  std::uint64_t task_rows = CountOf(counts, "TASK");
  std::uint64_t all_rows = 0;
  std::printf("\nrows per table in %s (%s bytes):\n", final_path->c_str(), Grouped(file_bytes).c_str());
  for (const TableCount& count : counts) {
    all_rows += count.rows;
    if (count.rows > 0) std::printf("  %-26s %12s\n", count.name.c_str(), Grouped(count.rows).c_str());
  }
  bool partial_left = fs::exists(*final_path + db::kPartialSuffix);
  int status = 0;
  if (api_rows != op_count || task_rows != task_count || partial_left || file_bytes == 0) {
    std::fprintf(stderr,
                 "db_writer_benchmark: FAILED: PYTORCH_API %" PRIu64 " rows (expected %zu), TASK %" PRIu64
                 " rows (expected %zu), final file %" PRIu64 " bytes%s\n",
                 api_rows, op_count, task_rows, task_count, file_bytes,
                 partial_left ? ", a .partial file is left beside it" : "");
    status = 1;
  }
  std::uint64_t headline_rows = api_rows + task_rows;

  // The peers: the headline one (PYTORCH_API, TASK, STRING_IDS, as issue 3 defines it), then the
  // same method on every table of the writer's file.
  std::optional<PeerResult> peer;
  std::optional<PeerResult> peer_all;
  bool peer_failed = false;
  if (flags.no_peer) {
    std::printf("\npeer: skipped (--no-peer)\n");
  } else if (status == 0) {
    std::optional<std::string> python = FindPython();
    if (!python) {
      std::printf("\npeer: unavailable (no python3 with the sqlite3 module)\n");
    } else {
      std::printf("\npeer: %s %s\n", python->c_str(), flags.peer_script.c_str());
      std::fflush(stdout);
      peer = RunPeer(*python, flags.peer_script, *final_path, (fs::path(out_dir) / "python_peer.db").string(),
                     /*all_tables=*/false);
      std::fflush(stdout);
      if (peer) {
        peer_all = RunPeer(*python, flags.peer_script, *final_path,
                           (fs::path(out_dir) / "python_peer_all.db").string(), /*all_tables=*/true);
      }
      peer_failed = !peer.has_value() || !peer_all.has_value();
      if (peer && peer->rows != headline_rows) {
        std::fprintf(stderr, "db_writer_benchmark: peer wrote %" PRIu64 " rows, expected %" PRIu64 "\n",
                     peer->rows, headline_rows);
        peer_failed = true;
      }
      if (peer_all && peer_all->rows != all_rows) {
        std::fprintf(stderr,
                     "db_writer_benchmark: peer (all tables) wrote %" PRIu64 " rows, expected %" PRIu64 "\n",
                     peer_all->rows, all_rows);
        peer_failed = true;
      }
    }
  }
  bool have_peer = !peer_failed && peer && peer_all;

  auto rate = [](std::uint64_t rows, double seconds) {
    return seconds > 0 ? static_cast<double>(rows) / seconds : 0.0;
  };
  auto per_row = [](std::uint64_t bytes, std::uint64_t rows) {
    return rows > 0 ? static_cast<double>(bytes) / static_cast<double>(rows) : 0.0;
  };
  double writer_rate = rate(headline_rows, total_seconds);
  std::optional<double> ratio;
  std::optional<double> ratio_all;
  if (have_peer && peer->seconds > 0 && peer_all->seconds > 0) {
    ratio = writer_rate / rate(peer->rows, peer->seconds);
    ratio_all = rate(all_rows, total_seconds) / rate(peer_all->rows, peer_all->seconds);
  }
  std::printf("\n%-38s %12s %9s %12s %10s %10s\n", "writer", "rows", "seconds", "rows/s", "bytes/row",
              "vs python");
  PrintRow("gpuprof ProfileWriter (API+TASK)", headline_rows, total_seconds,
           per_row(file_bytes, headline_rows), ratio);
  if (have_peer) {
    PrintRow("python sqlite3 executemany (API+TASK)", peer->rows, peer->seconds,
             per_row(peer->bytes, peer->rows), 1.0);
  }
  PrintRow("gpuprof ProfileWriter (all rows)", all_rows, total_seconds, per_row(file_bytes, all_rows),
           ratio_all);
  if (have_peer) {
    PrintRow("python sqlite3 executemany (all rows)", peer_all->rows, peer_all->seconds,
             per_row(peer_all->bytes, peer_all->rows), 1.0);
  }
  std::printf("\nfile size: %.1f MiB (gpuprof)", static_cast<double>(file_bytes) / (1024.0 * 1024.0));
  if (have_peer) {
    std::printf(
        ", %.1f MiB (python API+TASK: PYTORCH_API, TASK, STRING_IDS; %s strings), %.1f MiB (python all rows)",
        static_cast<double>(peer->bytes) / (1024.0 * 1024.0), Grouped(peer->string_ids).c_str(),
        static_cast<double>(peer_all->bytes) / (1024.0 * 1024.0));
  }
  std::printf("\ntarget: >= 1.0M rows/s and >= 2x python\n");
  std::printf("result: %.2fM rows/s (%s)", writer_rate / 1e6,
              writer_rate >= kTargetRowsPerSecond ? "met" : "NOT met");
  if (ratio) {
    std::printf(", %.2fx python (%s); all rows: %.2fx python", *ratio,
                *ratio >= kTargetRatio ? "met" : "NOT met", *ratio_all);
  } else {
    std::printf(", ratio vs python not measured");
  }
  std::printf("\n");
  if (flags.keep) std::printf("kept: %s\n", out_dir.c_str());
  cleanup();
  if (peer_failed) status = 1;
  figures->writer_seconds = total_seconds;
  figures->headline_rows = headline_rows;
  figures->all_rows = all_rows;
  figures->cpu_seconds = cpu_seconds;
  if (have_peer) {
    figures->peer_seconds = peer->seconds;
    figures->peer_all_seconds = peer_all->seconds;
  }
  return status;
}

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

// --repeats: every run prints its own table; then one line per run and the medians.
int RunRepeated(const Flags& flags) {
  std::vector<RunFigures> runs;
  for (std::uint64_t r = 0; r < flags.repeats; ++r) {
    if (flags.repeats > 1)
      std::printf("\n===== run %" PRIu64 " of %" PRIu64 " =====\n", r + 1, flags.repeats);
    RunFigures figures;
    if (int status = Run(flags, &figures); status != 0) return status;
    runs.push_back(figures);
  }
  if (flags.repeats <= 1) return 0;
  std::printf("\n===== %" PRIu64 " runs =====\n", flags.repeats);
  std::printf("%-5s %12s %12s %10s %12s %12s\n", "run", "writer s", "python s", "vs python", "all rows vs",
              "writer CPU s");
  std::vector<double> writer, python, ratio, ratio_all;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const RunFigures& f = runs[i];
    const bool peer = f.peer_seconds > 0 && f.peer_all_seconds > 0;
    const double r = peer ? f.peer_seconds / f.writer_seconds : 0;  // same headline rows on both sides
    const double r_all = peer ? f.peer_all_seconds / f.writer_seconds : 0;
    std::printf("%-5zu %12.3f %12.3f %9.2fx %11.2fx %12.3f\n", i + 1, f.writer_seconds, f.peer_seconds, r,
                r_all, f.cpu_seconds);
    writer.push_back(f.writer_seconds);
    if (peer) {
      python.push_back(f.peer_seconds);
      ratio.push_back(r);
      ratio_all.push_back(r_all);
    }
  }
  const double writer_rate = static_cast<double>(runs.front().headline_rows) / Median(writer);
  std::printf("median: writer %.3f s (%.2fM rows/s, %s)", Median(writer), writer_rate / 1e6,
              writer_rate >= kTargetRowsPerSecond ? "met" : "NOT met");
  if (!ratio.empty()) {
    std::printf(", python %.3f s, %.2fx python (%s), all rows %.2fx", Median(python), Median(ratio),
                Median(ratio) >= kTargetRatio ? "met" : "NOT met", Median(ratio_all));
  }
  std::printf("\n");
  return 0;
}

}  // namespace
}  // namespace gpuprof::bench

int main(int argc, char** argv) {
  gpuprof::bench::Flags flags;
  bool help = false;
  if (!gpuprof::bench::ParseFlags(argc, argv, &flags, &help)) return 2;
  if (help) {
    gpuprof::bench::PrintUsage(stdout);
    return 0;
  }
  if (flags.repeats == 0) {
    std::fprintf(stderr, "db_writer_benchmark: --repeats must be at least 1\n");
    return 2;
  }
  return gpuprof::bench::RunRepeated(flags);
}
