// Synchronized<T>: a value that can only be reached through a lock.
//
//   Synchronized<Inventory> inv;
//   inv.wlock()->Add(entry);                    // exclusive for the statement
//   { auto r = inv.rlock(); use(r->Find(p)); }  // shared for the scope
//
// rlock() takes the lock shared and yields a const view; wlock() takes it exclusive. The returned
// guard owns the lock until it is destroyed; do not keep pointers into the value past it. The
// mutex is a std::shared_mutex by default; it is not recursive (taking wlock() while holding
// rlock() on the same object deadlocks).
#pragma once

#include <mutex>
#include <shared_mutex>
#include <utility>

namespace gpuprof::base {

template <typename T, typename Mutex = std::shared_mutex>
class Synchronized {
 public:
  template <typename Ptr, typename Lock>
  class Locked {
   public:
    Locked(Ptr value, Mutex& mu) : value_(value), lock_(mu) {}
    Ptr operator->() const noexcept { return value_; }
    auto& operator*() const noexcept { return *value_; }

   private:
    Ptr value_;
    Lock lock_;
  };

  using ReadLocked = Locked<const T*, std::shared_lock<Mutex>>;
  using WriteLocked = Locked<T*, std::unique_lock<Mutex>>;

  Synchronized() = default;
  template <typename... Args>
  explicit Synchronized(std::in_place_t, Args&&... args) : value_(std::forward<Args>(args)...) {}
  Synchronized(const Synchronized&) = delete;
  Synchronized& operator=(const Synchronized&) = delete;

  ReadLocked rlock() const { return ReadLocked(&value_, mu_); }
  WriteLocked wlock() { return WriteLocked(&value_, mu_); }

  // Runs fn(const T&) under the shared lock and returns its result.
  template <typename Fn>
  decltype(auto) WithRLock(Fn&& fn) const {
    std::shared_lock<Mutex> lock(mu_);
    return std::forward<Fn>(fn)(value_);
  }
  // Runs fn(T&) under the exclusive lock and returns its result.
  template <typename Fn>
  decltype(auto) WithWLock(Fn&& fn) {
    std::unique_lock<Mutex> lock(mu_);
    return std::forward<Fn>(fn)(value_);
  }

 private:
  mutable Mutex mu_;
  T value_{};
};

}  // namespace gpuprof::base
