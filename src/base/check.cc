#include "base/check.h"

#include <cstdio>
#include <cstdlib>
#include <string>

namespace gpuprof::base {

CheckFailure::CheckFailure(const char* condition, const char* file, int line) {
  stream_ << "[gpuprof] FATAL " << file << ":" << line << "] check failed: " << condition << " ";
}

CheckFailure::~CheckFailure() {
  std::string text = stream_.str();
  text += '\n';
  std::fwrite(text.data(), 1, text.size(), stderr);
  std::fflush(stderr);
  std::abort();
}

}  // namespace gpuprof::base
