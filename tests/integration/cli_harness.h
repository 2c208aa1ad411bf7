// The one way the integration tests run the built `gpuprof` binary: through /bin/sh with popen,
// stdout captured, the exit status decoded. Header-only (each test is its own binary).
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

namespace gpuprof::testing {

struct CliResult {
  int exit_code = -1;  // -1 when the shell did not exit normally
  std::string out;     // stdout (with stderr when the command merged it)
  std::string err;     // stderr, when the command redirected it to a file the caller named
};

// `text` as one single-quoted shell word.
inline std::string ShellQuote(const std::string& text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out.push_back(c);
    }
  }
  return out + "'";
}

inline std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Runs `command` with /bin/sh; returns its exit code and stdout. When `stderr_path` is not empty,
// the command is expected to redirect its stderr there ("2>PATH"), and that file becomes `err`.
inline CliResult RunShell(const std::string& command, const std::string& stderr_path = "") {
  CliResult result;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) {
    ADD_FAILURE() << "popen failed for: " << command;
    return result;
  }
  std::array<char, 4096> buffer{};
  std::size_t n = 0;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0) result.out.append(buffer.data(), n);
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (!stderr_path.empty()) result.err = ReadWholeFile(stderr_path);
  return result;
}

}  // namespace gpuprof::testing
