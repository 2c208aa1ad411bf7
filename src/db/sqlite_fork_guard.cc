#include "db/sqlite_fork_guard.h"

#include <sqlite3.h>

#include <array>
#include <cstddef>

namespace gpuprof::db {
namespace {

// Outermost first, as SQLite nests them: MAIN (held around opening and initialization) encloses
// the VFS inode-list mutex, which encloses allocations; PRNG and PMEM are held around leaf work
// that may allocate; MEM (the allocator's statistics) is always innermost.
constexpr std::array<int, 5> kOrder = {SQLITE_MUTEX_STATIC_MAIN, SQLITE_MUTEX_STATIC_VFS1,
                                       SQLITE_MUTEX_STATIC_PRNG, SQLITE_MUTEX_STATIC_PMEM,
                                       SQLITE_MUTEX_STATIC_MEM};

std::array<sqlite3_mutex*, kOrder.size()> g_mutexes{};
std::size_t g_held = 0;  // how many Acquire took; only the forking thread touches it

}  // namespace

void SqliteForkGuard::Init() noexcept {
  for (std::size_t i = 0; i < kOrder.size(); ++i) {
    if (g_mutexes[i] == nullptr) g_mutexes[i] = sqlite3_mutex_alloc(kOrder[i]);
  }
}

void SqliteForkGuard::Acquire() noexcept {
  g_held = 0;
  for (sqlite3_mutex* mutex : g_mutexes) {
    if (mutex == nullptr) break;  // Init did not run or failed: hold a prefix, in order
    sqlite3_mutex_enter(mutex);
    ++g_held;
  }
}

void SqliteForkGuard::Release() noexcept {
  while (g_held > 0) sqlite3_mutex_leave(g_mutexes[--g_held]);
}

}  // namespace gpuprof::db
