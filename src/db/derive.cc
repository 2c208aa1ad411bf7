#include "db/derive.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstddef>
#include <iterator>
#include <limits>
#include <numeric>
#include <tuple>
#include <utility>

#include "base/logging.h"

namespace gpuprof::db {
namespace {

constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();

// Only RecordFunction ops (type 50001) nest, pair and own device work. torch_npu builds its op
// tree, its fwd/bwd pairs and its launch links from torch ops alone: a Python-tracer frame (50003)
// around a ProfilerStep must not make the step non-root, nor take a kernel from the op inside it.
bool IsTorchOp(const OpSpan& op) { return op.type == trace::TorchOp::Type::kOp; }

// An op's window, copied out of OpSpan so the sorts below move 40-byte keys, not OpSpans.
struct Window {
  std::uint32_t tid = 0;
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  std::uint64_t api_row = 0;
  std::size_t op = 0;  // index into the caller's ops
};

// Nesting order: by thread, start ascending, end descending, api_row ascending. Every op that
// encloses another on its thread comes before it; of two ops with identical windows the one with
// the lower api_row counts as the outer one (a choice; the reference never meets the case because
// RecordFunction ranges of one thread never coincide to the nanosecond in practice).
// (Explicit comparisons rather than std::tie in the hot comparators: unoptimized sanitizer builds
// run the 1M-row tests several times faster.)
bool NestingLess(const Window& a, const Window& b) {
  if (a.tid != b.tid) return a.tid < b.tid;
  if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
  if (a.end_ns != b.end_ns) return a.end_ns > b.end_ns;
  if (a.api_row != b.api_row) return a.api_row < b.api_row;
  return a.op < b.op;
}

std::vector<Window> TorchOpsInNestingOrder(const std::vector<OpSpan>& ops) {
  std::vector<Window> windows;
  windows.reserve(ops.size());
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const OpSpan& op = ops[i];
    if (IsTorchOp(op)) windows.push_back({op.tid, op.start_ns, op.end_ns, op.api_row, i});
  }
  std::sort(windows.begin(), windows.end(), NestingLess);
  return windows;
}

struct PointQuery {
  std::uint32_t tid = 0;
  std::int64_t time_ns = 0;
  std::size_t id = 0;  // the result slot
};

// For each query, the innermost op of `nesting` on the query's thread whose closed window
// [start_ns, end_ns] contains time_ns: the last such op in nesting order (latest start, then
// smallest end). kNone where none contains it. Returns `result_size` slots indexed by query id.
//
// One sweep per thread over ops and queries both sorted by time, with a stack of open ops: ops
// that start at or before the query are pushed, then ops on top that ended before it are popped;
// the top is the answer. An op below the top that has already ended is popped once it surfaces.
// Why this is exact even for ops that overlap without nesting: the answer X is pushed (it starts
// before t) and never popped (every query so far is <= t <= X.end); everything above X was pushed
// later, so it starts at or after X and, not being the answer, ends before t and is popped.
// O((n + q) log(n + q)) for the sorts, linear after.
std::vector<std::size_t> InnermostContaining(const std::vector<Window>& nesting,
                                             std::vector<PointQuery> queries, std::size_t result_size) {
  std::sort(queries.begin(), queries.end(), [](const PointQuery& a, const PointQuery& b) {
    if (a.tid != b.tid) return a.tid < b.tid;
    if (a.time_ns != b.time_ns) return a.time_ns < b.time_ns;
    return a.id < b.id;
  });
  std::vector<std::size_t> result(result_size, kNone);
  std::vector<const Window*> open;
  std::size_t next = 0;
  bool have_thread = false;
  std::uint32_t thread = 0;
  for (const PointQuery& query : queries) {
    if (!have_thread || query.tid != thread) {
      have_thread = true;
      thread = query.tid;
      open.clear();
      while (next < nesting.size() && nesting[next].tid < thread) ++next;
    }
    while (next < nesting.size() && nesting[next].tid == thread && nesting[next].start_ns <= query.time_ns) {
      open.push_back(&nesting[next++]);
    }
    while (!open.empty() && open.back()->end_ns < query.time_ns) open.pop_back();
    if (!open.empty()) result[query.id] = open.back()->op;
  }
  return result;
}

// Positions of `ops` in api_row order (the writer hands them over in that order; sort otherwise).
std::vector<std::size_t> ApiRowOrder(const std::vector<OpSpan>& ops) {
  std::vector<std::size_t> order(ops.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  auto by_row = [&ops](std::size_t a, std::size_t b) { return ops[a].api_row < ops[b].api_row; };
  if (!std::is_sorted(order.begin(), order.end(), by_row))
    std::stable_sort(order.begin(), order.end(), by_row);
  return order;
}

// fwd/bwd pairs (§3.4 fwd_bwd): per sequence number >= 0 the last forward (fwd_thread_id == 0)
// and the last backward op in api_row order, as torch_npu's filter_fwd_bwd_api ends up keeping
// (its timestamp comparison never fires). Pairs are numbered in order of the sequence number's
// first appearance (torch_npu's dict insertion order), from kFrameworkConnectionBase + 0: CUDA
// has no task queue, so no enqueue correlation ids to start after. Returns per api_row position
// the pair's connection id, 0 where the op is in no pair.
std::vector<std::uint64_t> FwdBwdPairIds(const std::vector<OpSpan>& ops,
                                         const std::vector<std::size_t>& by_row) {
  struct SeqOp {
    std::int64_t seq = 0;
    std::size_t pos = 0;
    bool backward = false;
  };
  std::vector<SeqOp> seq_ops;
  for (std::size_t pos = 0; pos < by_row.size(); ++pos) {
    const OpSpan& op = ops[by_row[pos]];
    if (IsTorchOp(op) && op.sequence_number >= 0) {
      seq_ops.push_back({op.sequence_number, pos, op.fwd_thread_id != 0});
    }
  }
  // Stable: within one sequence number the ops stay in api_row order.
  std::stable_sort(seq_ops.begin(), seq_ops.end(),
                   [](const SeqOp& a, const SeqOp& b) { return a.seq < b.seq; });

  struct Pair {
    std::size_t first_pos = 0;
    std::size_t forward = 0;
    std::size_t backward = 0;
  };
  std::vector<Pair> pairs;
  for (std::size_t begin = 0; begin < seq_ops.size();) {
    std::size_t end = begin;
    std::size_t forward = kNone;
    std::size_t backward = kNone;
    for (; end < seq_ops.size() && seq_ops[end].seq == seq_ops[begin].seq; ++end) {
      (seq_ops[end].backward ? backward : forward) = seq_ops[end].pos;
    }
    if (forward != kNone && backward != kNone) pairs.push_back({seq_ops[begin].pos, forward, backward});
    begin = end;
  }
  std::sort(pairs.begin(), pairs.end(),
            [](const Pair& a, const Pair& b) { return a.first_pos < b.first_pos; });

  std::vector<std::uint64_t> ids(by_row.size(), 0);
  for (std::size_t n = 0; n < pairs.size(); ++n) {
    ids[pairs[n].forward] = kFrameworkConnectionBase + n;
    ids[pairs[n].backward] = kFrameworkConnectionBase + n;
  }
  return ids;
}

}  // namespace

Connections DeriveConnections(const std::vector<OpSpan>& ops, const std::vector<LaunchSpan>& launches,
                              const std::unordered_map<std::uint64_t, std::vector<std::uint64_t>>& external) {
  const std::vector<std::size_t> by_row = ApiRowOrder(ops);
  std::vector<std::size_t> pos_of(ops.size());
  for (std::size_t pos = 0; pos < by_row.size(); ++pos) pos_of[by_row[pos]] = pos;

  const std::vector<std::uint64_t> pair_ids = FwdBwdPairIds(ops, by_row);

  // Device links as (api_row position, correlation id). A correlation id at or above 5<<28 would
  // read as a fwd/bwd id in CONNECTION_IDS (consumers pair by shared connectionId), so it is
  // dropped and counted; the collector keeps CUPTI ids below it (DB_SPEC §7).
  std::uint64_t out_of_range = 0;
  std::vector<std::pair<std::size_t, std::uint64_t>> links;
  std::uint64_t tagged = 0;
  std::uint64_t contained = 0;

  // 1. External correlation (DB_SPEC §7: preferred over time containment). Each id should belong
  // to one op; if a producer bug gives it to several, the innermost claimant keeps it so the
  // consumers' TASK join does not count the kernel twice.
  struct Claim {
    std::uint64_t correlation_id = 0;
    std::size_t op = 0;
  };
  std::vector<Claim> claims;
  // Ids in the fwd/bwd space collide with the pairs; an mstx op's mark id (kMstxConnectionBase,
  // past every 32-bit correlation id) is claimed like a launch's.
  auto claim = [&](std::uint64_t id, std::size_t op) {
    if (id >= kFrameworkConnectionBase && id < kRuntimeConnectionOffset) {
      ++out_of_range;
    } else {
      claims.push_back({id, op});
    }
  };
  for (std::size_t i = 0; i < ops.size(); ++i) {
    for (std::uint64_t id : ops[i].correlation_ids) claim(id, i);
    if (ops[i].external_id == 0) continue;
    if (auto it = external.find(ops[i].external_id); it != external.end()) {
      for (std::uint64_t id : it->second) claim(id, i);
    }
  }
  std::sort(claims.begin(), claims.end(), [&ops](const Claim& a, const Claim& b) {
    if (a.correlation_id != b.correlation_id) return a.correlation_id < b.correlation_id;
    const OpSpan& x = ops[a.op];
    const OpSpan& y = ops[b.op];
    // Innermost first: latest start, then smallest end, then highest api_row (NestingLess reversed).
    return std::tie(y.start_ns, x.end_ns, y.api_row, b.op) < std::tie(x.start_ns, y.end_ns, x.api_row, a.op);
  });
  std::vector<std::uint64_t> claimed;  // sorted, unique
  std::uint64_t contested = 0;
  for (std::size_t k = 0; k < claims.size(); ++k) {
    if (k > 0 && claims[k].correlation_id == claims[k - 1].correlation_id) {
      if (claims[k].op != claims[k - 1].op) ++contested;
      continue;
    }
    claimed.push_back(claims[k].correlation_id);
    links.emplace_back(pos_of[claims[k].op], claims[k].correlation_id);
    ++tagged;
  }

  // 2. Launches no op claimed: the innermost torch op on the launching thread that contains the
  // launch's start (torch_npu's get_torch_op_connection_ids_without_task_queue).
  std::vector<PointQuery> queries;
  for (std::size_t i = 0; i < launches.size(); ++i) {
    const LaunchSpan& launch = launches[i];
    // Ids in the fwd/bwd space collide with the pairs; a collective's or a host-only mark's own id
    // (kCommunicationConnectionBase, kMstxConnectionBase: past every 32-bit correlation id) is
    // linked like a launch.
    if (launch.correlation_id >= kFrameworkConnectionBase &&
        launch.correlation_id < kRuntimeConnectionOffset) {
      ++out_of_range;
    } else if (!std::binary_search(claimed.begin(), claimed.end(), launch.correlation_id)) {
      queries.push_back({launch.tid, launch.start_ns, i});
    }
  }
  if (!queries.empty()) {
    const std::vector<std::size_t> owner =
        InnermostContaining(TorchOpsInNestingOrder(ops), std::move(queries), launches.size());
    for (std::size_t i = 0; i < launches.size(); ++i) {
      if (owner[i] != kNone) {
        links.emplace_back(pos_of[owner[i]], launches[i].correlation_id);
        ++contained;
      }
    }
  }
  // Bucket the links by op (a counting sort: linear, where sorting 1M pairs dominated the run);
  // each op's few ids are ordered and deduplicated when its rows are written.
  std::vector<std::size_t> first_link(by_row.size() + 1, 0);
  for (const auto& [pos, id] : links) ++first_link[pos + 1];
  std::partial_sum(first_link.begin(), first_link.end(), first_link.begin());
  std::vector<std::uint64_t> link_ids(links.size());
  {
    std::vector<std::size_t> fill(first_link.begin(), first_link.end() - 1);
    for (const auto& [pos, id] : links) link_ids[fill[pos]++] = id;
  }
  links = {};

  if (out_of_range > 0) {
    GPUPROF_LOG(kWarning) << "CONNECTION_IDS: " << out_of_range
                          << " device correlation id(s) >= 5<<28 (the fwd/bwd id space) were not linked";
  }
  if (contested > 0) {
    GPUPROF_LOG(kWarning)
        << "CONNECTION_IDS: " << contested
        << " external correlation id(s) were claimed by more than one op; the innermost op kept each";
  }

  // Rows: per op in api_row order, its fwd/bwd id first, then its device links by correlation id.
  Connections out;
  out.tagged_links = tagged;
  out.contained_links = contained;
  out.rows.reserve(link_ids.size());
  for (std::size_t pos = 0; pos < by_row.size(); ++pos) {
    const auto begin = link_ids.begin() + static_cast<std::ptrdiff_t>(first_link[pos]);
    const auto end = link_ids.begin() + static_cast<std::ptrdiff_t>(first_link[pos + 1]);
    if (pair_ids[pos] == 0 && begin == end) continue;
    const std::uint64_t index = out.api_index.size();
    out.api_index.emplace_back(ops[by_row[pos]].api_row, index);
    if (pair_ids[pos] != 0) out.rows.push_back({index, pair_ids[pos]});
    std::sort(begin, end);
    for (auto it = begin; it != end; ++it) {
      if (it == begin || *it != *(it - 1)) out.rows.push_back({index, *it});
    }
  }
  return out;
}

std::vector<StepRow> DeriveSteps(const std::vector<OpSpan>& ops) {
  // In nesting order an op is enclosed exactly when an earlier op of its thread (which starts at
  // or before it) ends at or after it, so "root" is "ends after every earlier op of the thread".
  std::vector<StepRow> rows;
  const std::vector<Window> nesting = TorchOpsInNestingOrder(ops);
  std::int64_t max_end = 0;
  for (std::size_t k = 0; k < nesting.size(); ++k) {
    const Window& w = nesting[k];
    const bool first_of_thread = k == 0 || nesting[k - 1].tid != w.tid;
    const bool root = first_of_thread || w.end_ns > max_end;
    max_end = first_of_thread ? w.end_ns : std::max(max_end, w.end_ns);
    const OpSpan& op = ops[w.op];
    if (root && op.step_number >= 0) rows.push_back({op.step_number, op.start_ns, op.end_ns});
  }
  std::sort(rows.begin(), rows.end(), [](const StepRow& a, const StepRow& b) {
    return std::tie(a.start_ns, a.id, a.end_ns) < std::tie(b.start_ns, b.id, b.end_ns);
  });
  return rows;
}

std::vector<OpMemoryRow> DeriveOpMemory(const std::vector<trace::AllocatorEvent>& events,
                                        const std::vector<OpSpan>& ops) {
  using Action = trace::AllocatorEvent::Action;

  // Per (device, ptr), in time order (input order among equal times).
  struct Key {
    std::int32_t device = 0;
    std::uint64_t ptr = 0;
    std::int64_t time_ns = 0;
    std::size_t event = 0;
  };
  std::vector<Key> keys;
  keys.reserve(events.size());
  for (std::size_t i = 0; i < events.size(); ++i)
    keys.push_back({events[i].device, events[i].ptr, events[i].time_ns, i});
  std::sort(keys.begin(), keys.end(), [](const Key& a, const Key& b) {
    if (a.device != b.device) return a.device < b.device;
    if (a.ptr != b.ptr) return a.ptr < b.ptr;
    if (a.time_ns != b.time_ns) return a.time_ns < b.time_ns;
    return a.event < b.event;
  });

  // Each MALLOC with the first FREE and the first BLOCK_FREE before the next MALLOC of its
  // (device, ptr). torch_npu's _get_valid_record_entry stops at the first repeated action instead
  // (MALLOC FREE FREE BLOCK_FREE keeps no BLOCK_FREE); the allocator never repeats one, so the two
  // agree on real streams and this form does not lose the block-free to a duplicate. Events
  // before a pointer's first MALLOC (allocated before collection began) make no row.
  struct Entry {
    std::size_t alloc = kNone;
    std::size_t free_event = kNone;
    std::size_t block_free_event = kNone;
    Key key;  // the MALLOC's, for the output order
  };
  std::vector<Entry> entries;
  for (const Key& key : keys) {
    const trace::AllocatorEvent& event = events[key.event];
    if (event.action == Action::kMalloc) {
      entries.push_back({key.event, kNone, kNone, key});
    } else if (!entries.empty() && entries.back().key.device == key.device &&
               entries.back().key.ptr == key.ptr) {
      // Keys are grouped by (device, ptr), so the last entry of the same block is its latest MALLOC.
      Entry& entry = entries.back();
      if (event.action == Action::kFree && entry.free_event == kNone) entry.free_event = key.event;
      if (event.action == Action::kBlockFree && entry.block_free_event == kNone)
        entry.block_free_event = key.event;
    }
  }

  // Output order: allocation time, then ptr (then device and input order, for determinism).
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    if (a.key.time_ns != b.key.time_ns) return a.key.time_ns < b.key.time_ns;
    if (a.key.ptr != b.key.ptr) return a.key.ptr < b.key.ptr;
    if (a.key.device != b.key.device) return a.key.device < b.key.device;
    return a.alloc < b.alloc;
  });

  // Op attribution (§3.7 step 4, without a task queue): the innermost torch op on the allocating
  // thread whose window contains the allocation time. Matched on tid alone, like launches: one DB
  // holds one process. torch_npu also skips ops named empty_tensor / malloc_workspace; only name
  // ids reach here, and CUDA's PyTorch has no such ops.
  std::vector<PointQuery> queries;
  queries.reserve(entries.size());
  for (std::size_t k = 0; k < entries.size(); ++k) {
    const trace::AllocatorEvent& alloc = events[entries[k].alloc];
    queries.push_back({alloc.tid, alloc.time_ns, k});
  }
  const std::vector<std::size_t> owner =
      InnermostContaining(TorchOpsInNestingOrder(ops), std::move(queries), entries.size());

  std::vector<OpMemoryRow> rows;
  rows.reserve(entries.size());
  for (std::size_t k = 0; k < entries.size(); ++k) {
    const Entry& entry = entries[k];
    const trace::AllocatorEvent& alloc = events[entry.alloc];
    OpMemoryRow row;
    row.name_id = owner[k] == kNone ? kInvalidId : ops[owner[k]].name_id;
    row.size = alloc.bytes;
    row.allocation_time = alloc.time_ns;
    row.allocation_total_allocated = alloc.total_allocated;
    row.allocation_total_reserved = alloc.total_reserved;
    row.allocation_total_active = alloc.total_active;
    row.stream_ptr = alloc.stream_ptr;
    row.device = alloc.device;
    if (entry.free_event != kNone) {
      const trace::AllocatorEvent& freed = events[entry.free_event];
      row.release_time = freed.time_ns;
      row.duration = freed.time_ns - alloc.time_ns;
    }
    if (entry.block_free_event != kNone) {
      const trace::AllocatorEvent& block_freed = events[entry.block_free_event];
      row.active_release_time = block_freed.time_ns;
      row.active_duration = block_freed.time_ns - alloc.time_ns;
    }
    // Release totals from the FREE, else from the BLOCK_FREE (torch_npu: the FREE of three records,
    // the second record of two).
    const std::size_t release = entry.free_event != kNone ? entry.free_event : entry.block_free_event;
    if (release != kNone) {
      row.release_total_allocated = events[release].total_allocated;
      row.release_total_reserved = events[release].total_reserved;
      row.release_total_active = events[release].total_active;
    }
    rows.push_back(row);
  }
  return rows;
}

std::optional<CollectiveName> ParseCollectiveName(std::string_view op_name) {
  constexpr std::string_view kBackends[] = {"gloo", "nccl", "mpi", "ucc"};
  const std::size_t colon = op_name.find(':');
  if (colon == std::string_view::npos || colon + 1 >= op_name.size() || op_name[colon + 1] == ':')
    return std::nullopt;
  const std::string_view backend = op_name.substr(0, colon);
  if (std::find(std::begin(kBackends), std::end(kBackends), backend) == std::end(kBackends))
    return std::nullopt;
  std::string_view collective = op_name.substr(colon + 1);
  while (!collective.empty() && collective.front() == '_') collective.remove_prefix(1);  // "_allgather_base"
  CollectiveName name;
  name.backend = std::string(backend);
  for (char c : collective) {
    if (c == '_') continue;
    if (!std::isalnum(static_cast<unsigned char>(c))) return std::nullopt;
    name.op_type.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  if (name.op_type.empty()) return std::nullopt;
  return name;
}

std::vector<CollectiveSpan> CollectivesInIdOrder(const std::vector<CollectiveSpan>& collectives) {
  std::vector<CollectiveSpan> order(collectives.begin(), collectives.end());
  std::stable_sort(order.begin(), order.end(),
                   [](const CollectiveSpan& a, const CollectiveSpan& b) { return a.start_ns < b.start_ns; });
  return order;
}

std::string HcclOpType(std::string_view op_type) {
  static constexpr std::pair<std::string_view, std::string_view> kNames[] = {
      {"allreduce", "allReduce"},
      {"allgather", "allGather"},
      {"allgatherbase", "allGather"},
      {"allgatherintotensor", "allGather"},
      {"allgathercoalesced", "allGather"},
      {"reducescatter", "reduceScatter"},
      {"reducescatterbase", "reduceScatter"},
      {"reducescattertensor", "reduceScatter"},
      {"broadcast", "broadcast"},
      {"reduce", "reduce"},
      {"barrier", "barrier"},
      {"allreducebarrier", "barrier"},  // NCCL's barrier, an all-reduce profiled as "nccl:all_reduce_barrier"
      {"send", "send"},
      {"recv", "receive"},
      {"recvanysource", "receive"},
      {"alltoall", "alltoall"},
      {"alltoallbase", "alltoallv"},
      {"gather", "gather"},
      {"scatter", "scatter"},
  };
  for (const auto& [from, to] : kNames) {
    if (op_type == from) return std::string(to);
  }
  return std::string(op_type);
}

std::uint64_t GroupNameHash(std::string_view group_name) {
  std::uint32_t low = 0;   // prime 131
  std::uint32_t high = 0;  // prime 29
  for (char c : group_name) {
    // Python's ord() of a character; names are ASCII (a UTF-8 byte counts as itself).
    const auto code = static_cast<std::uint32_t>(static_cast<unsigned char>(c));
    high = high * 29u + code;
    low = low * 131u + code;
  }
  return (static_cast<std::uint64_t>(high) << 32) | low;
}

std::string HcclGroupTag(std::string_view group_name) {
  std::string tag = std::to_string(GroupNameHash(group_name) % 1000);
  return std::string(3 - tag.size(), '0') + tag;
}

std::optional<std::uint64_t> FirstInputElements(std::string_view input_shapes) {
  const std::size_t end = input_shapes.find(';');
  const std::string_view first = input_shapes.substr(0, end);
  if (first.empty()) return std::nullopt;
  std::uint64_t elements = 1;
  std::size_t begin = 0;
  while (begin <= first.size()) {
    const std::size_t comma = first.find(',', begin);
    const std::string_view dim =
        first.substr(begin, comma == std::string_view::npos ? std::string_view::npos : comma - begin);
    std::uint64_t value = 0;
    const auto [ptr, ec] = std::from_chars(dim.data(), dim.data() + dim.size(), value);
    if (ec != std::errc() || ptr != dim.data() + dim.size()) return std::nullopt;
    elements *= value;
    if (comma == std::string_view::npos) break;
    begin = comma + 1;
  }
  return elements;
}

std::uint32_t HcclDataTypeOf(std::string_view input_dtypes) {
  constexpr std::uint32_t kNotApplicable = 65534;
  const std::string_view first = input_dtypes.substr(0, input_dtypes.find(';'));
  // torch's TypeMeta names (c10::scalarTypeToTypeMeta(t).name()).
  constexpr std::pair<std::string_view, std::uint32_t> kTypes[] = {
      {"signed char", 0}, {"short int", 1},      {"int", 2},  {"c10::Half", 3},
      {"float", 4},       {"long int", 5},       {"long", 5}, {"unsigned char", 7},
      {"double", 10},     {"c10::BFloat16", 11}, {"bool", 7}};
  for (const auto& [name, id] : kTypes) {
    if (first == name) return id;
  }
  return kNotApplicable;
}

bool IsCommunicationLauncherName(std::string_view op_name) {
  return op_name == "record_param_comms" || op_name.substr(0, 6) == "c10d::";
}

std::vector<std::pair<std::size_t, std::uint64_t>> CollectiveLaunches(
    const std::vector<CollectiveSpan>& collectives, const std::vector<OpSpan>& ops,
    const Connections& connections) {
  std::vector<std::pair<std::size_t, std::uint64_t>> out;
  if (collectives.empty()) return out;
  // The communication ops with device links, each with its range of connection rows.
  struct Linked {
    std::uint32_t tid;
    std::int64_t start_ns;
    std::int64_t end_ns;
    std::size_t first_row;
    std::size_t end_row;
  };
  std::vector<Linked> linked;
  const std::vector<ConnectionRow>& rows = connections.rows;
  std::size_t row = 0;
  for (const auto& [api_row, index] : connections.api_index) {
    while (row < rows.size() && rows[row].id < index) ++row;
    const std::size_t first = row;
    while (row < rows.size() && rows[row].id == index) ++row;
    if (api_row == 0 || api_row > ops.size()) continue;
    const OpSpan& op = ops[api_row - 1];
    if (!op.communication) continue;
    bool device = false;
    for (std::size_t r = first; r < row && !device; ++r)
      device = rows[r].connection_id < kFrameworkConnectionBase;
    if (device) linked.push_back({op.tid, op.start_ns, op.end_ns, first, row});
  }
  std::sort(linked.begin(), linked.end(), [](const Linked& a, const Linked& b) {
    return std::tie(a.tid, a.start_ns) < std::tie(b.tid, b.start_ns);
  });
  auto emit = [&](std::size_t collective, const Linked& op) {
    for (std::size_t r = op.first_row; r < op.end_row; ++r) {
      if (rows[r].connection_id < kFrameworkConnectionBase)
        out.emplace_back(collective, rows[r].connection_id);
    }
  };
  constexpr int kMaxEnclosingScan = 64;  // nesting depth looked through on one thread
  for (std::size_t i = 0; i < collectives.size(); ++i) {
    const CollectiveSpan& c = collectives[i];
    // First op on the thread starting after the collective's start.
    auto after = std::upper_bound(linked.begin(), linked.end(), std::pair{c.tid, c.start_ns},
                                  [](const std::pair<std::uint32_t, std::int64_t>& key, const Linked& op) {
                                    return std::tie(key.first, key.second) < std::tie(op.tid, op.start_ns);
                                  });
    bool found = false;
    auto it = after;
    for (int scanned = 0; it != linked.begin() && scanned < kMaxEnclosingScan; ++scanned) {
      --it;
      if (it->tid != c.tid) break;
      if (it->end_ns >= c.start_ns) {  // the innermost enclosing one (latest start)
        emit(i, *it);
        found = true;
        break;
      }
    }
    for (it = after; !found && it != linked.end() && it->tid == c.tid && it->start_ns <= c.end_ns; ++it)
      emit(i, *it);
  }
  return out;
}

}  // namespace gpuprof::db
