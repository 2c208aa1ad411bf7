#include "cli/sanitizer_runtime.h"

#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace gpuprof::cli {
namespace {

// The libraries that are a sanitizer's runtime (gcc's, and clang's with -shared-libsan).
constexpr std::array<std::string_view, 4> kRuntimePrefixes = {"libasan.", "libtsan.", "libclang_rt.asan",
                                                              "libclang_rt.tsan"};
constexpr std::array<std::string_view, 2> kRuntimeSymbols = {"__asan_init", "__tsan_init"};
// A table larger than this is not read (no real executable has one): the check stays cheap.
constexpr std::uint64_t kMaxTableBytes = std::uint64_t{64} << 20;
constexpr int kMaxInterpreterDepth = 2;

bool IsRuntimeLibrary(std::string_view path) {
  const std::string_view file =
      path.substr(path.rfind('/') == std::string_view::npos ? 0 : path.rfind('/') + 1);
  for (std::string_view prefix : kRuntimePrefixes) {
    if (file.substr(0, prefix.size()) == prefix) return true;
  }
  return false;
}

class File {
 public:
  explicit File(const std::string& path) : fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {
    struct stat info {};
    if (fd_ >= 0 && ::fstat(fd_, &info) == 0 && S_ISREG(info.st_mode))
      size_ = static_cast<std::uint64_t>(info.st_size);
  }
  ~File() {
    if (fd_ >= 0) ::close(fd_);
  }
  File(const File&) = delete;
  File& operator=(const File&) = delete;

  std::uint64_t size() const noexcept { return size_; }

  // Reads [offset, offset + bytes) whole, or fails.
  bool Read(std::uint64_t offset, std::uint64_t bytes, void* out) const {
    if (size_ == 0 || offset > size_ || bytes > size_ - offset || bytes > kMaxTableBytes) return false;
    auto* cursor = static_cast<char*>(out);
    while (bytes > 0) {
      const ssize_t n = ::pread(fd_, cursor, bytes, static_cast<off_t>(offset));
      if (n <= 0) return false;
      cursor += n;
      offset += static_cast<std::uint64_t>(n);
      bytes -= static_cast<std::uint64_t>(n);
    }
    return true;
  }
  bool ReadBytes(std::uint64_t offset, std::uint64_t bytes, std::string* out) const {
    if (bytes > kMaxTableBytes) return false;
    out->assign(bytes, '\0');
    return Read(offset, bytes, out->data());
  }

 private:
  int fd_ = -1;
  std::uint64_t size_ = 0;
};

// The NUL-terminated name at `offset` of a string table.
std::string_view NameAt(const std::string& table, std::uint64_t offset) {
  if (offset >= table.size()) return {};
  return std::string_view(table.c_str() + offset);
}

template <typename Ehdr, typename Shdr, typename Dyn, typename Sym>
std::string RuntimeOfElf(const File& file) {
  Ehdr header{};
  if (!file.Read(0, sizeof(header), &header) || header.e_shentsize != sizeof(Shdr) || header.e_shnum == 0) {
    return {};
  }
  std::vector<Shdr> sections(header.e_shnum);
  if (!file.Read(header.e_shoff, sizeof(Shdr) * sections.size(), sections.data())) return {};
  const auto string_table = [&](const Shdr& section, std::string* out) {
    return section.sh_link < sections.size() &&
           file.ReadBytes(sections[section.sh_link].sh_offset, sections[section.sh_link].sh_size, out);
  };
  // A needed library names the runtime better than its symbol: the symbol is kept for the end.
  std::string symbol_found;
  for (const Shdr& section : sections) {
    std::string strings;
    if (section.sh_type == SHT_DYNAMIC && string_table(section, &strings)) {
      std::vector<Dyn> entries(section.sh_size / sizeof(Dyn));
      if (!file.Read(section.sh_offset, sizeof(Dyn) * entries.size(), entries.data())) continue;
      for (const Dyn& entry : entries) {
        if (entry.d_tag == DT_NULL) break;
        if (entry.d_tag != DT_NEEDED) continue;
        const std::string_view needed = NameAt(strings, entry.d_un.d_val);
        if (IsRuntimeLibrary(needed)) return std::string(needed);
      }
    } else if (section.sh_type == SHT_DYNSYM && symbol_found.empty() && string_table(section, &strings)) {
      // The names are in the string table: finding one there first spares reading the symbols.
      bool mentioned = false;
      for (std::string_view symbol : kRuntimeSymbols) {
        mentioned = mentioned || strings.find(std::string(symbol) + '\0') != std::string::npos;
      }
      if (!mentioned) continue;
      std::vector<Sym> symbols(section.sh_size / sizeof(Sym));
      if (!file.Read(section.sh_offset, sizeof(Sym) * symbols.size(), symbols.data())) continue;
      for (const Sym& symbol : symbols) {
        const std::string_view name = NameAt(strings, symbol.st_name);
        for (std::string_view runtime : kRuntimeSymbols) {
          if (name == runtime) symbol_found = std::string(name);
        }
      }
    }
  }
  return symbol_found;
}

// The interpreter a "#!" line names (with `/usr/bin/env NAME`, NAME looked up in PATH); empty
// when the file is not a script.
std::string Interpreter(const File& file, std::string_view path_variable) {
  std::string line;
  if (!file.ReadBytes(0, 2, &line) || line != "#!") return {};
  // The kernel reads at most this much of the line too.
  if (!file.ReadBytes(0, std::min<std::uint64_t>(file.size(), 256), &line)) return {};
  line = line.substr(2, line.find_first_of(std::string_view("\n\0", 2)) - 2);
  std::vector<std::string> words;
  for (std::size_t start = 0; start < line.size();) {
    const std::size_t end = line.find_first_of(" \t", start);
    if (end != start) words.push_back(line.substr(start, end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  if (words.empty()) return {};
  if (words.size() > 1 && words[0].size() >= 4 && words[0].compare(words[0].size() - 4, 4, "/env") == 0) {
    for (std::size_t i = 1; i < words.size(); ++i) {
      if (words[i][0] != '-') return ResolveLikeExecvp(words[i], path_variable);
    }
    return {};
  }
  return words[0];
}

std::string RuntimeOf(const std::string& path, std::string_view path_variable, int depth) {
  const File file(path);
  std::array<unsigned char, EI_NIDENT> ident{};
  if (!file.Read(0, ident.size(), ident.data())) return {};
  if (std::memcmp(ident.data(), ELFMAG, SELFMAG) != 0) {
    if (depth >= kMaxInterpreterDepth) return {};
    const std::string interpreter = Interpreter(file, path_variable);
    return interpreter.empty() ? std::string() : RuntimeOf(interpreter, path_variable, depth + 1);
  }
  constexpr unsigned char kNativeData =
      std::endian::native == std::endian::little ? ELFDATA2LSB : ELFDATA2MSB;
  if (ident[EI_DATA] != kNativeData) return {};
  if (ident[EI_CLASS] == ELFCLASS64) return RuntimeOfElf<Elf64_Ehdr, Elf64_Shdr, Elf64_Dyn, Elf64_Sym>(file);
  if (ident[EI_CLASS] == ELFCLASS32) return RuntimeOfElf<Elf32_Ehdr, Elf32_Shdr, Elf32_Dyn, Elf32_Sym>(file);
  return {};
}

}  // namespace

std::string ResolveLikeExecvp(std::string_view name, std::string_view path_variable) {
  if (name.empty()) return {};
  if (name.find('/') != std::string_view::npos) return std::string(name);
  for (std::size_t start = 0; start <= path_variable.size();) {
    std::size_t end = path_variable.find(':', start);
    if (end == std::string_view::npos) end = path_variable.size();
    const std::string_view dir = path_variable.substr(start, end - start);
    std::string candidate = (dir.empty() ? std::string(".") : std::string(dir)) + "/" + std::string(name);
    struct stat info {};
    if (::stat(candidate.c_str(), &info) == 0 && S_ISREG(info.st_mode) &&
        ::access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
    start = end + 1;
  }
  return {};
}

std::string SanitizerRuntimeOf(const std::string& path, std::string_view path_variable) {
  return RuntimeOf(path, path_variable, 0);
}

std::string SanitizerInPreload(std::string_view ld_preload) {
  for (std::size_t start = 0; start < ld_preload.size();) {
    std::size_t end = ld_preload.find_first_of(": ", start);
    if (end == std::string_view::npos) end = ld_preload.size();
    const std::string_view entry = ld_preload.substr(start, end - start);
    if (!entry.empty() && IsRuntimeLibrary(entry)) return std::string(entry);
    start = end + 1;
  }
  return {};
}

}  // namespace gpuprof::cli
