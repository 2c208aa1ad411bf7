#include "profile_workload.h"

#include <algorithm>
#include <array>
#include <functional>
#include <initializer_list>
#include <map>
#include <random>
#include <set>
#include <string_view>
#include <utility>

namespace gpuprof::bench {
namespace {

using trace::ApiCall;
using trace::DeviceTask;
using trace::Record;
using trace::TorchOp;

constexpr std::uint32_t kPid = kWorkloadPid;
constexpr std::uint32_t kMainTid = 4242;
constexpr std::uint32_t kAutogradTid = 4301;
constexpr std::uint32_t kLoaderTids[] = {4310, 4311};
constexpr std::int64_t kStartNs = kWorkloadStartNs;
constexpr std::uint32_t kStreams[] = {7, 13, 17, 21};

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
// Record generation.

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

}  // namespace

Workload GenerateWorkload(std::uint64_t seed, std::uint64_t rows, bool with_api_calls) {
  return Generator(seed, rows).Run(with_api_calls);
}

std::vector<std::vector<Record>> CutIntoBatches(Workload* work, std::size_t batch) {
  std::vector<std::vector<Record>> batches;
  std::size_t op_at = 0;
  std::size_t task_at = 0;
  std::size_t api_at = 0;
  auto cut = [&](auto& source, std::size_t& at) {
    if (at >= source.size()) return;
    std::size_t end = std::min<std::size_t>(source.size(), at + batch);
    std::vector<Record>& out = batches.emplace_back();
    out.reserve(end - at);
    for (; at < end; ++at) out.emplace_back(std::move(source[at]));
  };
  while (op_at < work->ops.size() || task_at < work->tasks.size() || api_at < work->api_calls.size()) {
    cut(work->ops, op_at);
    cut(work->api_calls, api_at);
    cut(work->tasks, task_at);
  }
  work->ops.clear();
  work->tasks.clear();
  work->api_calls.clear();
  return batches;
}

db::WriterOptions WorkloadWriterOptions(const Workload& work, const std::string& out_dir,
                                        const std::string& source) {
  db::WriterOptions options;
  options.out_dir = out_dir;
  options.run.hostname = "bench-host";
  options.run.pid = kPid;
  options.run.rank = 0;
  options.run.device = 0;
  options.run.start_ns = kStartNs;
  options.run.end_ns = work.end_ns;
  options.run.devices = {{0, "NVIDIA H100 80GB HBM3"}};
  options.run.config_json = R"({"record_shapes": true, "with_stack": false, "source": ")" + source + "\"}";
  return options;
}

}  // namespace gpuprof::bench
