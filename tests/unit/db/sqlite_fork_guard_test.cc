// SqliteForkGuard (db/sqlite_fork_guard.h): between Acquire and Release, SQLite's global mutexes
// are held, so no other thread (the writer's, at fork time) can be inside them when fork() runs.
#include "db/sqlite_fork_guard.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <thread>

namespace gpuprof::db {
namespace {

// sqlite3_mutex_try on another thread: SQLITE_BUSY while someone holds `mutex`.
int TryFromAnotherThread(sqlite3_mutex* mutex) {
  int result = SQLITE_ERROR;
  std::thread([&] {
    result = sqlite3_mutex_try(mutex);
    if (result == SQLITE_OK) sqlite3_mutex_leave(mutex);
  }).join();
  return result;
}

TEST(SqliteForkGuardTest, AcquireHoldsSqlitesGlobalMutexesUntilRelease) {
  if (sqlite3_threadsafe() == 0) GTEST_SKIP() << "this SQLite is built without mutexes";
  SqliteForkGuard::Init();
  sqlite3_mutex* main_mutex = sqlite3_mutex_alloc(SQLITE_MUTEX_STATIC_MAIN);
  sqlite3_mutex* mem_mutex = sqlite3_mutex_alloc(SQLITE_MUTEX_STATIC_MEM);
  ASSERT_NE(main_mutex, nullptr);
  ASSERT_NE(mem_mutex, nullptr);
  EXPECT_EQ(TryFromAnotherThread(mem_mutex), SQLITE_OK);
  SqliteForkGuard::Acquire();
  EXPECT_EQ(TryFromAnotherThread(main_mutex), SQLITE_BUSY);
  EXPECT_EQ(TryFromAnotherThread(mem_mutex), SQLITE_BUSY);
  SqliteForkGuard::Release();
  EXPECT_EQ(TryFromAnotherThread(main_mutex), SQLITE_OK);
  EXPECT_EQ(TryFromAnotherThread(mem_mutex), SQLITE_OK);
}

}  // namespace
}  // namespace gpuprof::db
