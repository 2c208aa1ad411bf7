// A GPU's clocks as NVML would change them (replay::ClockApi), and every call made: the clock
// lock's tests and the controller's --clock-control base tests. No real clock is ever touched.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "replay/clock_lock.h"

namespace gpuprof::testing {

using replay::ClockApi;
using replay::ClockCallCode;
using replay::ClockCallResult;

class FakeClockApi : public ClockApi {
 public:
  std::uint32_t base_sm = 1590;
  std::uint32_t base_memory = 3201;
  ClockCallResult base_result;
  ClockCallResult sm_result;
  ClockCallResult memory_result;
  ClockCallResult reset_result;
  // What is locked now (0: free).
  std::uint32_t locked_sm = 0;
  std::uint32_t locked_memory = 0;
  std::vector<std::string> calls;

  ClockCallResult BaseClocks(int device, std::uint32_t* sm_mhz, std::uint32_t* memory_mhz) override {
    calls.push_back("base " + std::to_string(device));
    if (!base_result.ok()) return base_result;
    *sm_mhz = base_sm;
    *memory_mhz = base_memory;
    return {};
  }
  ClockCallResult LockSmClocks(int device, std::uint32_t min_mhz, std::uint32_t max_mhz) override {
    calls.push_back("lock sm " + std::to_string(device) + " " + std::to_string(min_mhz) + "," +
                    std::to_string(max_mhz));
    if (sm_result.ok()) locked_sm = min_mhz;
    return sm_result;
  }
  ClockCallResult LockMemoryClocks(int device, std::uint32_t min_mhz, std::uint32_t max_mhz) override {
    calls.push_back("lock memory " + std::to_string(device) + " " + std::to_string(min_mhz) + "," +
                    std::to_string(max_mhz));
    if (memory_result.ok()) locked_memory = min_mhz;
    return memory_result;
  }
  ClockCallResult ResetSmClocks(int device) override {
    calls.push_back("reset sm " + std::to_string(device));
    if (reset_result.ok()) locked_sm = 0;
    return reset_result;
  }
  ClockCallResult ResetMemoryClocks(int device) override {
    calls.push_back("reset memory " + std::to_string(device));
    if (reset_result.ok()) locked_memory = 0;
    return reset_result;
  }
};

}  // namespace gpuprof::testing
