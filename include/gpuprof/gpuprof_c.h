/* gpuprof's C control API, exported by libgpuprof.so.
 *
 * One profiling session per process writes one profile DB (ascend_pytorch_profiler[_<rank>].db,
 * docs/architecture.md, "Output layout"). `gpuprof run` starts it through the injection library
 * before the program's first CUDA call; a program (or the PyTorch extension) may also start it
 * itself:
 *
 *   if (gpuprof_start("{\"output_dir\": \"/tmp/prof\"}") != GPUPROF_OK)
 *     fprintf(stderr, "%s\n", gpuprof_last_error());
 *   gpuprof_mark("warm-up done");
 *   uint64_t range = 0;
 *   gpuprof_range_start("step 1", &range);
 *   ...
 *   gpuprof_range_end(range);
 *   gpuprof_stop();  // or leave it to the exit handler
 *
 * Sessions. gpuprof_start joins the session already running in this process (counted: each
 * successful gpuprof_start is released by one gpuprof_stop) and starts one otherwise. The last
 * gpuprof_stop stops it: device activity is flushed, every record is written, the DB is finalized
 * (renamed from its ".partial" name) and, when GPUPROF_RESULT_FILE is set, the line
 * "db <absolute path>" is appended to that file. A session still running at exit() is stopped by
 * an exit handler the library registers; a process killed by a signal leaves only the ".partial"
 * file. After a session stopped, gpuprof_start begins a new one (a new DB).
 *
 * Several copies of the library in one process (the injected one and one a Python extension
 * loaded from another path) share one session: a copy that finds another copy's running session
 * (gpuprof_active_session_v1) attaches to it and forwards every call.
 *
 * fork(): a child process never writes into its parent's DB. It does not profile (calls return
 * GPUPROF_ERROR_FORK_CHILD) unless the session runs with follow_children
 * (GPUPROF_FOLLOW_CHILDREN=1), in which case the child starts its own session and DB under its
 * own pid as fork() returns. A child that leaves through _exit() does not finalize its DB.
 *
 * Configuration: the environment variables and JSON keys listed in src/session/config.h
 * (GPUPROF_OUTPUT_DIR, GPUPROF_WORKER_NAME, GPUPROF_RANK, GPUPROF_FOLLOW_CHILDREN,
 * GPUPROF_RESULT_FILE, GPUPROF_LOG_LEVEL, GPUPROF_CONFIG, ...). A JSON object given to
 * gpuprof_start overrides the environment key by key; all its members are stored in the DB.
 *
 * Errors. Every function returns GPUPROF_OK (0) or one of the positive codes below, never throws
 * and never exits. After a failure, gpuprof_last_error() gives one line naming the call, its
 * arguments and the reason. Nothing here fails the application: a profiler that cannot record
 * says so and the program runs on.
 *
 * Thread-safety: every function may be called from any thread at any time, concurrently.
 * gpuprof_mark and the range calls take a short lock and append to a per-thread buffer;
 * gpuprof_start, gpuprof_stop and gpuprof_flush may block for file I/O (seconds, for a large DB at
 * stop).
 */
#ifndef GPUPROF_GPUPROF_C_H_
#define GPUPROF_GPUPROF_C_H_

#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#define GPUPROF_API __attribute__((visibility("default")))
#else
#define GPUPROF_API
#endif

#ifdef __cplusplus
#define GPUPROF_NOEXCEPT noexcept
extern "C" {
#else
#define GPUPROF_NOEXCEPT
#endif

/* Status codes. Values are stable: new codes are only ever appended. */
typedef enum gpuprof_status {
  GPUPROF_OK = 0,
  /* A NULL or empty message, a message over GPUPROF_MAX_MESSAGE_BYTES, a NULL out-pointer, a
   * range id of 0. */
  GPUPROF_ERROR_INVALID_ARGUMENT = 1,
  /* The configuration (the JSON given to gpuprof_start, GPUPROF_CONFIG or a GPUPROF_* variable)
   * was rejected; the message names the key or variable and what it accepts. */
  GPUPROF_ERROR_INVALID_CONFIG = 2,
  /* No session runs in this process: never started, already stopped, or stopped at exit. */
  GPUPROF_ERROR_NOT_STARTED = 3,
  /* gpuprof_range_end with an id that is not open (ended already, or from an earlier session). */
  GPUPROF_ERROR_RANGE_NOT_FOUND = 4,
  /* The profile could not be created, written or finalized (directory not writable, disk full,
   * result file not writable). The message names the file. */
  GPUPROF_ERROR_OUTPUT = 5,
  /* The record was not kept: the session's buffer cap was reached (records are counted and the
   * DB says how many were lost) or the session is stopping. */
  GPUPROF_ERROR_RECORD_DROPPED = 6,
  /* This process is a fork() child of a profiled process and does not profile (the session does
   * not follow children). gpuprof_start starts a session of its own. */
  GPUPROF_ERROR_FORK_CHILD = 7,
  /* An unexpected internal failure (out of memory, a thread that could not start). */
  GPUPROF_ERROR_INTERNAL = 8,
  /* What the call needs is not in this build or process: hardware counters without the CUDA build
   * of libgpuprof.so, CUPTI or a device; the message names what is missing. */
  GPUPROF_ERROR_UNAVAILABLE = 9
} gpuprof_status;

/* Longest message gpuprof_mark and gpuprof_range_start accept, in bytes. */
#define GPUPROF_MAX_MESSAGE_BYTES 65536

/* Starts the process's session, or joins the one already running. `config_json_or_null` is NULL
 * (configuration from the environment only) or a JSON object whose keys override it. Joining a
 * running session applies no configuration (a non-NULL one is still validated, and ignored with
 * one warning line). Returns GPUPROF_OK, GPUPROF_ERROR_INVALID_CONFIG, GPUPROF_ERROR_OUTPUT or
 * GPUPROF_ERROR_INTERNAL. A failed start logs nothing: the caller reports gpuprof_last_error() (the
 * Python package warns once); under `gpuprof run` the failure is also named in run's last line. */
GPUPROF_API int gpuprof_start(const char* config_json_or_null) GPUPROF_NOEXCEPT;

/* gpuprof_start(NULL), marked as started by the injection library (CUDA_INJECTION64_PATH): what
 * InitializeInjection calls at cuInit. Its caller has nothing to add, so a failed start logs one
 * warning line ("profiling is off for pid N: why") itself. */
GPUPROF_API int gpuprof_start_from_environment(void) GPUPROF_NOEXCEPT;

/* Releases one gpuprof_start; the last one stops the session and finalizes its DB (see above).
 * Returns GPUPROF_OK, GPUPROF_ERROR_NOT_STARTED, GPUPROF_ERROR_FORK_CHILD or GPUPROF_ERROR_OUTPUT
 * (the session stopped but its DB could not be finalized or the result line not written). */
GPUPROF_API int gpuprof_stop(void) GPUPROF_NOEXCEPT;

/* Hands every record collected so far (device activity included) to the DB writer. The DB file
 * is complete only after the session stops. Returns GPUPROF_OK, GPUPROF_ERROR_NOT_STARTED or
 * GPUPROF_ERROR_FORK_CHILD. */
GPUPROF_API int gpuprof_flush(void) GPUPROF_NOEXCEPT;

/* A window DB (the Python package's gpuprof.profile inside `gpuprof run`, whose results are wanted
 * before the session's DB is written at exit). gpuprof_window_begin_v1(out_dir) flushes and starts
 * copying every record the session collects into a second DB under `out_dir` (its own
 * <worker>_<ts>_ascend_pt folder); gpuprof_window_end_v1 flushes and stops the copying. The ended
 * window is finalized only when gpuprof_window_db_v1 asks (the first call; later ones give the
 * same DB), which copies its path, NUL-terminated, into `path` (path_size bytes); one nobody asks
 * for is deleted unfinalized by the next begin or the session's stop. The session's own DB is
 * unchanged, and nothing is copied outside a window. One window at a time. Returns GPUPROF_OK,
 * GPUPROF_ERROR_INVALID_ARGUMENT (NULL or empty out_dir, NULL path, a path_size too small),
 * GPUPROF_ERROR_NOT_STARTED (no session; a window already open at begin, none open at end, none
 * ended at db), GPUPROF_ERROR_OUTPUT (the window DB could not be created or finalized) or
 * GPUPROF_ERROR_FORK_CHILD. */
GPUPROF_API int gpuprof_window_begin_v1(const char* out_dir) GPUPROF_NOEXCEPT;
GPUPROF_API int gpuprof_window_end_v1(void) GPUPROF_NOEXCEPT;
GPUPROF_API int gpuprof_window_db_v1(char* path, size_t path_size) GPUPROF_NOEXCEPT;

/* Registers `hook`, called when a signal that would end the process without its exit handlers
 * (SIGTERM, SIGHUP, SIGQUIT; SIGINT where the program does not handle it) makes gpuprof finalize
 * the profile: on the thread that finalizes, before the session stops, so that a producer holding
 * records in a buffer of its own (the PyTorch hooks) hands them over first. Other threads may still
 * be running. Hooks stay registered for the life of the process; registering one twice keeps one.
 * Returns GPUPROF_OK, or GPUPROF_ERROR_INVALID_ARGUMENT for NULL or past 8 hooks. */
GPUPROF_API int gpuprof_add_signal_stop_hook_v1(void (*hook)(void)) GPUPROF_NOEXCEPT;

/* Records an instant marker (MSTX_EVENTS, domain "default") on the calling thread. `message` is
 * UTF-8 text of 1 to GPUPROF_MAX_MESSAGE_BYTES bytes, copied. */
GPUPROF_API int gpuprof_mark(const char* message) GPUPROF_NOEXCEPT;

/* Opens a range (MSTX_EVENTS start/end) and stores its id (never 0) in *range_id. The range may
 * be ended on any thread. Ranges still open when the session stops end at the stop time. */
GPUPROF_API int gpuprof_range_start(const char* message, uint64_t* range_id) GPUPROF_NOEXCEPT;

/* Ends the range `range_id` opened by gpuprof_range_start. */
GPUPROF_API int gpuprof_range_end(uint64_t range_id) GPUPROF_NOEXCEPT;

/* gpuprof_mstx_v1.flags */
/* The range is device-linked: its device time is that of the device work (kernels, copies,
 * memsets) the calling thread launches until it ends; the profile gives it a task on the device
 * (docs/db_gpuprof_tables.md, MSTX_EVENTS.connectionId). */
#define GPUPROF_MSTX_DEVICE 1u
/* Device-linked to `stream` only (implies GPUPROF_MSTX_DEVICE). */
#define GPUPROF_MSTX_STREAM 2u

/* A marker or range with a domain (torch_npu's mstx API: mark / range_start(message, stream) /
 * range_start(message, domain=...)). */
typedef struct gpuprof_mstx_v1 {
  uint32_t size;       /* sizeof(gpuprof_mstx_v1) */
  uint32_t flags;      /* GPUPROF_MSTX_*; 0 for a marker */
  const char* message; /* as gpuprof_mark's */
  const char* domain;  /* NULL or "": "default"; else up to GPUPROF_MAX_MESSAGE_BYTES bytes */
  uint64_t stream;     /* a cudaStream_t (0: the legacy default stream), with GPUPROF_MSTX_STREAM */
} gpuprof_mstx_v1;

/* gpuprof_mark and gpuprof_range_start with a domain and, for a range, a device link. A marker
 * takes no flag. Returns as they do, or GPUPROF_ERROR_INVALID_ARGUMENT naming the field. */
GPUPROF_API int gpuprof_mark_v1(const gpuprof_mstx_v1* mark) GPUPROF_NOEXCEPT;
GPUPROF_API int gpuprof_range_start_v1(const gpuprof_mstx_v1* range, uint64_t* range_id) GPUPROF_NOEXCEPT;

/* Framework records (the PyTorch extension's, DB_SPEC.md section 3): one call per finished op,
 * allocator event or garbage-collection pause, from any thread. Each struct starts with its
 * `size` (set it to sizeof the struct the caller was built with; fields are only ever appended).
 * Strings are copied before the call returns. Times are Unix-epoch nanoseconds; `tid` is the OS
 * thread id; the pid is this process's. Returns GPUPROF_OK, GPUPROF_ERROR_INVALID_ARGUMENT (the
 * message names the field), GPUPROF_ERROR_NOT_STARTED, GPUPROF_ERROR_RECORD_DROPPED or
 * GPUPROF_ERROR_FORK_CHILD. */

/* PYTORCH_API.type values. */
#define GPUPROF_TORCH_OP 50001u
#define GPUPROF_TORCH_QUEUE 50002u
#define GPUPROF_TORCH_PYTHON_TRACE 50003u
#define GPUPROF_TORCH_MSTX 50004u

typedef struct gpuprof_torch_op_v1 {
  uint32_t size;
  uint32_t tid; /* the thread the op started on */
  int64_t start_ns;
  int64_t end_ns;                /* >= start_ns */
  const char* name;              /* non-empty, e.g. "aten::addmm" or "ProfilerStep#3" */
  int64_t sequence_number;       /* autograd sequence number, -1: none */
  uint64_t fwd_thread_id;        /* 0: a forward op; else the forward thread of a backward op */
  const char* input_dtypes;      /* DB_SPEC 3.3's string format, or NULL */
  const char* input_shapes;      /* DB_SPEC 3.3's string format, or NULL */
  const char* const* call_stack; /* frames, innermost first ("file(line): function"), or NULL */
  uint32_t call_stack_depth;
  uint32_t type;                   /* GPUPROF_TORCH_OP, ... */
  const uint64_t* correlation_ids; /* device launches made inside the op (CUPTI external
                                      correlation), or NULL */
  uint32_t correlation_count;
  uint64_t external_id; /* the id the op pushed through gpuprof_get_device_correlation_v1, or 0 */
} gpuprof_torch_op_v1;

/* gpuprof_allocator_event_v1.action */
#define GPUPROF_ALLOC_MALLOC 0u
#define GPUPROF_ALLOC_FREE 1u
#define GPUPROF_ALLOC_BLOCK_FREE 2u

typedef struct gpuprof_allocator_event_v1 {
  uint32_t size;
  uint32_t tid;
  int64_t time_ns;
  int32_t device;  /* -1: the CPU allocator */
  uint32_t action; /* GPUPROF_ALLOC_* */
  uint64_t ptr;
  uint64_t bytes;
  uint64_t total_allocated; /* the allocator's totals after the event */
  uint64_t total_reserved;
  int64_t total_active; /* -1: the allocator reports none */
  uint64_t stream_ptr;
  const char* component; /* NULL: "PTA" */
} gpuprof_allocator_event_v1;

typedef struct gpuprof_gc_event_v1 {
  uint32_t size;
  int64_t start_ns;
  int64_t end_ns; /* >= start_ns */
} gpuprof_gc_event_v1;

/* A finished range in MSTX_EVENTS (eventType start/end) of a named domain, e.g. an nn.Module
 * forward in domain "Module" (gpuprof.profile(with_modules=True)). */
typedef struct gpuprof_range_v1 {
  uint32_t size;
  uint32_t tid;        /* OS thread id; 0: the calling thread */
  int64_t start_ns;    /* Unix-epoch ns */
  int64_t end_ns;      /* >= start_ns */
  const char* domain;  /* non-empty, NUL-terminated */
  const char* message; /* non-empty, NUL-terminated */
} gpuprof_range_v1;

/* Tagging device work with framework ops (CUPTI external correlation on NVIDIA GPUs): push(id)
 * when an op starts and pop() when it ends, on the op's thread; the kernels and copies that
 * thread launches in between are linked to the op whose gpuprof_torch_op_v1.external_id is `id`
 * (CONNECTION_IDS). Both return 0 on success. The functions stay valid for the life of the
 * process. */
typedef struct gpuprof_device_correlation_v1 {
  int (*push)(uint64_t id);
  int (*pop)(void);
} gpuprof_device_correlation_v1;

/* Fills *out while the running session collects device activity. Returns GPUPROF_OK,
 * GPUPROF_ERROR_INVALID_ARGUMENT (out is NULL), GPUPROF_ERROR_NOT_STARTED (no session, no device
 * collection, or the session is an older copy's that cannot tag: ops are then linked to kernels
 * by time) or GPUPROF_ERROR_FORK_CHILD. */
GPUPROF_API int gpuprof_get_device_correlation_v1(gpuprof_device_correlation_v1* out) GPUPROF_NOEXCEPT;

/* Kernel replay chosen by the program itself (gpuprof.profile(kernel_replay=...)), in a process
 * started with `gpuprof replay --from-script -- COMMAND`: from the call on, launches the selector
 * picks are replayed `passes` times with device memory restored between passes, and each becomes
 * a GPUPROF_REPLAY_KERNEL row; passes == 1 pauses replay. The selector's skip and count start
 * again at every call. */
typedef struct gpuprof_replay_config_v1 {
  uint32_t size;         /* sizeof(gpuprof_replay_config_v1) */
  uint32_t passes;       /* 1 (pause), else the replay_passes setting's range (2 .. 1000) */
  const char* kernel;    /* exact function name, "regex:PATTERN", or NULL / "" for every kernel */
  uint64_t skip;         /* matching launches let through before the first replayed one */
  uint64_t count;        /* launches replayed at most; 0: no limit */
  uint32_t flush_l2;     /* 1: L2 flushed before each pass; 0: not */
  uint32_t restore_full; /* 0: the chunks a pass changed, by hash (auto); 1: everything (full);
                          2: the chunks differing byte for byte (exact) */
  uint32_t strict;       /* 1: decline while kernel-writable untracked memory is live */
  uint32_t reserved;     /* 0; the padding of the first version of this struct (48 bytes) */
  /* Appended (rule C2); a caller whose size stops short of one gets its setting's default
   * (replay_printf_kernels 1, replay_malloc_kernels 0, replay_with_live_arrays 0). */
  uint32_t printf_kernels;   /* 1: replay kernels that use device printf; 0: decline them */
  uint32_t malloc_kernels;   /* 1: replay kernels that use device malloc/free; 0: decline them */
  uint32_t with_live_arrays; /* 1: replay while CUDA arrays exist; 0: decline every launch then */
  /* Appended (issue 19: hardware counters); a caller whose size stops short of them collects no
   * counters. Each may be NULL or "" for none; the names are Nsight Compute's (docs/metrics.md). */
  uint32_t reserved2;  /* 0; the padding before the pointers */
  const char* metrics; /* comma list of metric names (replay_metrics) */
  const char* section; /* comma list of section names (replay_section) */
  const char* set;     /* "none", "basic" or "full" (replay_set) */
  /* Appended (issue 19, rule C3); a caller whose size stops short of it gets "none". */
  const char* clock_control; /* "none" (clocks as they are) or "base" (replay_clock_control) */
} gpuprof_replay_config_v1;

/* Returns GPUPROF_OK, GPUPROF_ERROR_INVALID_ARGUMENT (the message names the setting),
 * GPUPROF_ERROR_NOT_STARTED (no session, no device collection, or the process was not started
 * with `gpuprof replay --from-script`: the message says how to start it), GPUPROF_ERROR_FORK_CHILD
 * or GPUPROF_ERROR_INTERNAL. Each field is the setting it stands for (passes replay_passes, flush_l2
 * replay_cache_control, restore_full replay_restore, ...) and goes the way of
 * gpuprof_configure_replay_settings_v1; a setting the struct has no field for (replay_graph,
 * replay_counter_range, replay_storage) keeps the process's value. */
GPUPROF_API int gpuprof_configure_replay_v1(const gpuprof_replay_config_v1* config) GPUPROF_NOEXCEPT;

/* Kernel replay chosen by the program, by setting name: `count` settings, keys[i] a replay
 * setting's JSON key (gpuprof_settings_json_v1: "replay_passes", "replay_graph",
 * "replay_counter_range", ...) and values[i] its value as text in any form the setting accepts
 * ("graph", "3", "on"), each parsed and checked by the settings table as `gpuprof replay`'s options
 * and the GPUPROF_REPLAY_* variables are. They apply on top of the replay settings the process
 * started with (`gpuprof replay --from-script`'s options, else the declared defaults) to the
 * launches from the call on; the selector's skip and count start again at every call.
 * "replay_passes" "1" pauses replay. Settings fixed when the process starts (replay,
 * replay_from_script, replay_device_reserve_mib) and settings other than replay's are refused.
 * Returns GPUPROF_OK, GPUPROF_ERROR_INVALID_ARGUMENT (keys or values NULL while count is not 0, an
 * unknown key with the closest one, a key given twice, a value the setting refuses: the message is
 * the settings table's), GPUPROF_ERROR_NOT_STARTED (as gpuprof_configure_replay_v1, or a counter
 * range asked after the first counter pass used another), GPUPROF_ERROR_FORK_CHILD or
 * GPUPROF_ERROR_INTERNAL. */
GPUPROF_API int gpuprof_configure_replay_settings_v1(const char* const* keys, const char* const* values,
                                                     size_t count) GPUPROF_NOEXCEPT;

/* Range replay by training step (`gpuprof replay --replay-mode range --range step`,
 * gpuprof.KernelReplay(replay_mode="range", range="step")): one optimizer step ended on the calling
 * thread's current CUDA device, so the range of the step before ends there (and is replayed) and the
 * next step's range begins. The Python package calls it at every optimizer step (and at every
 * gpuprof.profile step()) while replay is on; in any other replay mode, or with replay off, it
 * returns at once and does nothing. Returns GPUPROF_OK, GPUPROF_ERROR_NOT_STARTED (no session),
 * GPUPROF_ERROR_FORK_CHILD or GPUPROF_ERROR_INTERNAL (an older copy owns the session). */
GPUPROF_API int gpuprof_replay_step_boundary_v1(void) GPUPROF_NOEXCEPT;

GPUPROF_API int gpuprof_record_torch_op_v1(const gpuprof_torch_op_v1* op) GPUPROF_NOEXCEPT;
GPUPROF_API int gpuprof_record_allocator_event_v1(const gpuprof_allocator_event_v1* event) GPUPROF_NOEXCEPT;
GPUPROF_API int gpuprof_record_gc_event_v1(const gpuprof_gc_event_v1* event) GPUPROF_NOEXCEPT;
GPUPROF_API int gpuprof_record_range_v1(const gpuprof_range_v1* range) GPUPROF_NOEXCEPT;

/* Names the OS thread `tid` of this process as the program names it (Python's threading name,
 * "MainThread", "Thread-1 (worker)"), for the thread names of `gpuprof export`'s trace: stored in
 * META_DATA gpuprof_thread_names (docs/db_gpuprof_tables.md). A later name of the same tid
 * replaces the earlier. `name` is UTF-8 text of 1 to GPUPROF_MAX_THREAD_NAME_BYTES bytes, copied.
 * Returns GPUPROF_OK, GPUPROF_ERROR_INVALID_ARGUMENT (tid 0 or above 2^32-1, a bad name),
 * GPUPROF_ERROR_NOT_STARTED, GPUPROF_ERROR_RECORD_DROPPED or GPUPROF_ERROR_FORK_CHILD. */
#define GPUPROF_MAX_THREAD_NAME_BYTES 1024
GPUPROF_API int gpuprof_name_thread_v1(uint64_t tid, const char* name) GPUPROF_NOEXCEPT;

/* The error line of the calling thread's last failed gpuprof call, or "" when its last call
 * succeeded. Valid until the thread's next gpuprof call; never NULL. */
GPUPROF_API const char* gpuprof_last_error(void) GPUPROF_NOEXCEPT;

/* The name of a status code ("GPUPROF_ERROR_NOT_STARTED"); "GPUPROF_UNKNOWN_STATUS" otherwise. */
GPUPROF_API const char* gpuprof_status_string(int status) GPUPROF_NOEXCEPT;

/* ---- The settings declaration (base/settings.h), for the Python package ----
 *
 * gpuprof_settings_json_v1() returns every declared setting as a JSON array of objects (json_key,
 * env, launcher_env, type, min, max, choices, default, cli, help); static storage, never NULL.
 * gpuprof_check_setting_v1(key, text, out, out_size) checks `text` against the setting with JSON
 * key `key` and returns GPUPROF_OK with the canonical text copied into `out` (NUL-terminated, at
 * most out_size bytes; a longer one is GPUPROF_ERROR_INVALID_ARGUMENT too), or
 * GPUPROF_ERROR_INVALID_ARGUMENT with gpuprof_last_error() naming the key, the text and what is
 * accepted. Neither needs a running session. */
GPUPROF_API const char* gpuprof_settings_json_v1(void) GPUPROF_NOEXCEPT;
GPUPROF_API int gpuprof_check_setting_v1(const char* key, const char* text, char* out,
                                         size_t out_size) GPUPROF_NOEXCEPT;

/* ---- Hardware counters (issue 19), for `gpuprof replay --query-metrics` ----
 *
 * gpuprof_query_metrics_v1(device, chip, out, out_size, out_required) lists the metrics the
 * counter backend (CUPTI's Profiler Host API) offers for CUDA device `device`, or, when `chip` is
 * neither NULL nor empty, for that chip ("GH100") without a device, as a JSON array of objects
 * {"name", "unit", "description"}; gpuprof's launch__* metrics (replay/metric_catalog.h) are not
 * in it. The text, NUL-terminated, is copied into `out` when it fits in out_size bytes;
 * *out_required (when not NULL) is set to the bytes it needs, NUL included, on success and when
 * `out` is too small (GPUPROF_ERROR_INVALID_ARGUMENT: call again with a buffer that size).
 * GPUPROF_ERROR_UNAVAILABLE when this library was built without CUDA or CUPTI cannot answer,
 * with gpuprof_last_error() saying why. Needs no running session. */
GPUPROF_API int gpuprof_query_metrics_v1(int device, const char* chip, char* out, size_t out_size,
                                         size_t* out_required) GPUPROF_NOEXCEPT;

/* ---- Between copies of libgpuprof.so in one process (not for applications) ----
 *
 * gpuprof_active_session_v1() returns this copy's table while this copy owns a running session,
 * NULL otherwise. Another copy finds it with dlsym (RTLD_DEFAULT, then every loaded object) and
 * forwards its calls through it. The table and its functions stay valid for the life of the
 * process (the library is never unloaded); the functions behave as the same-named API calls of
 * the owning copy. Fields are only ever appended: check `size` before reading a later one. */
typedef struct gpuprof_session_v1 {
  uint32_t size;        /* sizeof(gpuprof_session_v1) in the owning copy */
  uint32_t pid;         /* the process the table was made in */
  int (*acquire)(void); /* gpuprof_start on a running session: counts one more start */
  int (*release)(void); /* gpuprof_stop */
  int (*flush)(void);
  int (*mark)(const char* message);
  int (*range_start)(const char* message, uint64_t* range_id);
  int (*range_end)(uint64_t range_id);
  const char* (*last_error)(void);
  /* Appended after the first release: check `size` before calling. */
  int (*record_torch_op)(const gpuprof_torch_op_v1* op);
  int (*record_allocator_event)(const gpuprof_allocator_event_v1* event);
  int (*record_gc_event)(const gpuprof_gc_event_v1* event);
  /* Appended with program-configured replay: check `size` before calling. */
  int (*get_device_correlation)(gpuprof_device_correlation_v1* out);
  int (*configure_replay)(const gpuprof_replay_config_v1* config);
  /* Appended with domain ranges: check `size` before calling. */
  int (*record_range)(const gpuprof_range_v1* range);
  /* Appended with window DBs: check `size` before calling. */
  int (*window_begin)(const char* out_dir);
  int (*window_end)(void);
  int (*window_db)(char* path, size_t path_size);
  /* Appended with thread names: check `size` before calling. */
  int (*name_thread)(uint64_t tid, const char* name);
  /* Appended with replay settings by name: check `size` before calling. */
  int (*configure_replay_settings)(const char* const* keys, const char* const* values, size_t count);
  /* Appended with range replay: check `size` before calling. */
  int (*replay_step_boundary)(void);
  /* Appended with mstx domains and device-linked ranges: check `size` before calling. */
  int (*mark_v1)(const gpuprof_mstx_v1* mark);
  int (*range_start_v1)(const gpuprof_mstx_v1* range, uint64_t* range_id);
} gpuprof_session_v1;

GPUPROF_API const gpuprof_session_v1* gpuprof_active_session_v1(void) GPUPROF_NOEXCEPT;

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* GPUPROF_GPUPROF_C_H_ */
