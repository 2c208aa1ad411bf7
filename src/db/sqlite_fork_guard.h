// SqliteForkGuard: SQLite's process-wide mutexes held across fork().
//
// SQLite guards its allocator (with memory statistics on, as Debian builds it: every
// sqlite3_malloc), its VFS inode list and its PRNG with process-wide mutexes. A fork() taken
// while the parent's DB writer thread holds one leaves it held forever in the child, whose first
// SQLite call (a follow-children child creating its own DB) then blocks for good; this was seen
// in about 1 fork in 20 under a busy writer. The fork handlers take these mutexes before fork()
// and release them after it in both processes (the pthread_atfork discipline), so the child
// starts with them free.
//
// It is db's because SQLite stays behind db (no other component names sqlite3.h); the process
// layer (session/process.cc) installs the fork handlers that call it. Its own library
// (gpuprof::db_fork_guard), so the caller takes the guard without the writer.
#pragma once

namespace gpuprof::db {

class SqliteForkGuard {
 public:
  // Resolves the mutexes (initializing SQLite's mutex subsystem). Call once, before the fork
  // handlers can run; not async-signal-safe.
  static void Init() noexcept;
  // From the pthread_atfork prepare handler: takes the mutexes in SQLite's own nesting order.
  static void Acquire() noexcept;
  // From the parent and child handlers: releases what Acquire took.
  static void Release() noexcept;
};

}  // namespace gpuprof::db
